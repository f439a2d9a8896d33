# SPDX-License-Identifier: BSD-2-Clause
"""The stream drivers' packing and field reads (sim/streams.py) against Amaranth's own:
``pack(layout, init)`` is ``layout.const(init).as_bits()``, and a field read from the bits is
the field of ``layout.from_bits(bits)``, for the layouts of the project's streams and random
values of every kind a test gives (ints in and out of range, negative ones, bools, nested
mappings and sequences, constants of a nested layout); the TL receiver's credit ports read by
offsets (sim/tl/rx_env.py) as through a view."""

import pytest
from amaranth import hdl
from amaranth.lib import data

from scaleup_ip.dl import checked_beat_layout, phy_beat_layout, unpack_beat_layout
from scaleup_ip.ethx import (
    eth_beat_layout,
    record_word_layout,
    request_item_layout,
    response_item_layout,
)
from scaleup_ip.ethx.link import LinkConfig, settings_layout
from scaleup_ip.model.tl.flit import CLASSES, SLOTS
from scaleup_ip.tl import (
    cache_entry_layout,
    credit_update_layout,
    flit_layout,
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    wr_rsp_layout,
)
from scaleup_ip.tl.tx import req_beat_layout, rsp_beat_layout, schedule_layout
from scaleup_ip.types import byte_beat_layout
from sim import streams
from sim.tl.rx_env import credit_update_table

LAYOUTS = {
    "eth_beat_8": eth_beat_layout(8), "eth_beat_64": eth_beat_layout(64),
    "record_word": record_word_layout, "request_item": request_item_layout,
    "response_item": response_item_layout, "unpack_beat": unpack_beat_layout,
    "checked_beat": checked_beat_layout, "phy_beat": phy_beat_layout, "flit": flit_layout,
    "request": request_layout, "orig_data": orig_data_layout, "rd_rsp": rd_rsp_layout,
    "wr_rsp": wr_rsp_layout, "cache_entry": cache_entry_layout,
    "credit_update": credit_update_layout, "req_beat": req_beat_layout,
    "rsp_beat": rsp_beat_layout, "schedule": schedule_layout,
    "byte_beat_64": byte_beat_layout(64), "link_settings": settings_layout(LinkConfig(vlan=True)),
}


def _value(rng, shape):
    if isinstance(shape, data.Layout):
        init = _init(rng, shape)
        return shape.const(init) if rng.random() < 0.3 else init
    width = hdl.Shape.cast(shape).width
    return rng.choice([0, 1, (1 << width) - 1, rng.getrandbits(width), rng.getrandbits(width + 9),
                       -rng.randrange(1, 1 << (width + 1)), True, False])


def _init(rng, layout):
    """Values for some of ``layout``'s fields: a mapping, or (an array's) a sequence."""
    fields = list(layout)
    if isinstance(layout, data.ArrayLayout) and rng.random() < 0.5:
        return [_value(rng, field.shape) for _, field in fields]
    return {key: _value(rng, field.shape) for key, field in fields if rng.random() < 0.8}


@pytest.mark.parametrize("name", LAYOUTS)
def test_pack_is_layout_const(name, rng):
    layout = LAYOUTS[name]
    for _ in range(300):
        init = _init(rng, layout)
        assert streams.pack(layout, init) == layout.const(init).as_bits(), init


@pytest.mark.parametrize("name", LAYOUTS)
def test_field_is_view_field(name, rng):
    layout = LAYOUTS[name]
    fields = [streams.FieldReader(layout, key) for key, _ in layout]
    for _ in range(100):
        bits = rng.getrandbits(layout.size)
        view = layout.from_bits(bits)
        for field in fields:
            assert field.get(bits) == view[field.name], field.name


def test_pack_refuses_as_layout_const():
    layout = eth_beat_layout(8)
    with pytest.raises(ValueError, match="not a part of the layout"):
        streams.pack(layout, {"nope": 1})


def test_credit_update_table_is_view(rng):
    """The TL receiver's ``give``/``grant`` read by offsets (sim/tl/rx_env.py), as through a
    view of ``credit_update_layout``."""
    for k in range(500):
        bits = 0 if k == 0 else rng.getrandbits(credit_update_layout.size) >> rng.randrange(100)
        view = credit_update_layout.from_bits(bits)
        assert credit_update_table(bits) == {
            cls: {slot: int(getattr(view, cls)[s]) for s, slot in enumerate(SLOTS)}
            for cls in CLASSES}
