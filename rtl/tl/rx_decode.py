"""Control half-flit decoder of the TL receiver: fields by the local footprint rule."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .layout import (
    HALF_BITS,
    SECTOR_BITS,
    SECTORS_PER_HALF,
    CreditClass,
    FType,
    ReqCmd,
    RxError,
    credit_update_layout,
    flow_control,
    request_layout,
    single_beat_response,
    uncompressed_request,
    uncompressed_response,
    write_or_multi_response,
)
from .rules import legal_command, legal_status, request_beats, request_length_ok

__all__ = ["QUADS", "REQS_PER_HALF", "ControlDecoder", "rx_rsp_entry", "segment_layout"]

#: Uncompressed requests in one control half-flit: tops at sectors 3 and 7.
REQS_PER_HALF = 2
#: Groups of four sectors; a request fills one, responses share one.
QUADS = SECTORS_PER_HALF // 4

#: A response as the receiver keeps it (``rd`` 1 = read; ``pool`` is the field's POOL, a
#: credit attribute; UPLI outputs carry pool = 0).
rx_rsp_entry = data.StructLayout({
    "rd": 1, "num_beats": 2, "offset": 2, "last": 1, "status": 4, "tag": 11, "vc": 2,
    "pool": 1, "src_acc": 10, "dst_acc": 10,
})

#: The data half-flits one group of four sectors calls for, in order: a request's beats then
#: its byte-enable half, or the beats of the responses of the group.
segment_layout = data.StructLayout({"req": 1, "halves": 6, "be": 1})


class ControlDecoder(wiring.Component):
    """Splits a control half-flit into requests, responses and Flow Control credits.

    Field tops are found locally (README §1, [§5.1]): sectors 3 and 7 are always tops; sector
    ``4q+2`` is a top when sector ``4q+3`` holds a one-sector field, ``4q+1`` when ``4q+3`` does
    not hold a request, ``4q`` when moreover ``4q+1`` holds a one-sector field. A field's FTYPE is
    the top nibble of its top sector.

    Members
    -------
    half : In(HALF_BITS)
        The control half-flit.
    req_valid : Out(REQS_PER_HALF), req : Out(ArrayLayout(request_layout, 2))
        Requests, lowest sector first (``pool`` = the field's POOL).
    rsp_valid : Out(8), rsp : Out(ArrayLayout(rx_rsp_entry, 8))
        Responses by top sector.
    segments : Out(ArrayLayout(segment_layout, QUADS))
        Data half-flits owed, per group of four sectors, in sector order.
    grant : Out(credit_update_layout)
        Flow Control credits, OR-reduced per class and slot.
    errors : Out(len(RxError))
        Error kinds found (catch and buffer overruns are not checked here).
    n_req, n_rsp, req_data, rsp_data : Out
        Arrivals: requests, responses and their data beats.
    vc_slot : Out(1)
        Some field spends VC credits (POOL = 0).

    Purely combinational.
    """

    def __init__(self):
        super().__init__({
            "half": In(HALF_BITS),
            "req_valid": Out(REQS_PER_HALF),
            "req": Out(data.ArrayLayout(request_layout, REQS_PER_HALF)),
            "rsp_valid": Out(SECTORS_PER_HALF),
            "rsp": Out(data.ArrayLayout(rx_rsp_entry, SECTORS_PER_HALF)),
            "segments": Out(data.ArrayLayout(segment_layout, QUADS)),
            "grant": Out(credit_update_layout),
            "errors": Out(len(RxError)),
            "n_req": Out(range(REQS_PER_HALF + 1)),
            "n_rsp": Out(range(SECTORS_PER_HALF + 1)),
            "req_data": Out(range(2 * 4 + 1)),
            "rsp_data": Out(range(SECTORS_PER_HALF * 4 + 1)),
            "vc_slot": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        sec = [self.half[SECTOR_BITS * s:SECTOR_BITS * (s + 1)] for s in range(SECTORS_PER_HALF)]
        ft = [Signal(4, name=f"ft{s}") for s in range(SECTORS_PER_HALF)]
        one = [Signal(name=f"one{s}") for s in range(SECTORS_PER_HALF)]   # 1-sector FTYPE
        four = [Signal(name=f"four{s}") for s in range(SECTORS_PER_HALF)]
        top = [Signal(name=f"top{s}") for s in range(SECTORS_PER_HALF)]
        for s in range(SECTORS_PER_HALF):
            m.d.comb += [
                ft[s].eq(sec[s][SECTOR_BITS - 4:]),
                one[s].eq((ft[s] == FType.FC_NOP.value) | (ft[s] == FType.SINGLE_BEAT_READ.value)
                          | (ft[s] == FType.WRITE_OR_MULTI.value)),
                four[s].eq(ft[s] == FType.REQUEST.value),
            ]
        for q in range(QUADS):
            b = 4 * q
            m.d.comb += [
                top[b + 3].eq(1), top[b + 2].eq(one[b + 3]), top[b + 1].eq(~four[b + 3]),
                top[b].eq(~four[b + 3] & one[b + 1]),
            ]
        err = {k: [] for k in RxError}
        beats = self._responses(m, sec, ft, top, err)
        self._requests(m, sec, ft, top, err)
        self._flow_control(m, sec, ft, top)
        for s in range(SECTORS_PER_HALF):
            two = (ft[s] == FType.RESPONSE.value) | (ft[s] == FType.COMPRESSED_REQUEST.value)
            err[RxError.RESERVED_FTYPE].append(top[s] & (ft[s] > FType.WRITE_OR_MULTI.value))
            bad = (four[s] & (s % 4 != 3)) | (two & (s % 2 != 1))
            err[RxError.FOOTPRINT].append(top[s] & bad)
            if s % 2:
                err[RxError.COMPRESSED_REQUEST].append(
                    top[s] & (ft[s] == FType.COMPRESSED_REQUEST.value))
        m.d.comb += self.errors.eq(Cat(*(Cat(*err[k]).any() if err[k] else Const(0)
                                         for k in RxError)))
        self._segments(m, beats)
        return m

    def _requests(self, m, sec, ft, top, err):
        for q in range(QUADS):
            f = Signal(uncompressed_request, name=f"req{q}_field")
            m.d.comb += f.eq(Cat(*sec[4 * q:4 * q + 4]))
            ok_len = request_length_ok(m, f.cmd, Cat(Const(0, 2), f.addr[:6]), f.len,
                                       f.num_beats, f"req{q}")
            valid = Signal(name=f"req{q}_valid")
            m.d.comb += valid.eq(top[4 * q + 3] & (ft[4 * q + 3] == FType.REQUEST.value))
            legal_cmd = legal_command(f.cmd)
            err[RxError.RESERVED_COMMAND].append(valid & ~legal_cmd)
            err[RxError.IMPOSSIBLE_LENGTH].append(valid & legal_cmd & ~ok_len)
            r = self.req[q]
            m.d.comb += [
                self.req_valid[q].eq(valid),
                r.cmd.eq(f.cmd), r.vc.eq(f.vc), r.asi.eq(f.asi), r.tag.eq(f.tag),
                r.attr.eq(f.attr), r.len.eq(f.len), r.metadata.eq(f.metadata),
                r.addr.eq(Cat(Const(0, 2), f.addr)), r.src_acc.eq(f.src_acc),
                r.dst_acc.eq(f.dst_acc), r.num_beats.eq(f.num_beats), r.pool.eq(f.pool),
            ]

    def _responses(self, m, sec, ft, top, err):
        """Responses at each top sector; returns their data beats."""
        beats = []
        for s in range(SECTORS_PER_HALF):
            e = self.rsp[s]
            single = Signal(single_beat_response, name=f"rsp{s}_single")
            cwr = Signal(write_or_multi_response, name=f"rsp{s}_cwr")
            m.d.comb += [single.eq(sec[s]), cwr.eq(sec[s])]
            n = Signal(3, name=f"rsp{s}_beats")
            kind = ft[s]
            is_single = top[s] & (kind == FType.SINGLE_BEAT_READ.value)
            is_cwr = top[s] & (kind == FType.WRITE_OR_MULTI.value)
            with m.If(is_single):
                m.d.comb += [
                    e.rd.eq(1), e.offset.eq(single.offset), e.last.eq(single.last),
                    e.tag.eq(single.tag), e.vc.eq(single.vc), e.pool.eq(single.pool),
                    e.dst_acc.eq(single.dst_acc), n.eq(1),
                ]
            with m.Else():
                m.d.comb += [
                    e.rd.eq(cwr.rd), e.num_beats.eq(Mux(cwr.rd, cwr.len, 0)), e.last.eq(1),
                    e.tag.eq(cwr.tag), e.vc.eq(cwr.vc), e.pool.eq(cwr.pool),
                    e.dst_acc.eq(cwr.dst_acc), n.eq(Mux(is_cwr & cwr.rd, cwr.len + 1, 0)),
                ]
            valid = is_single | is_cwr
            if s % 2:
                full = Signal(uncompressed_response, name=f"rsp{s}_full")
                m.d.comb += full.eq(Cat(sec[s - 1], sec[s]))
                is_full = top[s] & (kind == FType.RESPONSE.value)
                multi = full.len != 0
                with m.If(is_full):
                    m.d.comb += [
                        e.rd.eq(full.rd), e.num_beats.eq(Mux(full.rd, full.len, 0)),
                        e.offset.eq(Mux(multi, 0, full.offset)), e.last.eq(multi | full.last),
                        e.status.eq(full.status), e.tag.eq(full.tag), e.vc.eq(full.vc),
                        e.pool.eq(full.pool), e.src_acc.eq(full.src_acc),
                        e.dst_acc.eq(full.dst_acc), n.eq(Mux(full.rd, full.len + 1, 0)),
                    ]
                err[RxError.RESERVED_STATUS].append(is_full & ~legal_status(full.rd, full.status))
                valid = valid | is_full
            m.d.comb += self.rsp_valid[s].eq(valid)
            beats.append(n)
        return beats

    def _flow_control(self, m, sec, ft, top):
        for cls in CreditClass:
            name = cls.name.lower()
            for slot in range(5):
                hits = []
                for s in range(SECTORS_PER_HALF):
                    fc = flow_control(sec[s])
                    sub = getattr(fc, name)
                    on = top[s] & (ft[s] == FType.FC_NOP.value)
                    if slot == 0:
                        hit = on & ~sub.t
                    else:
                        hit = on & sub.t & (sub.vc == slot - 1)
                    hits.append(Mux(hit, sub.count, 0))
                m.d.comb += getattr(self.grant, name)[slot].eq(_or_all(hits))

    def _segments(self, m, beats):
        vc_hits = []
        for q in range(QUADS):
            seg = self.segments[q]
            req = self.req[q]
            rbeats = Signal(3, name=f"seg{q}_req_beats")
            sbeats = Signal(5, name=f"seg{q}_rsp_beats")
            m.d.comb += [
                rbeats.eq(request_beats(req.cmd, req.num_beats)),
                sbeats.eq(sum(beats[4 * q:4 * q + 4])),
                seg.req.eq(self.req_valid[q]),
                seg.halves.eq(Mux(self.req_valid[q], rbeats, sbeats) << 1),
                seg.be.eq(self.req_valid[q] & req.cmd[5]
                          & (req.cmd != ReqCmd.WRITE_FULL.value)),
            ]
            vc_hits.append(self.req_valid[q] & ~req.pool)
        for s in range(SECTORS_PER_HALF):
            vc_hits.append(self.rsp_valid[s] & ~self.rsp[s].pool)
        m.d.comb += [
            self.n_req.eq(sum(self.req_valid[q] for q in range(QUADS))),
            self.n_rsp.eq(sum(self.rsp_valid[s] for s in range(SECTORS_PER_HALF))),
            self.req_data.eq(sum(Mux(self.req_valid[q],
                                     request_beats(self.req[q].cmd, self.req[q].num_beats), 0)
                                 for q in range(QUADS))),
            self.rsp_data.eq(sum(beats)),
            self.vc_slot.eq(Cat(*vc_hits).any()),
        ]


def _or_all(values):
    out = values[0]
    for v in values[1:]:
        out = out | v
    return out
