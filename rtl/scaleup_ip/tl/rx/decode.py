# SPDX-License-Identifier: BSD-2-Clause
"""Control half-flit decoder of the TL receiver, first stage: fields by the local footprint rule."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..layout import (
    HALF_BITS,
    MAX_BEATS,
    SECTORS_PER_HALF,
    FType,
    ReqCmd,
    RxError,
    cached_request_layout,
    compressed_request,
    control_half,
    flow_control,
    request_layout,
    single_beat_response,
    uncompressed_request,
    uncompressed_response,
    write_or_multi_response,
)
from ..logic import or_all
from ..rules import legal_status, request_beats

__all__ = ["CACHED_REQS_PER_HALF", "QUADS", "REQS_PER_HALF", "ControlDecoder",
           "request_groups", "rx_req_entry", "rx_rsp_entry"]

#: Uncompressed requests in one control half-flit: tops at sectors 3 and 7.
REQS_PER_HALF = 2
#: Requests in one control half-flit with an address cache: compressed requests (2 sectors)
#: top at any odd sector, uncompressed ones at 3 and 7 [Table 5-2, §5.6.2].
CACHED_REQS_PER_HALF = 4
#: Groups of four sectors; a request fills one, responses share one.
QUADS = SECTORS_PER_HALF // 4


def request_groups(cached):
    """Groups of sectors the receiver reads a control half by, one request at most each: its
    groups of four sectors, or with an address cache its pairs of sectors (an uncompressed
    request counts in its upper pair). Each group's data half-flits follow those of the group
    below [§5.1.1]."""
    return CACHED_REQS_PER_HALF if cached else REQS_PER_HALF


def rx_req_entry(cached):
    """A request as the receiver keeps it until delivery (``pool`` = the field's POOL): with
    an address cache, with the field's cache fields, and a compressed request's ``addr``
    holding ReqAddr[19:0] until the cache supplies the rest."""
    return cached_request_layout if cached else request_layout

#: A response as the receiver keeps it (``rd`` 1 = read; ``pool`` is the field's POOL, a
#: credit attribute; UPLI outputs carry pool = 0).
rx_rsp_entry = data.StructLayout({
    "rd": 1, "num_beats": 2, "offset": 2, "last": 1, "status": 4, "tag": 11, "vc": 2,
    "pool": 1, "src_acc": 10, "dst_acc": 10,
})

#: Error kinds this stage finds from the field types and footprints alone.
_SECTOR_ERRORS = (RxError.RESERVED_FTYPE, RxError.FOOTPRINT, RxError.RESERVED_STATUS,
                  RxError.COMPRESSED_REQUEST)


class ControlDecoder(wiring.Component):
    """First decode stage of a control half-flit: where each field is, the responses, and the
    errors seen in field types and footprints.

    Field tops are found locally (README §1, [§5.1]): sectors 3 and 7 are always tops; sector
    ``4q+2`` is a top when sector ``4q+3`` holds a one-sector field, ``4q+1`` when ``4q+3`` does
    not hold a request, ``4q`` when moreover ``4q+1`` holds a one-sector field. A field's FTYPE is
    the top nibble of its top sector.

    Members
    -------
    half : In(HALF_BITS)
        The control half-flit (meant to come straight from a register).
    rsp_valid : Out(8), rsp : Out(ArrayLayout(rx_rsp_entry, 8))
        Responses by top sector.
    rsp_beats : Out(ArrayLayout(range(5), 8))
        Data beats each response calls for (0 for a write response).
    rsp_pick : Out(ArrayLayout(8, 8)), rsp_n : Out(range(9))
        Where the responses go when packed lowest sector first: bit ``i`` of ``rsp_pick[k]``
        is "the response at sector ``i`` is the ``k``-th"; and how many there are.
    pair_beats : Out(ArrayLayout(range(9), 4))
        Their sums per pair of sectors (one addition here, so that the next stage's credit
        check needs three).
    req_valid : Out(REQS_PER_HALF)
        An uncompressed request fills sectors ``4q .. 4q+3``.
    creq_valid : Out(4), req_pick : Out(ArrayLayout(4, 4)), req_n : Out(range(5))
        With ``cached`` only: a compressed request fills sectors ``2p, 2p+1``; and where the
        requests (compressed or not, by pair of sectors) go when packed in sector order, as
        ``rsp_pick``; how many there are.
    req_beats : Out(ArrayLayout(range(5), 4)), req_be : Out(4), req_data : Out(range(17))
        With ``cached`` only: the data beats of the request of each pair of sectors (an
        uncompressed one counts in its upper pair), whether a byte-enable half follows them,
        and the beats of all (so that the next stage's credit check and data half-flit counts
        start from registers).
    fc_valid : Out(8)
        A Flow Control / NOP field tops the sector.
    errors : Out(len(RxError))
        Reserved FTYPE, footprint, reserved status and (without ``cached``) compressed request
        (other kinds 0).

    Parameters
    ----------
    cached : bool
        The receiver has an address cache: compressed requests are fields, not errors.

    Latency: every output is registered, one clock after ``half``. Throughput: one half-flit
    per clock.
    """

    def __init__(self, cached=False):
        self._cached = cached
        cached_members = {
            "creq_valid": Out(CACHED_REQS_PER_HALF),
            "req_pick": Out(data.ArrayLayout(CACHED_REQS_PER_HALF, CACHED_REQS_PER_HALF)),
            "req_n": Out(range(CACHED_REQS_PER_HALF + 1)),
            "req_beats": Out(data.ArrayLayout(range(MAX_BEATS + 1), CACHED_REQS_PER_HALF)),
            "req_be": Out(CACHED_REQS_PER_HALF),
            "req_data": Out(range(CACHED_REQS_PER_HALF * MAX_BEATS + 1)),
        } if cached else {}
        super().__init__({
            **cached_members,
            "half": In(HALF_BITS),
            "rsp_valid": Out(SECTORS_PER_HALF),
            "rsp": Out(data.ArrayLayout(rx_rsp_entry, SECTORS_PER_HALF)),
            "rsp_beats": Out(data.ArrayLayout(range(MAX_BEATS + 1), SECTORS_PER_HALF)),
            "rsp_pick": Out(data.ArrayLayout(SECTORS_PER_HALF, SECTORS_PER_HALF)),
            "rsp_n": Out(range(SECTORS_PER_HALF + 1)),
            "pair_beats": Out(data.ArrayLayout(range(2 * MAX_BEATS + 1), SECTORS_PER_HALF // 2)),
            "req_valid": Out(REQS_PER_HALF),
            "fc_valid": Out(SECTORS_PER_HALF),
            "errors": Out(len(RxError)),
        })

    def elaborate(self, platform):
        m = Module()
        sec = control_half(self.half)
        ft = [flow_control(sec[s]).ftype for s in range(SECTORS_PER_HALF)]
        one = [Signal(name=f"one{s}") for s in range(SECTORS_PER_HALF)]   # 1-sector FTYPE
        four = [Signal(name=f"four{s}") for s in range(SECTORS_PER_HALF)]
        top = [Signal(name=f"top{s}") for s in range(SECTORS_PER_HALF)]
        for s in range(SECTORS_PER_HALF):
            m.d.comb += [
                one[s].eq((ft[s] == FType.FC_NOP) | (ft[s] == FType.SINGLE_BEAT_READ)
                          | (ft[s] == FType.WRITE_OR_MULTI)),
                four[s].eq(ft[s] == FType.REQUEST),
            ]
        for q in range(QUADS):
            b = 4 * q
            m.d.comb += [
                top[b + 3].eq(1), top[b + 2].eq(one[b + 3]), top[b + 1].eq(~four[b + 3]),
                top[b].eq(~four[b + 3] & one[b + 1]),
            ]
        err = {k: [] for k in _SECTOR_ERRORS if not (self._cached
                                                       and k == RxError.COMPRESSED_REQUEST)}
        self._responses(m, sec, ft, top, err)
        compressed = []                 # a compressed request tops the odd sector
        for s in range(SECTORS_PER_HALF):
            two = (ft[s] == FType.RESPONSE) | (ft[s] == FType.COMPRESSED_REQUEST)
            err[RxError.RESERVED_FTYPE].append(
                top[s] & (ft[s].as_value() > FType.WRITE_OR_MULTI.value))
            err[RxError.FOOTPRINT].append(top[s] & ((four[s] & (s % 4 != 3)) | (two & (s % 2 != 1))))
            if s % 2:
                compressed.append(top[s] & (ft[s] == FType.COMPRESSED_REQUEST))
            m.d.sync += self.fc_valid[s].eq(top[s] & (ft[s] == FType.FC_NOP))
        m.d.sync += [
            self.req_valid[q].eq(four[4 * q + 3]) for q in range(QUADS)
        ]
        if self._cached:
            m.d.sync += self.creq_valid.eq(Cat(*compressed))
            requests = [c | four[s] if s % 4 == 3 else c
                        for s, c in zip(range(1, SECTORS_PER_HALF, 2), compressed)]
            _pack(m, requests, self.req_pick, self.req_n, "req")
            self._request_beats(m, sec, ft, four, compressed)
        else:
            err[RxError.COMPRESSED_REQUEST] += compressed
        m.d.sync += self.errors.eq(Cat(*(Cat(*err[k]).any() if k in err else Const(0)
                                         for k in RxError)))
        return m

    def _request_beats(self, m, sec, ft, four, compressed):
        """With ``cached``: the data beats and byte-enable half of the request of each pair of
        sectors, from the fields' CMD and LEN (Table 5-33: CMD[2] = a write, CMD[1] = a
        WriteFull) or CMD and NUMBEATS; and the beats of all.

        The beats of all are summed by groups of four sectors, each from its own sectors'
        FTYPEs (sector ``4q+3`` tops an uncompressed request, else each odd sector holding a
        compressed request tops one: an uncompressed request's upper sector is never a
        compressed FTYPE), not from the field tops, so that one addition follows a few levels
        of logic."""
        quads = []
        for p, creq in enumerate(compressed):
            c = compressed_request(Cat(sec[2 * p], sec[2 * p + 1]))
            n = Signal(range(MAX_BEATS + 1), name=f"req{p}_beats")
            be = Signal(name=f"req{p}_be")
            write = c.cmd[2]
            n_c, be_c = Mux(write, c.len + 1, 0), write & ~c.cmd[1]
            # The pair's beats if a compressed request is there, by its own FTYPE alone.
            alone = Signal(range(MAX_BEATS + 1), name=f"req{p}_alone")
            m.d.comb += alone.eq(Mux(ft[2 * p + 1] == FType.COMPRESSED_REQUEST, n_c, 0))
            if p % 2:
                f = uncompressed_request(Cat(*(sec[s] for s in range(2 * p - 2, 2 * p + 2))))
                full = four[2 * p + 1]
                full_beats = request_beats(f.cmd, f.num_beats)
                m.d.comb += [
                    n.eq(Mux(creq, n_c, Mux(full, full_beats, 0))),
                    be.eq(Mux(creq, be_c, full & f.cmd[5]
                              & (f.cmd != ReqCmd.WRITE_FULL.value))),
                ]
                quad = Signal(range(2 * MAX_BEATS + 1), name=f"req_quad{p // 2}_beats")
                m.d.comb += quad.eq(Mux(full, full_beats, quads.pop() + alone))
                quads.append(quad)
            else:
                m.d.comb += [n.eq(Mux(creq, n_c, 0)), be.eq(creq & be_c)]
                quads.append(alone)
            m.d.sync += [self.req_beats[p].eq(n), self.req_be[p].eq(be)]
        m.d.sync += self.req_data.eq(sum(quads[1:], quads[0]))

    def _responses(self, m, sec, ft, top, err):
        """Responses at each top sector, with the data beats they call for."""
        beats, valids = [], []
        for s in range(SECTORS_PER_HALF):
            e = Signal(rx_rsp_entry, name=f"rsp{s}")
            single = single_beat_response(sec[s])
            cwr = write_or_multi_response(sec[s])
            n = Signal(range(MAX_BEATS + 1), name=f"rsp{s}_beats")
            is_single = top[s] & (ft[s] == FType.SINGLE_BEAT_READ)
            is_cwr = top[s] & (ft[s] == FType.WRITE_OR_MULTI)
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
                full = uncompressed_response(Cat(sec[s - 1], sec[s]))
                is_full = top[s] & (ft[s] == FType.RESPONSE)
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
            m.d.sync += [self.rsp_valid[s].eq(valid), self.rsp[s].eq(e), self.rsp_beats[s].eq(n)]
            beats.append(n)
            valids.append(valid)
        _pack(m, valids, self.rsp_pick, self.rsp_n, "")
        for p in range(SECTORS_PER_HALF // 2):
            m.d.sync += self.pair_beats[p].eq(beats[2 * p] + beats[2 * p + 1])


def _pack(m, v, pick, count, name):
    """``pick`` and ``count`` (registers) from the valid bits ``v``: bit ``i`` of ``pick[k]``
    is "``v[i]`` is the ``k``-th valid one", ``count`` how many are valid. Built from "exactly
    ``k`` of the bits below are valid" terms, not from adders, so that each pick is a small
    logic function of the valid bits, registered for the next stage's wide multiplexers."""
    n = len(v)
    exactly = [[Const(1)]]                   # exactly[i][k]: k of v[0 .. i-1] set
    for i in range(n):
        prev = exactly[-1]
        row = []
        for k in range(i + 2):
            x = Signal(name=f"{name}exactly{i + 1}_{k}")
            m.d.comb += x.eq((prev[k] & ~v[i] if k <= i else Const(0))
                             | (prev[k - 1] & v[i] if k else Const(0)))
            row.append(x)
        exactly.append(row)
    total = exactly[n]
    m.d.sync += count.eq(or_all([Mux(total[k], k, 0) for k in range(1, n + 1)]))
    for k in range(n):
        m.d.sync += pick[k].eq(
            Cat(*(v[i] & exactly[i][k] if i >= k else Const(0) for i in range(n))))
