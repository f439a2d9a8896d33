# SPDX-License-Identifier: BSD-2-Clause
"""What placing a decided control half-flit takes, shared by the packers' placers: the queue
entries and their fields, the footprints, the Flow Control fields, the credits a half spends and
the data it calls for."""

import operator
from functools import reduce

from amaranth import Array, Cat, Const, Mux, Shape, Signal
from amaranth.lib import data
from amaranth.utils import exact_log2

from ..layout import (
    BEAT_BYTES,
    CACHE_LINE_LSB,
    CACHE_TAG_LSB,
    CMD_CREDIT_MAX,
    DATA_CREDIT_MAX,
    REQS_PER_CONTROL,
    SECTORS_PER_HALF,
    CreditClass,
    CreditSlot,
    FType,
    ReqCmd,
    compressed_request,
    flow_control,
    single_beat_response,
    uncompressed_request,
    uncompressed_response,
    write_or_multi_response,
)
from ..logic import above

__all__ = [
    "encode_request",
    "flow_control_fields",
    "place_flow_control",
    "place_requests",
    "request_footprints",
    "request_word",
    "response_word",
    "schedule_layout",
    "spend_and_schedule",
    "tx_req_entry",
    "tx_rsp_entry",
    "unit_word",
    "wide_start",
]

#: Bit of the POOL flag in each field, from the layouts [Tables 5-29..5-36].
_REQ_POOL_BIT = {True: uncompressed_request["pool"].offset,
                 False: compressed_request["pool"].offset}
_RSP_POOL_BIT = {True: uncompressed_response["pool"].offset,
                 False: write_or_multi_response["pool"].offset}
assert write_or_multi_response["pool"].offset == single_beat_response["pool"].offset

#: Sectors of a request field: uncompressed (``wide``) and compressed [Table 5-2].
_WIDE_SECTORS, _NARROW_SECTORS = (Shape.cast(layout).width // 32
                                  for layout in (uncompressed_request, compressed_request))
#: The only gap a placement can leave: a compressed request at 1-0, an uncompressed at 7-4.
_GAP_START, _GAP_SECTORS = _NARROW_SECTORS, _WIDE_SECTORS - _NARROW_SECTORS

#: A request waiting in the packer: its encoded field (POOL still 0) and what its data needs.
tx_req_entry = data.StructLayout({
    "field": uncompressed_request.size,     # a compressed field uses the low 64 bits
    "wide": 1,                              # uncompressed, 4 sectors (else 2)
    "vc": 2,
    "beats": 3,        # data beats, 0 for reads
    "be": 1,           # a byte-enable half-flit follows the data
    "be_pos": 2,       # ReqAddr[7:6]: where beat 0's byte enables go in that half-flit
})

#: A response waiting in the packer: its encoded field (POOL still 0).
tx_rsp_entry = data.StructLayout({
    "field": 64,       # compressed fields use the low 32 bits
    "wide": 1,         # uncompressed, 2 sectors
    "vc": 2,
    "beats": 3,        # read data beats, 0 for write responses
    "run": 6,          # read beats of every response queued so far, this one included, mod 64
})

#: The data half-flits a control half-flit calls for, in order.
schedule_layout = data.StructLayout({
    "req": data.ArrayLayout(data.StructLayout({"beats": 3, "be": 1, "be_pos": 2}),
                            REQS_PER_CONTROL),
    "rsp_beats": 6,
    "skip": 1,         # the first data half-flit went with the control, from the data queue [ours]
})


