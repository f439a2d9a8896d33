# SPDX-License-Identifier: BSD-2-Clause
"""A watcher of an AXI4 subordinate port's answers: every R burst has exactly its AR's beats
with RLAST on the last, in AR order per ID; every B answers an AW of its ID [AXI4 A5.3]."""

from collections import defaultdict, deque

import cocotb
from cocotb.triggers import RisingEdge

__all__ = ["AxiAnswerCheck"]


class AxiAnswerCheck:
    """Watches ``<prefix>__ar*``, ``__r*``, ``__aw*`` and ``__b*`` of ``dut`` on ``clk``;
    raises on the clock a rule is broken. :meth:`idle` checks nothing is outstanding."""

    def __init__(self, dut, prefix, clk):
        self.dut, self.prefix, self.clk = dut, prefix, clk
        self.reads = defaultdict(deque)     # ID -> beats of each outstanding AR, in order
        self.writes = defaultdict(int)      # ID -> AWs without their B
        self.beats = defaultdict(int)       # ID -> beats of the current R burst so far
        cocotb.start_soon(self._watch())

    def _get(self, name):
        return getattr(self.dut, f"{self.prefix}__{name}")

    async def _watch(self):
        get = self._get
        reads = hasattr(self.dut, f"{self.prefix}__arvalid")
        writes = hasattr(self.dut, f"{self.prefix}__awvalid")
        while True:
            await RisingEdge(self.clk)
            if reads:
                self._read_side(get)
            if writes:
                self._write_side(get)

    def _read_side(self, get):
        if get("arvalid").value and get("arready").value:
            self.reads[int(get("arid").value)].append(int(get("arlen").value) + 1)
        if get("rvalid").value and get("rready").value:
            rid = int(get("rid").value)
            assert self.reads[rid], f"an R beat of ID {rid} with no AR outstanding"
            self.beats[rid] += 1
            want = self.reads[rid][0]
            last = bool(get("rlast").value)
            assert self.beats[rid] <= want, f"ID {rid}: more than the AR's {want} beats"
            assert last == (self.beats[rid] == want), \
                f"ID {rid}: RLAST {int(last)} on beat {self.beats[rid]} of {want}"
            if last:
                self.reads[rid].popleft()
                self.beats[rid] = 0

    def _write_side(self, get):
        if get("awvalid").value and get("awready").value:
            self.writes[int(get("awid").value)] += 1
        if get("bvalid").value and get("bready").value:
            bid = int(get("bid").value)
            assert self.writes[bid] > 0, f"a B of ID {bid} with no AW outstanding"
            self.writes[bid] -= 1

    def idle(self):
        """Check that every AR and AW has had its answer."""
        reads = {k: list(v) for k, v in self.reads.items() if v}
        writes = {k: v for k, v in self.writes.items() if v}
        assert not reads and not writes, f"unanswered: reads {reads}, writes {writes}"
