# SPDX-License-Identifier: BSD-2-Clause
"""UPLI bus-functional models: credit-obeying senders and credit-releasing receivers for the
channels of a credit-based UPLI port [UALink 1.0 §2.6, §2.7.8].

A channel is found by its prefix: ``<prefix>__vld``, ``<prefix>__payload``,
``<prefix>__credit`` (the signature :func:`scaleup_ip.tl.layout.upli_channel`).
"""

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from scaleup_ip.model.tl.flit import ReadResponse, Request
from scaleup_ip.tl import (
    orig_data_layout,
    rd_rsp_layout,
    request_layout,
    upli_credit_layout,
    wr_rsp_layout,
)

__all__ = ["Credits", "UpliItemSender", "UpliReceiver", "request_beats", "response_beats"]

#: Most credits one clock of ``*CreditPort0Num`` carries (Num + 1).
_NUM_MAX = 4


class Credits:
    """Credits a sender holds on one channel, read from its ``credit`` wires every clock."""

    def __init__(self, dut, prefix):
        self.pins = getattr(dut, f"{prefix}__credit")
        self.pool, self.vc, self.ready = 0, [0] * 4, False

    def sample(self):
        credit = upli_credit_layout.from_bits(int(self.pins.value))
        if credit.vld & 1:
            n = int(credit.num[0]) + 1
            if credit.pool & 1:
                self.pool += n
            else:
                self.vc[int(credit.vc[0])] += n
        self.ready = self.ready or bool(credit.init_done & 1)

    def choose(self, vc, n):
        """The ``pool`` bit ``n`` credits for ``vc`` would go with (its own first, else pool),
        or ``None`` if they are not held."""
        if self.vc[vc] >= n:
            return 0
        return 1 if self.pool >= n else None

    def spend(self, vc, n, pool):
        if pool:
            self.pool -= n
        else:
            self.vc[vc] -= n


class UpliItemSender:
    """Sends golden-model items on the four channels a TL takes from its local originator and
    completer, ``<prefix>req``, ``orig``, ``rd_rsp`` and ``wr_rsp`` (or those of ``channels``),
    only with credit: a data command with its beat 0 and credits for all its beats, the rest
    back to back."""

    def __init__(self, dut, prefix="", channels=("req", "orig", "rd_rsp", "wr_rsp")):
        self.dut = dut
        self.channels = {name: (getattr(dut, f"{prefix}{name}__vld"),
                                getattr(dut, f"{prefix}{name}__payload"),
                                Credits(dut, f"{prefix}{name}"))
                         for name in channels}
        self.requests, self.responses, self.raw, self.busy = [], [], [], False
        for vld, _, _ in self.channels.values():
            vld.value = 0
        cocotb.start_soon(self._run())

    def send(self, item):
        (self.requests if isinstance(item, Request) else self.responses).append(item)

    def send_raw(self, clocks):
        """Drive ``clocks``, a list of ``{channel: payload bits}``, one clock each, exactly as
        given (protocol violations included), once no item is in progress and pool credits
        for all its beats are held. The payloads must name pool credits (``pool`` = 1)."""
        self.raw.append(clocks)

    def idle(self):
        return not (self.requests or self.responses or self.raw or self.busy)

    def _drive(self, name, beats):
        if name not in self.channels:
            return
        vld, payload, _ = self.channels[name]
        vld.value = int(bool(beats))
        if beats:
            payload.value = beats.pop(0)

    def _raw_credits(self, clocks):
        """Spend pool credits for every beat of ``clocks`` if all are held."""
        need = {name: sum(name in c for c in clocks) for name in self.channels}
        if not all(self.channels[n][2].ready and self.channels[n][2].pool >= k
                   for n, k in need.items()):
            return False
        for name, k in need.items():
            self.channels[name][2].pool -= k
        return True

    async def _run(self):
        req_beats, rsp_beats = [], []                   # packed beats still to go, in order
        raw = []
        while True:
            await RisingEdge(self.dut.clk)
            for _, _, credits in self.channels.values():
                credits.sample()
            if raw or (self.raw and not (req_beats or rsp_beats)
                       and self._raw_credits(self.raw[0])):
                raw = raw or self.raw.pop(0)
                clock = raw.pop(0)
                for name in self.channels:
                    self._drive(name, [clock[name]] if name in clock else [])
                self.busy = bool(raw)
                continue
            self.busy = bool(req_beats or rsp_beats)
            if not req_beats and self.requests and not self.raw:
                req_beats = self._request(self.requests[0])
                if req_beats:
                    self.requests.pop(0)
            if not rsp_beats and self.responses and not self.raw:
                rsp_beats = self._response(self.responses[0])
                if rsp_beats:
                    self.responses.pop(0)
            head = req_beats.pop(0) if req_beats and req_beats[0][0] == "req" else None
            self._drive("req", [head[1]] if head else [])
            self._drive("orig", [req_beats.pop(0)[1]] if req_beats else [])
            rd = rsp_beats and rsp_beats[0][0] == "rd_rsp"
            self._drive("rd_rsp", [rsp_beats.pop(0)[1]] if rd else [])
            self._drive("wr_rsp", [rsp_beats.pop(0)[1]] if rsp_beats and not rd else [])

    def _request(self, r):
        credits = self.channels["req"][2]
        data = self.channels["orig"][2]
        if not (credits.ready and data.ready):
            return []
        pool = credits.choose(r.vc, 1)
        data_pool = data.choose(r.vc, r.beats) if r.beats else 0
        if pool is None or data_pool is None:
            return []
        credits.spend(r.vc, 1, pool)
        if r.beats:
            data.spend(r.vc, r.beats, data_pool)
        return request_beats(r, pool, data_pool)

    def _response(self, r):
        name = "rd_rsp" if isinstance(r, ReadResponse) else "wr_rsp"
        credits = self.channels[name][2]
        if not credits.ready:
            return []
        n = r.beats if name == "rd_rsp" else 1
        pool = credits.choose(r.vc, n)
        if pool is None:
            return []
        credits.spend(r.vc, n, pool)
        return response_beats(r, pool)