def spend_and_schedule(m, spent, schedule, req, kinds):
    """What a placed control half spends and calls for: ``kinds`` is ``(count, data beats,
    pool, VC of the first)`` of its requests, then of its responses, each kind on its one
    credit slot (the pool, or that VC) [§5.7]; ``schedule`` gets the first ``count`` requests
    of the window ``req`` (their beats and byte-enable half-flits) and the responses' beats."""
    for (cmd, dat), (n, beats, pool, vc0) in zip(
            ((CreditClass.REQ_CMD, CreditClass.REQ_DATA),
             (CreditClass.RSP_CMD, CreditClass.RSP_DATA)), kinds):
        for slot in CreditSlot:
            mine = pool if slot == CreditSlot.POOL else ~pool & (vc0 == slot - CreditSlot.VC0)
            m.d.comb += [spent[cmd][slot].eq(Mux(mine, n, 0)),
                         spent[dat][slot].eq(Mux(mine, beats, 0))]
    n_req = kinds[0][0]
    for i in range(REQS_PER_CONTROL):
        with m.If(n_req > i):
            m.d.comb += [schedule.req[i].beats.eq(req[i].beats),
                         schedule.req[i].be.eq(req[i].be),
                         schedule.req[i].be_pos.eq(req[i].be_pos)]
    m.d.comb += schedule.rsp_beats.eq(kinds[1][1])


def place_requests(m, terms, req, n_req, pool, starts, order=None):
    """The first ``n_req`` requests of the window ``req`` (:data:`tx_req_entry`), request
    ``i`` at sector ``starts[i]`` (4 sectors when uncompressed, else 2) with its POOL bit
    ``pool``: their ``(condition, value)`` terms appended to ``terms[sector]``. With ``order``,
    ``req[k]`` is the request at place ``order[k]`` of the window (a signal)."""
    for k in range(REQS_PER_CONTROL):
        entry = req[k]
        word = request_word(m, entry, pool, f"req_word{k}")
        i = k if order is None else order[k]
        start = starts[k] if order is None else Array(starts)[i]
        for s in range(0, SECTORS_PER_HALF, _NARROW_SECTORS):
            here = Signal(name=f"req{k}_at{s}")
            m.d.comb += here.eq((i < n_req) & (start == s))
            for part in range(min(_WIDE_SECTORS, SECTORS_PER_HALF - s)):
                cond = here if part < _NARROW_SECTORS else here & entry.wide
                terms[s + part].append((cond, word[32 * part:32 * part + 32]))


def place_flow_control(m, terms, fields, fc_start, sent, gap=None):
    """Flow Control field ``r`` of ``fields`` (:func:`flow_control_fields`, live ones only, in
    slot order) at sector ``fc_start + r``, or, while a ``gap`` before an aligned uncompressed
    request lasts, at the gap's sector ``2 + r`` (README §3 rule 5), as long as sectors last:
    its ``(condition, value)`` terms appended to ``terms[sector]``, what it returns driven on
    ``sent``. Combinational.

    Returns ``kept``: some slot still has a return pending once these fields are sent (a live
    slot whose field found no sector, or one holding more of a class than a field carries), as
    :func:`~scaleup_ip.tl.tx.compose.account_credits` takes it: from the fields' places and
    the pending counts' compares, with no subtraction."""
    rank = Const(0, range(len(CreditSlot) + 1))
    left = []
    for slot, field, live, over in fields:
        pos = Signal(range(2 * SECTORS_PER_HALF), name=f"fc_pos_{slot.name.lower()}")
        put = Signal(name=f"fc_put_{slot.name.lower()}")
        if gap is None:
            m.d.comb += pos.eq(fc_start + rank)
        else:
            m.d.comb += pos.eq(Mux(gap & (rank < _GAP_SECTORS), _GAP_START + rank,
                                   fc_start + rank - Mux(gap, _GAP_SECTORS, 0)))
        m.d.comb += put.eq(live & (pos < SECTORS_PER_HALF))
        left.append(live & (~put | over))
        rank = rank + live
        for s in range(SECTORS_PER_HALF):
            terms[s].append((put & (pos == s), field.as_value()))
        with m.If(put):
            for cls in CreditClass:
                m.d.comb += sent[cls][slot].eq(getattr(field, cls.name.lower()).count)
    kept = Signal(name="fc_kept")
    m.d.comb += kept.eq(reduce(operator.or_, left))
    return kept


def wide_start(end):
    """Where an uncompressed request field placed after sector ``end`` starts: ``end`` rounded
    up to a multiple of 4 [Table 5-2]."""
    return Mux(end[:2] != 0, Cat(Const(0, 2), end[2:] + 1), end)


