# SPDX-License-Identifier: BSD-2-Clause
"""What the cocotb benches of two ETH-X bridges (:class:`sim.ethx.pair.EthxPair`) share: an
AxiMaster on each GPU port, an AxiRam of random bytes behind each memory port, the channels
both ways, AxUSER values, and the end-of-run checks."""

import logging

import cocotb
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiBus, AxiMaster, AxiRam, AxiResp

from scaleup_ip.ethx import DeframerCount, ParseCount, user_layout
from scaleup_ip.model.ethx import bridge as model

from sim import progress
from sim.ethx.link.channel import EthxChannel
from sim.ethx.env import EthxEnv
from sim.ethx.pair import NODES, WINDOW_LOG2, other
from sim.ethx.traffic import random_access

__all__ = ["MEMORY", "PairEnv"]

#: Bytes of each node's memory model: its access window.
MEMORY = 1 << WINDOW_LOG2
#: Random traffic: each worker's region of the other node's memory (below 512 KB).
REGION = 0x10000


class PairEnv(EthxEnv):
    """Both bridges of the pair with their GPUs (``gpu[end]``), memories (``ram[end]``) and the
    channels from each end (``channel[end]``, see :class:`~sim.ethx.link.channel.EthxChannel` for
    ``delay`` and ``line_rate``; none with ``channels`` false: the top has its own wire);
    ``quiet`` keeps the AXI models from logging each access; with ``axi`` false there are no
    GPU or memory models: the top has its own traffic and memories."""

    def __init__(self, dut, *, delay=20, line_rate=False, quiet=False, channels=True, axi=True):
        super().__init__(dut)
        self.user = user_layout(self.config)
        self.progress = progress.Counter()      # accesses and litmus rounds done
        self.channel = {e: EthxChannel(dut, self.config, e, other(e), delay=delay,
                                       line_rate=line_rate) for e in NODES} if channels else {}
        if not axi:
            return
        if quiet:           # the AXI models log every transaction at INFO
            for e in NODES:
                for port in ("s_axi", "m_axi"):
                    logging.getLogger(f"cocotb.{dut._name}.{e}_{port}").setLevel(logging.WARNING)
        self.gpu = {e: AxiMaster(AxiBus.from_prefix(dut, f"{e}_s_axi", bus_separator="__"),
                                 dut.clk, dut.rst) for e in NODES}
        self.ram = {e: AxiRam(AxiBus.from_prefix(dut, f"{e}_m_axi", bus_separator="__"),
                              dut.clk, dut.rst, size=MEMORY) for e in NODES}
        for ram in self.ram.values():
            ram.write(0, self.rng.randbytes(MEMORY))

    def user_bits(self, dest, order=0):
        """AxUSER for node ``dest`` on VC 0, ``order`` the release/acquire bit."""
        return self.user.const({"node": dest, "vc": 0, "order": order}).as_bits()

    async def worker(self, end, count, expect, base, span=REGION // 2):
        """``count`` random accesses (:func:`~sim.ethx.traffic.random_access`, random AXI IDs)
        one after another from ``end``'s GPU to the other node's bytes ``base .. base +
        span``, each checked against and applied to ``expect[other end]``. Returns the bytes
        read and written."""
        far = other(end)
        memory, bus = expect[far], self.config.data_width // 8
        moved = 0
        for k in range(count):
            access = random_access(self.rng, bus, base, span)
            ident = {("awid" if access.write else "arid"):
                     self.rng.randrange(1 << self.config.id_width)}
            event, data = access.call(self.gpu[end], self.rng, user=self.user_bits(NODES[far]),
                                      **ident)
            await event.wait()
            assert event.data.resp == AxiResp.OKAY, (end, k, access)
            if access.write:
                access.apply(memory, data)
            else:
                assert event.data.data == access.expect(memory), (end, k, access)
            moved += access.length
            self.progress.done += 1
        return moved

    async def traffic(self, count, workers=3, settle=20_000):
        """Random traffic from both GPUs at once, ``workers`` workers each (regions of
        :data:`REGION` bytes apart), ``count`` accesses a worker; then, once every write has
        landed (with write proxy they land after their B; waiting up to ``settle`` clocks),
        both memories checked whole.
        Returns the bytes read and written."""
        expect = {e: bytearray(memory) for e, memory in self.memories().items()}
        tasks = [cocotb.start_soon(self.worker(e, count, expect, REGION * (1 + w)))
                 for e in NODES for w in range(workers)]
        moved = 0
        for task in tasks:
            moved += await task
        for _ in range(settle // 200):
            if self.memories() == {e: bytes(m) for e, m in expect.items()}:
                break
            await ClockCycles(self.dut.clk, 200)
        for e, memory in self.memories().items():
            assert memory == bytes(expect[e]), f"memory of {e}"
        return moved

    def memories(self):
        """Each end's memory, as bytes."""
        return {e: self.ram[e].read(0, MEMORY) for e in NODES}

    def errors(self, end, ignore=()):
        """``end``'s nonzero drop and refusal counts of the deframer and the record parser, but
        for the kinds in ``ignore``."""
        bad = {}
        for port, kinds in ((f"{end}_counts_deframer", DeframerCount),
                            (f"{end}_counts_parse", ParseCount)):
            for kind, value in self.counts(kinds, port).items():
                if value and kind not in (DeframerCount.FRAMES, ParseCount.REQUESTS,
                                          ParseCount.RESPONSES, *ignore):
                    bad[kind.name] = value
        return bad

    def check_no_errors(self):
        """No end dropped a frame or a record."""
        for e in NODES:
            assert not self.errors(e), f"{e}: {self.errors(e)}"

    def check_frames(self, elsewhere=False):
        """Every frame each end sent is a good frame of the golden model's format, addressed to
        the other end (or, with ``elsewhere``, to any node). Returns the decoded frames to other
        nodes, by (source, destination node)."""
        foreign = {}
        for src, channel in self.channel.items():
            states = {}
            for _, frame in channel.frames:
                dst = model.node_of(frame[:6])
                decoded = model.decode_frame(frame, dst, states.setdefault(dst, {}),
                                             fcs=self.config.fcs, mtu=self.config.mtu)
                assert isinstance(decoded, model.Decoded) and decoded.error is None, decoded
                assert decoded.src == NODES[src]
                assert not any(getattr(r, "stale", False) for r in decoded.records)
                if dst != NODES[other(src)]:
                    assert elsewhere, f"{src} sent a frame to node {dst}"
                    foreign.setdefault((src, dst), []).append(decoded)
        return foreign
