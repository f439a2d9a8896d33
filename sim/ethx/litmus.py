# SPDX-License-Identifier: BSD-2-Clause
"""The release message-passing litmus on two ETH-X bridges (:class:`sim.ethx.pair_env.PairEnv`),
for the system tests (:mod:`sim.ethx.axi_litmus` is the same test in hardware)."""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiResp

from sim.ethx.env import cycle
from sim.ethx.pair import NODES

__all__ = ["message_passing", "release_litmus"]

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
        tb.progress.done += 1
    return stale


#: Message passing with acquire: the flag, the data (:data:`MP_WORDS` words of 8 bytes), the
#: consumer's AXI IDs (acquire, data) and the producer's (data writes round-robin, the flag).
MP_FLAG, MP_DATA, MP_WORDS = 0xA000, 0xB000, 32
ACQUIRE_ID, READ_ID, FLAG_ID = 4, 5, 3


def _words(round_):
    """The data of round ``round_``: word k holds (round, k), 4 bytes each."""
    return b"".join(round_.to_bytes(4, "little") + k.to_bytes(4, "little")
                    for k in range(MP_WORDS))


async def message_passing(tb, rounds):
    """Release and acquire, both through the bridges: a producer on A's GPU writes
    :data:`MP_WORDS` words to B's memory (relaxed, 64-byte bursts on AXI IDs 0-2), then the
    round number to the flag (release); a consumer on A's GPU (other AXI IDs) reads the flag
    with acquire and, without waiting for it, the data.

    Two checks a round: the data read's AR reaches B's memory only after the acquire's R is back
    at A's GPU (acquire: a monitor on both ports), and every data word is of the flag's round or
    later (release, and acquire). Returns (consumer reads, distinct flag values seen, failures:
    a list of (kind, flag, detail))."""
    dut, memory, gpu = tb.dut, tb.ram["b"], tb.gpu["a"]
    memory.write(MP_FLAG, bytes(4))
    memory.write(MP_DATA, _words(0))
    data_ar, flag_r = [], []

    async def monitor():
        """Clock of each data AR at B's memory port and of each acquire R at A's GPU port."""
        while True:
            await RisingEdge(dut.clk)
            if (dut.b_m_axi__arvalid.value and dut.b_m_axi__arready.value
                    and MP_DATA <= int(dut.b_m_axi__araddr.value) < MP_DATA + 8 * MP_WORDS):
                data_ar.append(cycle())
            if (dut.a_s_axi__rvalid.value and dut.a_s_axi__rready.value
                    and dut.a_s_axi__rlast.value and int(dut.a_s_axi__rid.value) == ACQUIRE_ID):
                flag_r.append(cycle())

    done, failures, seen, reads = False, [], set(), 0

    async def producer():
        nonlocal done
        to_b = tb.user_bits(NODES["b"])
        for round_ in range(1, rounds + 1):
            data = _words(round_)
            writes = [gpu.init_write(MP_DATA + at, data[at:at + 64], awid=at // 64 % 3, user=to_b)
                      for at in range(0, len(data), 64)]
            writes.append(gpu.init_write(MP_FLAG, round_.to_bytes(4, "little"), awid=FLAG_ID,
                                         user=tb.user_bits(NODES["b"], order=1)))
            for event in writes:
                await event.wait()
                assert event.data.resp == AxiResp.OKAY
            await ClockCycles(dut.clk, tb.rng.randrange(200))
            tb.progress.done += 1
        done = True

    watcher = cocotb.start_soon(monitor())
    writer = cocotb.start_soon(producer())
    while not done:
        ars, rs = len(data_ar), len(flag_r)
        flag = gpu.init_read(MP_FLAG, 4, arid=ACQUIRE_ID, user=tb.user_bits(NODES["b"], order=1))
        data = gpu.init_read(MP_DATA, 8 * MP_WORDS, arid=READ_ID, user=tb.user_bits(NODES["b"]))
        await flag.wait()
        await data.wait()
        reads += 1
        value = int.from_bytes(flag.data.data, "little")
        seen.add(value)
        if data_ar[ars] <= flag_r[rs]:
            failures.append(("acquire", value, f"data AR at B on clock {data_ar[ars]}, "
                                               f"acquire R at A on clock {flag_r[rs]}"))
        words = data.data.data
        for k in range(MP_WORDS):
            got, index = (int.from_bytes(words[8 * k + s:8 * k + s + 4], "little") for s in (0, 4))
            if index != k or got < value:
                failures.append(("stale", value, f"word {k}: round {got}, index {index}"))
    await writer
    watcher.kill()
    return reads, len(seen), failures
