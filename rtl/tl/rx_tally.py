"""Control half-flit decoder of the TL receiver, second stage: requests, counts, credits and the
data half-flits the control calls for."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .layout import (
    BEAT_BYTES,
    HALF_BITS,
    MAX_BEATS,
    SECTORS_PER_HALF,
    CreditClass,
    CreditSlot,
    ReqCmd,
    RxError,
    control_half,
    credit_update_layout,
    flow_control,
    request_layout,
    uncompressed_request,
)
from .logic import or_all
from .rules import legal_command, request_beats
from .rx_decode import QUADS, REQS_PER_HALF, rx_rsp_entry

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

#: Arrivals of one control half per credit class: requests, responses, and their data beats.
arrivals_layout = data.StructLayout({
    "req_n": range(REQS_PER_HALF + 1), "rsp_n": range(SECTORS_PER_HALF + 1),
    "req_data": range(REQS_PER_HALF * MAX_BEATS + 1),
    "rsp_data": range(SECTORS_PER_HALF * MAX_BEATS + 1),
})

#: The data half-flits one group of four sectors calls for, in order: a request's beats then
#: its byte-enable half (``be``), or the beats of the responses of the group. ``size`` counts
#: them all; ``small`` flags sizes 0..3.
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
    req_n : Out(range(3)), reqs : Out(ArrayLayout(request_layout, 2))
        Requests, packed: ``reqs[0 .. req_n-1]`` in sector order (``pool`` = the field's POOL).
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
    seg : Out(ArrayLayout(segment_layout, 2))
        Data half-flits owed per group of four sectors, in sector order.
    new_nz : Out(1), new_ge3 : Out(1)
        Whether their total is non-zero, at least 3.

    Latency: every output but ``arrivals_next`` is registered, one clock after the inputs.
    Throughput: one half-flit per clock.
    """

    def __init__(self):
        super().__init__({
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
            "req_n": Out(arrivals_layout.members["req_n"]),
            "reqs": Out(data.ArrayLayout(request_layout, REQS_PER_HALF)),
            "rsp_n": Out(arrivals_layout.members["rsp_n"]),
            "rsps": Out(data.ArrayLayout(rx_rsp_entry, SECTORS_PER_HALF)),
            "req_data": Out(arrivals_layout.members["req_data"]),
            "rsp_data": Out(arrivals_layout.members["rsp_data"]),
            "arrivals_next": Out(arrivals_layout),
            "vc_slot": Out(1),
            "grant": Out(credit_update_layout),
            "errors_out": Out(len(RxError)),
            "errors_any": Out(1),
            "seg": Out(data.ArrayLayout(segment_layout, QUADS)),
            "new_nz": Out(1),
            "new_ge3": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        sec = control_half(self.half)
        self._quad_beats = [Signal(range(4 * MAX_BEATS + 1), name=f"quad{q}_beats")
                            for q in range(QUADS)]       # response beats per group
        reqs, err = self._requests(m, sec)
        self._responses(m)
        self._flow_control(m, sec)
        segs = self._segments(m, reqs)
        m.d.sync += [self.errors_out.eq(self.errors | err),
                     self.errors_any.eq(self.errors.any() | err.any())]
        vc_hits = [self.req_valid[q] & ~reqs[q].pool for q in range(QUADS)]
        vc_hits += [self.rsp_valid[s] & ~self.rsp[s].pool for s in range(SECTORS_PER_HALF)]
        nxt = self.arrivals_next
        m.d.comb += [quad.eq(self.pair_beats[2 * q] + self.pair_beats[2 * q + 1])
                     for q, quad in enumerate(self._quad_beats)]
        m.d.comb += [
            nxt.req_data.eq(sum(Mux(self.req_valid[q],
                                    request_beats(reqs[q].cmd, reqs[q].num_beats), 0)
                                for q in range(QUADS))),
            nxt.rsp_data.eq(self._quad_beats[0] + self._quad_beats[1]),
        ]
        m.d.sync += [
            self.vc_slot.eq(Cat(*vc_hits).any()),
            self.req_n.eq(nxt.req_n), self.rsp_n.eq(nxt.rsp_n),
            self.req_data.eq(nxt.req_data), self.rsp_data.eq(nxt.rsp_data),
        ]
        big = [~(s.small[0] | s.small[1] | s.small[2]) for s in segs]
        nz = [~s.small[0] for s in segs]
        m.d.sync += [
            self.seg.eq(Cat(*segs)),
            self.new_nz.eq(nz[0] | nz[1]), self.new_ge3.eq(big[0] | big[1] | (nz[0] & nz[1])),
        ]
        return m

    def _requests(self, m, sec):
        """Request fields, their checks, and the packed requests; returns (fields, errors)."""
        bad_cmd, bad_len = [], []
        reqs = []
        for q in range(QUADS):
            f = uncompressed_request(Cat(*(sec[s] for s in range(4 * q, 4 * q + 4))))
            ok_len = field_length_ok(m, f.cmd, f.addr, f.len, f.num_beats, f"req{q}")
            valid = self.req_valid[q]
            legal_cmd = legal_command(f.cmd)
            r = Signal(request_layout, name=f"req{q}")
            m.d.comb += [
                r.cmd.eq(f.cmd), r.vc.eq(f.vc), r.asi.eq(f.asi), r.tag.eq(f.tag),
                r.attr.eq(f.attr), r.len.eq(f.len), r.metadata.eq(f.metadata),
                r.addr.eq(Cat(Const(0, 2), f.addr)), r.src_acc.eq(f.src_acc),
                r.dst_acc.eq(f.dst_acc), r.num_beats.eq(f.num_beats), r.pool.eq(f.pool),
            ]
            bad_cmd.append(valid & ~legal_cmd)
            bad_len.append(valid & legal_cmd & ~ok_len)
            reqs.append(r)
        err = Signal(len(RxError))
        m.d.comb += [err[RxError.RESERVED_COMMAND].eq(Cat(*bad_cmd).any()),
                     err[RxError.IMPOSSIBLE_LENGTH].eq(Cat(*bad_len).any())]
        v = self.req_valid
        m.d.comb += self.arrivals_next.req_n.eq(v[0] + v[1])
        m.d.sync += [
            self.reqs[0].eq(Mux(v[0], reqs[0], reqs[1])), self.reqs[1].eq(reqs[1]),
        ]
        return reqs, err

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

    def _segments(self, m, reqs):
        """The data half-flits each group of four sectors calls for. The ``small`` flags come
        from per-sector flags, not from the sum, so that they are ready early."""
        segs = []
        for q in range(QUADS):
            seg = Signal(segment_layout, name=f"seg{q}_next")
            req = reqs[q]
            valid = self.req_valid[q]
            data = valid & req.cmd[5]
            be = data & (req.cmd != ReqCmd.WRITE_FULL.value)
            beats = [self.rsp_beats[s] for s in range(4 * q, 4 * q + 4)]
            sbeats = self._quad_beats[q]
            total = _small_sums(beats, _SMALL // 2)    # sums of response beats
            small = [~data & total[0]]
            for j in range(1, _SMALL):
                x, odd = j // 2, j % 2      # 2x halves of data, then a BE half when odd
                req_hit = data & (req.num_beats == x - 1) & (be if odd else ~be)
                small.append(req_hit if odd else req_hit | (~valid & total[x]))
            m.d.comb += [
                seg.req.eq(valid), seg.be.eq(be),
                seg.size.eq(Mux(valid, (request_beats(req.cmd, req.num_beats) << 1) + be,
                                sbeats << 1)),
                seg.small.eq(Cat(*small)),
            ]
            segs.append(seg)
        return segs


def field_length_ok(m, cmd, addr, length, num_beats, name):
    """README §4 length checks of a request field; returns a 1-bit signal.

    The rule of :func:`~rtl.tl.rules.request_length_ok` (which gives the same result for every
    input: ``tb/test_tl_rx.py::test_field_length_rule``), restated on the field's doubleword
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
