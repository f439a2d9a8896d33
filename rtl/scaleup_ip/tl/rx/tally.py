# SPDX-License-Identifier: BSD-2-Clause
"""Control half-flit decoder of the TL receiver, second stage: requests, counts, credits and the
data half-flits the control calls for."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    BEAT_BYTES,
    CACHE_LINE_LSB,
    HALF_BITS,
    MAX_BEATS,
    SECTORS_PER_HALF,
    CreditClass,
    CreditSlot,
    ReqCmd,
    RxError,
    cached_request_layout,
    compressed_request,
    control_half,
    credit_update_layout,
    flow_control,
    request_layout,
    uncompressed_request,
)
from ..logic import or_all
from ..rules import legal_command, request_beats
from .decode import QUADS, REQS_PER_HALF, request_groups, rx_req_entry, rx_rsp_entry

__all__ = [
    "SEGMENT_HALVES", "ControlTally", "arrivals_layout", "field_length_ok", "segment_layout",
]

#: Data half-flits one group of four sectors calls for at most: four responses of four beats.
SEGMENT_HALVES = 2 * MAX_BEATS * 4
#: Doublewords (ADDR units) in a 256-byte block and in a 64-byte beat, as address bits.
_BLOCK_DW_BITS = (256 // 4).bit_length() - 1
_BEAT_DW_BITS = (BEAT_BYTES // 4).bit_length() - 1
#: Smallest segment sizes flagged (``small[j]`` = size is ``j``).
_SMALL = 6

#: [Table 5-33] ReqCmd of each legal compressed request CMD.
_COMPRESSED_COMMANDS = {0b000: ReqCmd.READ, 0b100: ReqCmd.WRITE, 0b110: ReqCmd.WRITE_FULL}
#: ReqLen of a compressed request is 16 (LEN + 1) - 1 doublewords: LEN, then four ones.
_LINE_DW_BITS = 4


def arrivals_layout(reqs=REQS_PER_HALF):
    """Arrivals of one control half per credit class: requests (at most ``reqs``), responses,
    and their data beats."""
    return data.StructLayout({
        "req_n": range(reqs + 1), "rsp_n": range(SECTORS_PER_HALF + 1),
        "req_data": range(reqs * MAX_BEATS + 1),
        "rsp_data": range(SECTORS_PER_HALF * MAX_BEATS + 1),
    })


#: The data half-flits one group of sectors calls for, in order: a request's beats then
#: its byte-enable half (``be``), or the beats of the responses of the group. ``size`` counts
#: them all; ``small`` flags sizes 0..5.
segment_layout = data.StructLayout({
    "req": 1, "be": 1, "size": range(SEGMENT_HALVES + 1), "small": _SMALL,
})


class ControlTally(wiring.Component):
    """Second decode stage of a control half-flit: requests and their checks, responses packed
    lowest sector first, arrivals per credit class, Flow Control grants, and the data
    half-flits owed.

    Members
    -------
    half : In(HALF_BITS)
        The control half-flit, in step with the :class:`ControlDecoder` outputs below.
    rsp_valid, rsp, rsp_pick, rsp_n_in, rsp_beats, pair_beats : In
        The :class:`ControlDecoder` outputs for ``half`` (``rsp_n_in`` is its ``rsp_n``).
    req_valid, fc_valid, errors : In
        The same.
    creq_valid, req_pick, req_n_in, req_beats, req_be, req_data_in : In
        With ``cached`` only: the :class:`ControlDecoder` outputs ``creq_valid``, ``req_pick``,
        ``req_n``, ``req_beats``, ``req_be``, ``req_data``.
    req_n : Out(range(G + 1)), reqs : Out(ArrayLayout(rx_req_entry(cached), G))
        Requests, packed: ``reqs[0 .. req_n-1]`` in sector order (``pool`` = the field's POOL);
        ``G`` = :func:`~scaleup_ip.tl.rx.decode.request_groups`. A compressed request is expanded
        (Table 5-33 command, ATTR, ReqLen, NumBeats; ReqAddr[19:6] of its ADDR, the rest 0).
    rsp_n : Out(range(9)), rsps : Out(ArrayLayout(rx_rsp_entry, 8))
        Responses, packed the same way.
    req_data, rsp_data : Out
        Data beats of the requests and of the responses.
    arrivals_next : Out(arrivals_layout)
        What ``req_n``, ``rsp_n``, ``req_data`` and ``rsp_data`` take at the clock's end
        (combinational), for checks kept a clock ahead.
    vc_slot : Out(1)
        Some field spends VC credits (POOL = 0).
    grant : Out(credit_update_layout)
        Flow Control credits, OR-reduced per class and slot.
    errors_out : Out(len(RxError)), errors_any : Out(1)
        Every kind a control half shows by itself (catch and buffer overruns excepted), and
        whether there is any.
    seg : Out(ArrayLayout(segment_layout, G))
        Data half-flits owed per group of sectors, in sector order.
    new_nz : Out(1), new_ge3 : Out(1)
        Whether their total is non-zero, at least 3.

    Parameters
    ----------
    cached : bool
        The receiver has an address cache: up to four requests, compressed or not, read by
        pairs of sectors (else up to two, by groups of four sectors).

    Latency: every output but ``arrivals_next`` is registered, one clock after the inputs.
    Throughput: one half-flit per clock.
    """

    def __init__(self, cached=False):
        self._cached = cached
        self._groups = groups = request_groups(cached)
        arrivals = arrivals_layout(groups)
        cached_members = {
            "creq_valid": In(groups),
            "req_pick": In(data.ArrayLayout(groups, groups)),
            "req_n_in": In(range(groups + 1)),
            "req_beats": In(data.ArrayLayout(range(MAX_BEATS + 1), groups)),
            "req_be": In(groups),
            "req_data_in": In(range(groups * MAX_BEATS + 1)),
        } if cached else {}
        super().__init__({
            **cached_members,
            "half": In(HALF_BITS),
            "rsp_valid": In(SECTORS_PER_HALF),
            "rsp": In(data.ArrayLayout(rx_rsp_entry, SECTORS_PER_HALF)),
            "rsp_pick": In(data.ArrayLayout(SECTORS_PER_HALF, SECTORS_PER_HALF)),
            "rsp_n_in": In(range(SECTORS_PER_HALF + 1)),
            "rsp_beats": In(data.ArrayLayout(range(MAX_BEATS + 1), SECTORS_PER_HALF)),
            "pair_beats": In(data.ArrayLayout(range(2 * MAX_BEATS + 1), SECTORS_PER_HALF // 2)),
            "req_valid": In(REQS_PER_HALF),
            "fc_valid": In(SECTORS_PER_HALF),
            "errors": In(len(RxError)),
            "req_n": Out(arrivals.members["req_n"]),
            "reqs": Out(data.ArrayLayout(rx_req_entry(cached), groups)),
            "rsp_n": Out(arrivals.members["rsp_n"]),
            "rsps": Out(data.ArrayLayout(rx_rsp_entry, SECTORS_PER_HALF)),
            "req_data": Out(arrivals.members["req_data"]),
            "rsp_data": Out(arrivals.members["rsp_data"]),
            "arrivals_next": Out(arrivals),
            "vc_slot": Out(1),
            "grant": Out(credit_update_layout),
            "errors_out": Out(len(RxError)),
            "errors_any": Out(1),
            "seg": Out(data.ArrayLayout(segment_layout, groups)),
            "new_nz": Out(1),
            "new_ge3": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        sec = control_half(self.half)
        groups = self._groups
        if self._cached:                                # response beats per group
            self._group_beats = [self.pair_beats[p] for p in range(groups)]
        else:
            self._group_beats = [Signal(range(4 * MAX_BEATS + 1), name=f"quad{q}_beats")
                                 for q in range(QUADS)]
            m.d.comb += [quad.eq(self.pair_beats[2 * q] + self.pair_beats[2 * q + 1])
                         for q, quad in enumerate(self._group_beats)]
        if self._cached:
            reqs, valid, err = self._cached_requests(m, sec)
        else:
            reqs, err = self._requests(m, sec)
            valid = [self.req_valid[q] for q in range(QUADS)]
        self._responses(m)
        self._flow_control(m, sec)
        segs = self._segments(m, reqs, valid)
        m.d.sync += [self.errors_out.eq(self.errors | err),
                     self.errors_any.eq(self.errors.any() | err.any())]
        vc_hits = [valid[q] & ~reqs[q].pool for q in range(groups)]
        vc_hits += [self.rsp_valid[s] & ~self.rsp[s].pool for s in range(SECTORS_PER_HALF)]
        nxt = self.arrivals_next
        m.d.comb += [
            nxt.req_data.eq(self.req_data_in if self._cached else
                            sum(Mux(valid[q], request_beats(reqs[q].cmd, reqs[q].num_beats), 0)
                                for q in range(groups))),
            nxt.rsp_data.eq(sum(self._group_beats[1:], self._group_beats[0])),
        ]
        m.d.sync += [
            self.vc_slot.eq(Cat(*vc_hits).any()),
            self.req_n.eq(nxt.req_n), self.rsp_n.eq(nxt.rsp_n),
            self.req_data.eq(nxt.req_data), self.rsp_data.eq(nxt.rsp_data),
        ]
        # At least three halves: a group of three or more, or two groups (two halves or more
        # each).
        big = [~(s.small[0] | s.small[1] | s.small[2]) for s in segs]
        nz = [~s.small[0] for s in segs]
        m.d.sync += [
            self.seg.eq(Cat(*segs)),
            self.new_nz.eq(or_all(nz)),
            self.new_ge3.eq(or_all(big + [nz[a] & nz[b] for a in range(groups)
                                          for b in range(a + 1, groups)])),
        ]
        return m

    def _requests(self, m, sec):
        """Request fields, their checks, and the packed requests; returns (fields, errors)."""
        bad_cmd, bad_len = [], []
        reqs = []
        for q in range(QUADS):
            _, r, legal_cmd, ok_len = _uncompressed(m, sec, q, f"req{q}")
            valid = self.req_valid[q]
            bad_cmd.append(valid & ~legal_cmd)
            bad_len.append(valid & legal_cmd & ~ok_len)
            reqs.append(r)
        err = _request_errors(m, bad_cmd, bad_len)
        v = self.req_valid
        m.d.comb += self.arrivals_next.req_n.eq(v[0] + v[1])
        m.d.sync += [
            self.reqs[0].eq(Mux(v[0], reqs[0], reqs[1])), self.reqs[1].eq(reqs[1]),
        ]
        return reqs, err

    def _cached_requests(self, m, sec):
        """With an address cache: requests by pair of sectors (a compressed one, or in an
        upper pair an uncompressed one), their checks, and the requests packed by the
        decoder's registered picks; returns (fields, valid bits, errors)."""
        bad_cmd, bad_len = [], []
        entries, valid = [], []
        for p in range(self._groups):
            e = Signal(cached_request_layout, name=f"creq{p}")
            creq = self.creq_valid[p]
            expanded, legal, in_block = _compressed(m, Cat(sec[2 * p], sec[2 * p + 1]), e,
                                                    f"creq{p}")
            bad_cmd.append(creq & ~legal)
            bad_len.append(creq & legal & ~in_block)
            v = creq
            if p % 2:
                q = p // 2
                f, r, legal_cmd, ok_len = _uncompressed(m, sec, q, f"req{q}")
                full = self.req_valid[q]
                with m.If(full):
                    m.d.comb += [e.req.eq(r), e.cache.cload.eq(f.cload),
                                 e.cache.cway.eq(f.cway)]
                with m.Else():
                    m.d.comb += expanded
                bad_cmd.append(full & ~legal_cmd)
                bad_len.append(full & legal_cmd & ~ok_len)
                v = creq | full
            else:
                m.d.comb += expanded
            entries.append(e)
            valid.append(v)
        err = _request_errors(m, bad_cmd, bad_len)
        m.d.comb += self.arrivals_next.req_n.eq(self.req_n_in)
        n = self._groups
        for k in range(n):
            pick = self.req_pick[k]
            m.d.sync += self.reqs[k].eq(
                or_all([Mux(pick[i], entries[i].as_value(), 0) for i in range(k, n)]))
        return [e.req for e in entries], valid, err

    def _responses(self, m):
        """Responses packed lowest sector first: output ``k`` is the ``k``-th valid input, by
        the decoder's registered picks."""
        n = SECTORS_PER_HALF
        m.d.comb += self.arrivals_next.rsp_n.eq(self.rsp_n_in)
        for k in range(n):
            pick = self.rsp_pick[k]
            m.d.sync += self.rsps[k].eq(
                or_all([Mux(pick[i], self.rsp[i].as_value(), 0) for i in range(k, n)]))

    def _flow_control(self, m, sec):
        for cls in CreditClass:
            name = cls.name.lower()
            for slot in CreditSlot:
                hits = []
                for s in range(SECTORS_PER_HALF):
                    sub = getattr(flow_control(sec[s]), name)
                    if slot == CreditSlot.POOL:
                        hit = self.fc_valid[s] & ~sub.t
                    else:
                        hit = self.fc_valid[s] & sub.t & (sub.vc == slot - CreditSlot.VC0)
                    hits.append(Mux(hit, sub.count, 0))
                m.d.sync += getattr(self.grant, name)[slot].eq(or_all(hits))

    def _segments(self, m, reqs, valids):
        """The data half-flits each group of sectors calls for. The ``small`` flags come
        from per-sector flags, not from the sum, so that they are ready early."""
        segs = []
        per = SECTORS_PER_HALF // self._groups
        for q in range(self._groups):
            seg = Signal(segment_layout, name=f"seg{q}_next")
            req = reqs[q]
            valid = valids[q]
            if self._cached:                # the decoder's registered beat counts
                n, be = self.req_beats[q], self.req_be[q]
                data = n != 0
            else:
                n = request_beats(req.cmd, req.num_beats)
                data = valid & req.cmd[5]
                be = data & (req.cmd != ReqCmd.WRITE_FULL.value)
            beats = [self.rsp_beats[s] for s in range(per * q, per * q + per)]
            sbeats = self._group_beats[q]
            total = _small_sums(beats, _SMALL // 2)    # sums of response beats
            small = [~data & total[0]]
            for j in range(1, _SMALL):
                x, odd = j // 2, j % 2      # 2x halves of data, then a BE half when odd
                if self._cached:
                    req_hit = (n == x) & (be if odd else ~be) if x else 0
                else:
                    req_hit = data & (req.num_beats == x - 1) & (be if odd else ~be)
                small.append(req_hit if odd else req_hit | (~valid & total[x]))
            m.d.comb += [
                seg.req.eq(valid), seg.be.eq(be),
                seg.size.eq(Mux(valid, (n << 1) + be, sbeats << 1)),
                seg.small.eq(Cat(*small)),
            ]
            segs.append(seg)
        return segs


def _uncompressed(m, sec, q, name):
    """The uncompressed request field of sectors ``4q .. 4q+3``: ``(field, request, legal
    command, length ok)``."""
    f = uncompressed_request(Cat(*(sec[s] for s in range(4 * q, 4 * q + 4))))
    ok_len = field_length_ok(m, f.cmd, f.addr, f.len, f.num_beats, name)
    legal_cmd = legal_command(f.cmd)
    r = Signal(request_layout, name=name)
    m.d.comb += [
        r.cmd.eq(f.cmd), r.vc.eq(f.vc), r.asi.eq(f.asi), r.tag.eq(f.tag),
        r.attr.eq(f.attr), r.len.eq(f.len), r.metadata.eq(f.metadata),
        r.addr.eq(Cat(Const(0, 2), f.addr)), r.src_acc.eq(f.src_acc),
        r.dst_acc.eq(f.dst_acc), r.num_beats.eq(f.num_beats), r.pool.eq(f.pool),
    ]
    return f, r, legal_cmd, ok_len


def _compressed(m, value, e, name):
    """A compressed request field (2 sectors) expanded into ``e`` (a
    :data:`cached_request_layout`) as Table 5-32 requires of what it stands for: the command
    of Table 5-33, ATTR 0xFF for a read and 0x00 for a write, ReqLen 16 (LEN + 1) - 1,
    NumBeats LEN for a write and 0 for a read, ReqMetaData[2:0] = METADATA, ReqAddr[19:6] =
    ADDR (ReqAddr[56:20] comes from the address cache). Returns ``(statements, legal CMD,
    within its 256-byte block)``; a compressed request is 64-byte aligned whole beats, so the
    only length check is the block: ReqAddr[7:6] + LEN < 4 (README §4)."""
    c = compressed_request(value)
    write = c.cmd[2]
    reach = Signal(3, name=f"{name}_reach")          # last beat's place in the block
    m.d.comb += reach.eq(c.addr[:2] + c.len)
    legal = or_all([c.cmd == code for code in _COMPRESSED_COMMANDS])
    cmd = Mux(write, Mux(c.cmd[1], ReqCmd.WRITE_FULL.value, ReqCmd.WRITE.value),
              ReqCmd.READ.value)
    r = e.req
    return [
        r.cmd.eq(cmd), r.vc.eq(c.vc), r.asi.eq(c.asi), r.tag.eq(c.tag), r.pool.eq(c.pool),
        r.attr.eq(Mux(write, 0x00, 0xFF)), r.len.eq(Cat(Const(-1, _LINE_DW_BITS), c.len)),
        r.metadata.eq(c.metadata), r.addr.eq(Cat(Const(0, CACHE_LINE_LSB), c.addr)),
        r.src_acc.eq(c.src_acc), r.dst_acc.eq(c.dst_acc), r.num_beats.eq(Mux(write, c.len, 0)),
        e.cache.compressed.eq(1), e.cache.cway.eq(c.cway),
    ], legal, ~reach[2]


def _request_errors(m, bad_cmd, bad_len):
    err = Signal(len(RxError))
    m.d.comb += [err[RxError.RESERVED_COMMAND].eq(Cat(*bad_cmd).any()),
                 err[RxError.IMPOSSIBLE_LENGTH].eq(Cat(*bad_len).any())]
    return err


def field_length_ok(m, cmd, addr, length, num_beats, name):
    """README §4 length checks of a request field; returns a 1-bit signal.

    The rule of :func:`~scaleup_ip.tl.rules.request_length_ok` (which gives the same result for every
    input: ``tb/tl/rx/test_unpacker.py::test_field_length_rule``), restated on the field's doubleword
    address ADDR so that each check is one addition: with ``d`` = ADDR mod 64 and ``n`` = LEN,
    the transfer stays in its 256-byte block when ``d + n < 64``, and it spans
    ``((ADDR mod 16) + n) // 16 + 1`` beats.
    """
    in_block = Signal(name=f"{name}_in_block")
    end = Signal(_BLOCK_DW_BITS + 1, name=f"{name}_end")     # last doubleword, beat-relative
    beats_ok = Signal(name=f"{name}_beats_ok")
    ok = Signal(name=f"{name}_ok")
    reach = Signal(_BLOCK_DW_BITS + 1, name=f"{name}_reach")  # last doubleword, block-relative
    lane = addr[:_BEAT_DW_BITS]
    m.d.comb += [
        reach.eq(addr[:_BLOCK_DW_BITS] + length),
        in_block.eq(~reach[_BLOCK_DW_BITS]),
        end.eq(lane + length),
        beats_ok.eq(end[_BEAT_DW_BITS:] == num_beats),
    ]
    with m.If(cmd == ReqCmd.READ.value):
        m.d.comb += ok.eq(in_block)
    with m.Elif(cmd[4:6] == 0b10):
        full = cmd == ReqCmd.WRITE_FULL.value
        m.d.comb += ok.eq(in_block & beats_ok
                          & (~full | ((lane == 0) & (length[:_BEAT_DW_BITS].all()))))
    with m.Elif((cmd == ReqCmd.ATOMIC_R.value) | (cmd == ReqCmd.ATOMIC_NR.value)):
        m.d.comb += ok.eq(num_beats == 0)
    with m.Else():
        m.d.comb += ok.eq(1)
    return ok


def _small_sums(values, most):
    """``[sum(values) == x for x in 0 .. most]`` as logic on ``value == x`` terms."""
    dist = [Const(1)] + [Const(0)] * most
    for v in values:
        own = [v == x for x in range(most + 1)]
        dist = [or_all([dist[a] & own[x - a] for a in range(x + 1)]) for x in range(most + 1)]
    return dist
