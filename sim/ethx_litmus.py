"""The release message-passing litmus on two ETH-X bridges (:class:`sim.ethx_pair_env.PairEnv`),
for the system test and ``make sim``."""

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiResp

from .ethx_pair import NODES

__all__ = ["release_litmus"]

FLAG_AT, DATA_AT = 0x8000, 0x9000


async def release_litmus(tb, rounds):
    """A's GPU writes data to B's memory (64-byte relaxed writes on several AXI IDs), then a
    flag (release); a watcher on B's memory checks, the clock the flag shows a round, that the
    round's data is there. Returns the rounds that saw the flag first (none, if releases
    work)."""
    memory, dut = tb.ram["b"], tb.dut
    stale = []

    async def watch(round_, data):
        while memory.read(FLAG_AT, 4) != round_.to_bytes(4, "little"):
            await RisingEdge(dut.clk)
        if memory.read(DATA_AT, len(data)) != data:
            stale.append(round_)

    for round_ in range(1, rounds + 1):
        data = tb.rng.randbytes(tb.rng.choice([64, 256, 1024]))
        watcher = cocotb.start_soon(watch(round_, data))
        # Queued in this order (init_write keeps the order of the calls).
        writes = [tb.gpu["a"].init_write(DATA_AT + 64 * k, data[64 * k:64 * k + 64],
                                         awid=k % 4, user=tb.user_bits(NODES["b"]))
                  for k in range(len(data) // 64)]
        flag = tb.gpu["a"].init_write(FLAG_AT, round_.to_bytes(4, "little"), awid=3,
                                      user=tb.user_bits(NODES["b"], order=1))
        for event in writes + [flag]:
            await event.wait()
            assert event.data.resp == AxiResp.OKAY
        await watcher
    return stale