def request_word(m, entry, pool, name):
    """The field of ``entry`` (:data:`tx_req_entry`) with its POOL bit set to ``pool``."""
    word = Signal(uncompressed_request.size, name=name)
    bit = Mux(entry.wide, _REQ_POOL_BIT[True], _REQ_POOL_BIT[False])
    m.d.comb += word.eq(entry.field | (pool << bit))
    return word


def response_word(m, entry, pool, name):
    """The field of ``entry`` (:data:`tx_rsp_entry`) with its POOL bit set to ``pool``."""
    word = Signal(64, name=name)
    bit = Mux(entry.wide, _RSP_POOL_BIT[True], _RSP_POOL_BIT[False])
    m.d.comb += word.eq(entry.field | (pool << bit))
    return word


def unit_word(m, unit, pool, second, name):
    """The slot of ``unit`` (:data:`~scaleup_ip.tl.layout.unit_view`) with its POOL bits set
    to ``pool``: of its uncompressed response, else of its first compressed response and, when
    ``second`` (it holds two and both are taken), of its second; else the second's sector 0."""
    word = Signal(64, name=name)
    narrow = _RSP_POOL_BIT[False]
    both = unit.pair & second
    m.d.comb += word.eq(Mux(unit.wide, unit.word | (pool << _RSP_POOL_BIT[True]),
                            Cat(unit.word[:32] | (pool << narrow),
                                Mux(both, unit.word[32:] | (pool << narrow), 0))))
    return word

def flow_control_fields(m, pending, ahead=None):
    """One Flow Control field per credit slot, returning what ``pending`` holds for it, as far
    as a field can (README §3 rule 5): ``[(slot, field, live, over)]`` in slot order, ``live``
    when the slot has something pending, ``over`` when it has more of some class than its
    field returns. Combinational; with ``ahead``, the pending counts of the next clock as
    :func:`~scaleup_ip.tl.tx.compose.account_credits` forms them (``(applied, base, less)``:
    ``less`` where ``applied``, else ``base``), ``live`` and ``over`` are registers worked
    out from both candidates in the clock before and chosen by ``applied`` last: the same
    values, from flops (``pending`` resets to zero, and so do they)."""
    def overs(counts, slot):
        return {cls: above(counts[cls][slot], _FIELD_MAX[cls]) for cls in CreditClass}

    def flags(counts, slot, over):
        return Cat(reduce(operator.or_, (counts[c][slot] != 0 for c in CreditClass)),
                   reduce(operator.or_, over.values()))

    fields = []
    for slot in CreditSlot:
        field = Signal(flow_control, name=f"fc_{slot.name.lower()}")
        saturated = overs(pending, slot)
        for cls in CreditClass:
            sub = getattr(field, cls.name.lower())
            m.d.comb += [sub.count.eq(Mux(saturated[cls], _FIELD_MAX[cls], pending[cls][slot])),
                         sub.t.eq(slot != CreditSlot.POOL),
                         sub.vc.eq(max(slot - CreditSlot.VC0, 0))]
        live = Signal(name=f"fc_{slot.name.lower()}_live")
        over = Signal(name=f"fc_{slot.name.lower()}_over")
        if ahead is None:
            m.d.comb += Cat(live, over).eq(flags(pending, slot, saturated))
        else:
            applied, base, less = ahead
            m.d.sync += Cat(live, over).eq(Mux(applied, flags(less, slot, overs(less, slot)),
                                               flags(base, slot, overs(base, slot))))
        fields.append((slot, field, live, over))
    return fields


#: What one Flow Control field returns of a class at most [Table 5-38].
_FIELD_MAX = {cls: CMD_CREDIT_MAX if cls in (CreditClass.REQ_CMD, CreditClass.RSP_CMD)
              else DATA_CREDIT_MAX for cls in CreditClass}