def request_beats(r, pool=1, data_pool=1):
    """The UPLI transfers of request ``r``: ``[("req", bits), ("orig", bits), ...]``, in order
    (beat 0 goes in the request's clock)."""
    head = request_layout.const({
        "cmd": r.cmd, "vc": r.vc, "asi": r.asi, "tag": r.tag, "attr": r.attr,
        "len": r.length, "metadata": r.metadata, "addr": r.addr, "src_acc": r.src_acc,
        "dst_acc": r.dst_acc, "num_beats": r.num_beats, "pool": pool}).as_bits()
    beats = [("req", head)]
    for k, (d, be, err) in enumerate(zip(r.data, r.byte_en, r.error)):
        beats.append(("orig", orig_data_layout.const({
            "data": int.from_bytes(d, "little"), "byte_en": be, "offset": k,
            "last": k == r.beats - 1, "error": err, "vc": r.vc,
            "pool": data_pool}).as_bits()))
    return beats


def response_beats(r, pool=1):
    """The UPLI transfers of response ``r``: ``[("rd_rsp", bits), ...]`` or
    ``[("wr_rsp", bits)]``."""
    if not isinstance(r, ReadResponse):
        return [("wr_rsp", wr_rsp_layout.const({
            "vc": r.vc, "pool": pool, "tag": r.tag, "src_acc": r.src_acc,
            "dst_acc": r.dst_acc, "status": r.status}).as_bits())]
    multi = r.num_beats != 0
    return [("rd_rsp", rd_rsp_layout.const({
        "data": int.from_bytes(d, "little"), "vc": r.vc, "pool": pool, "tag": r.tag,
        "src_acc": r.src_acc, "dst_acc": r.dst_acc, "num_beats": r.num_beats,
        "status": r.status, "offset": k if multi else r.offset,
        "last": (k == r.num_beats) if multi else r.last, "error": err}).as_bits())
        for k, (d, err) in enumerate(zip(r.data, r.error))]


class UpliReceiver:
    """Receives one channel ``<prefix>``: after reset releases ``pool`` pool credits and
    ``vcs[v]`` credits of each VC ``v`` (one per clock, pool ones up to four), then
    ``CreditInitDone``; checks every beat was covered by a credit of the kind it names; collects
    it (``got``, and the clock of each in ``cycles``); returns each credit, with the beat's
    pool/VC, with probability ``give_back`` per clock."""

    def __init__(self, dut, prefix, layout, rng, pool, vcs=(0, 0, 0, 0), give_back=0.5):
        self.dut, self.layout, self.rng, self.give_back = dut, layout, rng, give_back
        self.vld = getattr(dut, f"{prefix}__vld")
        self.payload = getattr(dut, f"{prefix}__payload")
        self.pins = getattr(dut, f"{prefix}__credit")
        self.pool_left = pool
        self.vc_left = [(False, v) for v, n in enumerate(vcs) for _ in range(n)]
        self.given = {"pool": 0, 0: 0, 1: 0, 2: 0, 3: 0}
        self.got, self.cycles, self.returns, self.cycle = [], [], [], 0
        self.pins.value = 0
        cocotb.start_soon(self._drive())
        cocotb.start_soon(self._watch())

    def outstanding(self):
        """Credits the sender holds or that are on their way back to it, by kind."""
        counts = dict(self.given)
        for pool, vc in self.returns:
            counts["pool" if pool else vc] += 1
        return counts

    def _next(self):
        """What to put on the credit wires this clock: ``(pool, vc, n)`` or ``None``."""
        if self.pool_left:
            n = min(self.pool_left, _NUM_MAX)
            self.pool_left -= n
            return True, 0, n
        if self.vc_left:
            return (*self.vc_left.pop(0), 1)
        if self.returns and self.rng.random() < self.give_back:
            return (*self.returns.pop(self.rng.randrange(len(self.returns))), 1)
        return None

    async def _drive(self):
        while True:
            await RisingEdge(self.dut.clk)
            if self.dut.rst.value:
                continue
            released = not (self.pool_left or self.vc_left)
            value = {"init_done": int(released), "vld": 0, "pool": 0, "vc": [0] * 4,
                     "num": [0] * 4}
            credit = self._next()
            if credit:
                pool, vc, n = credit
                value.update(vld=1, pool=int(pool), vc=[vc, 0, 0, 0], num=[n - 1, 0, 0, 0])
                self.given["pool" if pool else vc] += n
            self.pins.value = upli_credit_layout.const(value).as_bits()

    async def _watch(self):
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.cycle += 1
            if self.dut.rst.value or not self.vld.value:
                continue
            beat = self.layout.from_bits(int(self.payload.value))
            kind = "pool" if beat.pool else int(beat.vc)
            assert self.given[kind] > 0, f"beat without a {kind} credit"
            self.given[kind] -= 1
            self.got.append(beat)
            self.cycles.append(self.cycle)
            self.returns.append((bool(beat.pool), int(beat.vc)))
