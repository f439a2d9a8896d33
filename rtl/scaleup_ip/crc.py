# SPDX-License-Identifier: BSD-2-Clause
"""Line-rate IEEE 802.3 CRC-32 engine over a byte stream, for generating and checking."""

import dataclasses
import operator
from functools import reduce

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from .config import BlockConfig, ConfiguredComponent, check_int
from .model.crc import crc32 as model
from .types import byte_stream, crc_result_layout, crc_result_stream

__all__ = ["CrcConfig", "Crc32"]

#: Beat widths the engine is built and tested for.
DATA_WIDTHS = (8, 32, 64, 128, 256, 512)
#: Pipeline settings the engine is built and tested for.
PIPELINES = (0, 1, 2, 3)
#: Terms XORed together before each pipeline register of the data product: two levels of LUT4.
_GROUP = 16
#: Correction steps between registers, by ``pipeline`` (``None``: all in one stage). One step is a
#: 32x32 GF(2) product and a mux, three to four LUT4 levels with heavy routing on ECP5.
_STEPS_PER_STAGE = (None, 2, 1, 1)


@dataclasses.dataclass(frozen=True)
class CrcConfig(BlockConfig):
    """Parameters of :class:`Crc32`.

    Parameters
    ----------
    data_width : int
        Bits per beat, one of 8, 32, 64, 128, 256, 512.
    pipeline : int
        Register levels, 0 to 3, for Fmax. The XOR tree of the beat's data gets ``pipeline``
        levels before the CRC register; the partial-beat correction after it gets a register
        after every step (``pipeline`` >= 2), every second step (1) or none (0). See
        :attr:`latency`.
    """
    data_width: int = 64
    pipeline: int = 1

    def __post_init__(self):
        check_int("CRC", "data_width", self.data_width, DATA_WIDTHS)
        check_int("CRC", "pipeline", self.pipeline, PIPELINES)

    @property
    def bytes_per_beat(self):
        """Bytes per beat (bits of ``keep``)."""
        return self.data_width // 8

    @property
    def correction_steps(self):
        """Conditional 32x32 steps that undo the missing bytes of a partial last beat."""
        return self.bytes_per_beat.bit_length() - 1

    @property
    def correction_stages(self):
        """Register-separated stages the correction steps are spread over."""
        per_stage = _STEPS_PER_STAGE[self.pipeline]
        if per_stage is None or self.correction_steps == 0:
            return 1
        return -(-self.correction_steps // per_stage)

    @property
    def latency(self):
        """Cycles from the clock edge that accepts a packet's last beat to the edge at which its
        result can be taken from ``o``: the input register, ``pipeline`` data levels, the CRC
        register, the correction stages (the last one ends in the output register) and the
        result queue's write."""
        return self.pipeline + 3 + self.correction_stages

    @property
    def result_depth(self):
        """Results the output queue holds: enough for one packet per cycle at full rate."""
        return self.latency + 1


def _rows(columns, out_width=32):
    """Turn the columns of a GF(2) matrix (the images of unit vectors) into row bit masks."""
    rows = [0] * out_width
    for j, column in enumerate(columns):
        for i in range(out_width):
            if (column >> i) & 1:
                rows[i] |= 1 << j
    return rows


def _terms(row, value):
    return [value[j] for j in range(len(value)) if (row >> j) & 1]


def _xor(terms):
    return Cat(*terms).xor() if terms else Const(0, 1)


def _product(rows, value):
    """The GF(2) matrix product ``rows · value`` as a combinational value."""
    return Cat(*(_xor(_terms(row, value)) for row in rows))


def _side_layout(shift_width):
    """What travels beside the data down the pipeline."""
    return data.StructLayout({
        "valid": 1,
        "first": 1,        # first beat of a packet: start from the preset
        "last": 1,         # last beat: the result leaves the CRC register for the correction
        "malformed": 1,    # some beat of this packet broke the keep rules
        "empty": 1,        # a last beat with no bytes: the register keeps its value
        "shift": shift_width,  # bytes missing from a partial, non-empty last beat
    })


class Crc32(ConfiguredComponent):
    """IEEE 802.3 CRC-32 of every packet on a byte stream, one beat per clock.

    The engine takes beats of :func:`~scaleup_ip.types.byte_beat_layout` and emits one
    :data:`~scaleup_ip.types.crc_result_layout` per packet. The same result serves both uses: to
    *generate*, append ``crc`` least-significant byte first; to *check* a packet that ends in its
    FCS, read ``ok`` (the receive residue matched). [IEEE 802.3 §3.2.9]

    Throughput is one beat per clock with no bubbles between packets, packets of any length from
    0 bytes. Latency is :attr:`CrcConfig.latency` cycles from the last beat to its result
    (``pipeline + 3 +`` :attr:`CrcConfig.correction_stages`: 11 at 512 bits, pipeline 2).
    ``i.ready`` is a register: it falls only when :attr:`CrcConfig.result_depth` results are
    waiting or in flight, so a stalled ``o`` backpressures ``i`` and nothing is lost.

    A beat whose ``keep`` breaks the rules (not all ones before the last beat; not of the form
    0b0..01..1 on the last) marks its packet ``malformed``: ``ok`` is then 0 and ``crc`` is
    unspecified; later packets are unaffected. A reset, even mid-packet, discards all state.

    Parameters
    ----------
    config : CrcConfig
        Beat width and pipeline depth.

    Members
    -------
    i : ``In(byte_stream(config.data_width))``
        Packet beats.
    o : ``Out(crc_result_stream())``
        One result per packet, in packet order.
    """

    config_class = CrcConfig

    def __init__(self, config):
        super().__init__(config, lambda config: {
            "i": In(byte_stream(config.data_width)),
            "o": Out(crc_result_stream()),
        })

    def elaborate(self, platform):
        # The register update is linear over GF(2): a full beat maps s to A·s ⊕ B·d. A partial last
        # beat of n bytes is run as a full beat with its missing bytes zeroed; that equals the
        # true update advanced by (W/8 - n) zero bytes, so the correction multiplies by the inverse
        # advance, one conditional 32x32 step per bit of (W/8 - n) < W/8 (an empty last beat just
        # leaves the register as it was). The correction sits after the feedback loop, so only
        # A·s ⊕ (pre-reduced B·d) must close in one cycle, and both the data product and the
        # correction are pipelined freely. Every constant comes from the bit-serial model. The
        # pipeline never stalls: the result queue is sized for every packet the input can have
        # in flight, and the input is throttled by counting them.
        m = Module()
        side, products = self._accept(m)
        side, products = self._reduce(m, side, products)
        side, state = self._register(m, side, products)
        side, state = self._correct(m, side, state)
        self._emit(m, side, state)
        return m

    def _accept(self, m):
        """Stage 0: register the beat with its missing bytes zeroed; decode ``keep``."""
        cfg, beat = self._config, self.i.payload
        nbytes, keep = cfg.bytes_per_beat, self.i.payload.keep
        side = Signal(_side_layout(max(cfg.correction_steps, 1)))   # no zero-width field
        masked = Signal(cfg.data_width)

        take = self.i.valid & self.i.ready
        in_packet = Signal()
        malformed = Signal()     # sticky over the packet being received

        ends = Cat(keep[1:], Const(0, 1))  # keep[k] & ~ends[k]: exactly k+1 bytes are valid
        contiguous = (ends & ~keep) == 0   # no valid byte above a missing one (no carry chain)
        bad_keep = Mux(beat.last, ~contiguous, keep != (1 << nbytes) - 1)
        shift = reduce(operator.or_,
                       (Mux(keep[k] & ~ends[k], nbytes - 1 - k, 0) for k in range(nbytes)))

        m.d.sync += side.valid.eq(take)
        with m.If(take):
            m.d.sync += [
                masked.eq(beat.data & Cat(*(keep[k].replicate(8) for k in range(nbytes)))),
                side.first.eq(~in_packet),
                side.last.eq(beat.last),
                side.malformed.eq(malformed | bad_keep),
                side.empty.eq(beat.last & ~keep[0]),
                side.shift.eq(shift),           # 0 for an empty beat: no lane ends a run
                in_packet.eq(~beat.last),
                malformed.eq(~beat.last & (malformed | bad_keep)),
            ]
        rows = _rows([model.advance(0, 1 << j, cfg.data_width) for j in range(cfg.data_width)])
        return side, [_terms(row, masked) for row in rows]

    def _reduce(self, m, side, products):
        """``pipeline`` register levels inside B·d, each XORing groups of :data:`_GROUP`."""
        for level in range(self._config.pipeline):
            reduced = []
            for i, terms in enumerate(products):
                groups = [terms[k:k + _GROUP] for k in range(0, len(terms), _GROUP)]
                partial = Signal(len(groups), name=f"product{level}_{i}")
                m.d.sync += partial.eq(Cat(*(_xor(g) for g in groups)))
                reduced.append(list(partial))
            products = reduced
            side = self._delay(m, side, f"product{level}")
        return side, products

    def _register(self, m, side, products):
        """The CRC register: the only feedback loop."""
        width = self._config.data_width
        advance = _rows([model.advance(1 << j, 0, width) for j in range(32)])
        state = Signal(32)
        data_term = Cat(*(_xor(terms) for terms in products))
        start = Const(model.PRESET, 32)
        advanced = Mux(side.first, _product(advance, start), _product(advance, state)) ^ data_term
        with m.If(side.valid):
            m.d.sync += state.eq(Mux(side.empty, Mux(side.first, start, state), advanced))
        return self._delay(m, side, "register"), state

    def _correct(self, m, side, state):
        """Undo the zero bytes of a partial last beat; registers between the stages."""
        steps, segments = self._config.correction_steps, self._config.correction_stages
        bounds = [steps * k // segments for k in range(segments + 1)]
        for n in range(segments):
            for j in range(bounds[n], bounds[n + 1]):
                undo = _rows([model.retreat(1 << c, 8 << j) for c in range(32)])
                corrected = Signal(32, name=f"undo{j}")
                m.d.comb += corrected.eq(Mux(side.shift[j], _product(undo, state), state))
                state = corrected
            registered = Signal(32, name=f"correct{n}")   # the last one is the output register
            m.d.sync += registered.eq(state)
            side, state = self._delay(m, side, f"correct{n}"), registered
        return side, state

    def _emit(self, m, side, state):
        """Queue one result per packet; throttle the input by results in flight."""
        cfg = self._config
        m.submodules.queue = queue = SyncFIFO(
            width=crc_result_layout.size, depth=cfg.result_depth)
        result = Signal(crc_result_layout)
        m.d.comb += [
            result.crc.eq(state ^ model.FINAL_XOR),
            result.ok.eq((state == model.RESIDUE) & ~side.malformed),
            result.malformed.eq(side.malformed),
            queue.w_data.eq(result),
            queue.w_en.eq(side.valid & side.last),
            self.o.payload.eq(queue.r_data),
            self.o.valid.eq(queue.r_rdy),
            queue.r_en.eq(self.o.ready),
        ]
        # Results accepted but not yet delivered never exceed result_depth, so the queue never
        # overflows and the pipeline ahead of it needs no stall. i.ready is registered and chosen
        # among comparisons of the registered count, so no adder sits between handshake and flop.
        depth = cfg.result_depth
        pending = Signal(range(depth + 1))
        ready = Signal()
        accepted = self.i.valid & self.i.ready & self.i.payload.last
        delivered = self.o.valid & self.o.ready
        m.d.sync += [
            pending.eq(pending + accepted - delivered),
            ready.eq(Mux(accepted == delivered, pending < depth,
                         Mux(accepted, pending < depth - 1, 1))),
        ]
        m.d.comb += self.i.ready.eq(ready)

    @staticmethod
    def _delay(m, side, name):
        delayed = Signal.like(side, name=f"{name}_side")
        m.d.sync += delayed.eq(side)
        return delayed