def request_footprints(m, wide, name):
    """Where requests whose fields are ``wide`` (uncompressed) or not go, placed in order from
    sector 0, each at the next sector its footprint allows (README §3 rule 3).

    Returns ``(starts, ends, used)``: the start sector of request ``i``; for each prefix of
    ``k`` requests (``k`` = 0 .. ``len(wide)``) the sector after its last field and the sectors
    its fields cover (``ends[k] - used[k]`` is the gap before an aligned uncompressed field).
    Values past the half-flit mean the prefix does not fit. Combinational, a few LUTs deep:
    every value is a function of the ``wide`` bits alone.
    """
    starts, ends, used = [], [Const(0, 5)], [Const(0, 5)]
    for i, w in enumerate(wide):
        start = Signal(5, name=f"{name}_start{i}")
        end = Signal(5, name=f"{name}_end{i + 1}")
        cover = Signal(5, name=f"{name}_used{i + 1}")
        last = ends[-1]
        m.d.comb += [
            start.eq(Mux(w, wide_start(last), last)),
            end.eq(start + Mux(w, _WIDE_SECTORS, _NARROW_SECTORS)),
            cover.eq(used[-1] + Mux(w, _WIDE_SECTORS, _NARROW_SECTORS)),
        ]
        starts.append(start)
        ends.append(end)
        used.append(cover)
    return starts, ends, used


#: ReqLen counts doublewords less one; a 64-byte beat is 16 of them, so for a whole number of
#: beats ReqLen[5:4] is the beats less one, the LEN of a compressed request [Table 5-31].
_LEN_BEATS = slice(exact_log2(BEAT_BYTES // 4), None)
#: Compressed request CMD codes [Table 5-33].
_COMPRESSED_CMD = {ReqCmd.READ: 0b000, ReqCmd.WRITE: 0b100, ReqCmd.WRITE_FULL: 0b110}


def encode_request(m, item, entry):
    """Drive ``entry`` (:data:`tx_req_entry`) from ``item`` (``cached_request_layout``): the
    request's field, compressed (FTYPE 0x3) when the cache decided so, else uncompressed with
    the decision's CLOAD and CWAY (README §2, §6), and what its data needs. Combinational."""
    req, cache = item.req, item.cache
    full = Signal(uncompressed_request, name="req_full")
    short = Signal(compressed_request, name="req_short")
    has_data = req.cmd[5]
    m.d.comb += [
        full.ftype.eq(FType.REQUEST), full.cmd.eq(req.cmd), full.vc.eq(req.vc),
        full.asi.eq(req.asi), full.tag.eq(req.tag), full.attr.eq(req.attr),
        full.len.eq(req.len), full.metadata.eq(req.metadata),
        full.addr.eq(req.addr[2:]), full.src_acc.eq(req.src_acc), full.dst_acc.eq(req.dst_acc),
        full.cload.eq(cache.cload), full.cway.eq(cache.cway), full.num_beats.eq(req.num_beats),
        short.ftype.eq(FType.COMPRESSED_REQUEST), short.vc.eq(req.vc), short.asi.eq(req.asi),
        short.tag.eq(req.tag),
        # LEN counts 64-byte beats less one: ReqLen = 16 (LEN + 1) - 1 [Table 5-31].
        short.len.eq(req.len[_LEN_BEATS]),
        short.metadata.eq(req.metadata),
        short.addr.eq(req.addr[CACHE_LINE_LSB:CACHE_TAG_LSB]),
        short.src_acc.eq(req.src_acc), short.dst_acc.eq(req.dst_acc), short.cway.eq(cache.cway),
        entry.field.eq(Mux(cache.compressed, short.as_value(), full.as_value())),
        entry.wide.eq(~cache.compressed),
        entry.vc.eq(req.vc),
        entry.beats.eq(Mux(has_data, req.num_beats + 1, 0)),
        entry.be.eq(has_data & (req.cmd != ReqCmd.WRITE_FULL.value)),
        entry.be_pos.eq(req.addr[6:8]),
    ]
    # The code is a signal of its own: were ``short`` written in a case statement, Amaranth's
    # own Verilog would hold its constant fields (FTYPE) in ``always @*`` blocks that an
    # event-driven simulator never runs (the project's Verilog has no such blocks).
    code = Signal.like(short.cmd, name="req_short_cmd")
    m.d.comb += short.cmd.eq(code)
    with m.Switch(req.cmd):
        for cmd, value in _COMPRESSED_CMD.items():
            with m.Case(cmd):
                m.d.comb += code.eq(value)
