# SPDX-License-Identifier: BSD-2-Clause
"""A watcher of an AXI4 subordinate port's answers: every R burst has exactly its AR's beats
with RLAST on the last, in AR order per ID; every B answers an AW of its ID [AXI4 A5.3]."""

from collections import Counter, defaultdict, deque

import cocotb
from cocotb.triggers import Event, RisingEdge

__all__ = ["AxiAnswerCheck"]


class AxiAnswerCheck:
    """Watches ``<prefix>__ar*``, ``__r*``, ``__aw*`` and ``__b*`` of ``dut`` on ``clk``;
    raises on the clock a rule is broken. :meth:`idle` checks nothing is outstanding;
    ``seen`` counts the handshakes of each channel (``"ar"``, ``"r"``, ``"aw"``, ``"b"``).

    It samples every clock while a VALID is high and sleeps while none is, until one rises
    (as cocotbext-axi's monitors do): an idle port costs the simulation nothing (a port
    waiting out a 100,000-clock completion timeout ran 3.8 k clocks/s when sampled every
    clock)."""

    def __init__(self, dut, prefix, clk):
        self.clk = clk
        self.reads = defaultdict(deque)     # ID -> beats of each outstanding AR, in order
        self.writes = defaultdict(int)      # ID -> AWs without their B
        self.beats = defaultdict(int)       # ID -> beats of the current R burst so far
        self.seen = Counter()
        sides = [side for side, channel in (("read", "ar"), ("write", "aw"))
                 if hasattr(dut, f"{prefix}__{channel}valid")]
        names = {"read": ("arvalid", "arready", "arid", "arlen", "rvalid", "rready", "rid",
                          "rlast"),
                 "write": ("awvalid", "awready", "awid", "bvalid", "bready", "bid")}
        self.sig = {name: getattr(dut, f"{prefix}__{name}")
                    for side in sides for name in names[side]}
        self.sides = [getattr(self, f"_{side}_side") for side in sides]
        valids = [self.sig[name] for name in self.sig if name.endswith("valid")]
        self._wake = Event()
        for valid in valids:
            cocotb.start_soon(self._rises(valid))
        cocotb.start_soon(self._watch(valids))

    async def _rises(self, valid):
        while True:
            await RisingEdge(valid)
            self._wake.set()

    async def _watch(self, valids):
        while True:
            await RisingEdge(self.clk)
            for side in self.sides:
                side()
            if not any(valid.value for valid in valids):
                self._wake.clear()
                await self._wake.wait()

    def _read_side(self):
        sig = self.sig
        if sig["arvalid"].value and sig["arready"].value:
            self.seen["ar"] += 1
            self.reads[int(sig["arid"].value)].append(int(sig["arlen"].value) + 1)
        if sig["rvalid"].value and sig["rready"].value:
            self.seen["r"] += 1
            rid = int(sig["rid"].value)
            assert self.reads[rid], f"an R beat of ID {rid} with no AR outstanding"
            self.beats[rid] += 1
            want = self.reads[rid][0]
            last = bool(sig["rlast"].value)
            assert self.beats[rid] <= want, f"ID {rid}: more than the AR's {want} beats"
            assert last == (self.beats[rid] == want), \
                f"ID {rid}: RLAST {int(last)} on beat {self.beats[rid]} of {want}"
            if last:
                self.reads[rid].popleft()
                self.beats[rid] = 0

    def _write_side(self):
        sig = self.sig
        if sig["awvalid"].value and sig["awready"].value:
            self.seen["aw"] += 1
            self.writes[int(sig["awid"].value)] += 1
        if sig["bvalid"].value and sig["bready"].value:
            self.seen["b"] += 1
            bid = int(sig["bid"].value)
            assert self.writes[bid] > 0, f"a B of ID {bid} with no AW outstanding"
            self.writes[bid] -= 1

    def idle(self):
        """Check that every AR and AW has had its answer."""
        reads = {k: list(v) for k, v in self.reads.items() if v}
        writes = {k: v for k, v in self.writes.items() if v}
        assert not reads and not writes, f"unanswered: reads {reads}, writes {writes}"
