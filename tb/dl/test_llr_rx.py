# SPDX-License-Identifier: BSD-2-Clause
"""A directed case for the DL receiver's replay rules (``rtl/scaleup_ip/dl/llr/rx.py``), outside what the
in-order proof (``tb/dl/test_replay_proof.py``) assumes: a replay cut short by NOP flits.

LlrTx sends NOP flits while the link is not Up, in the middle of a replay too, each carrying
Tx_last_seq [§6.6.6.1]. A partner that did not resync takes a Command NOP whose flitSeqLo
matches its Rx_last_seq_calc; were that to clear Rx_bad_crc_count, 8 replayed flits lost around
it would not make the sequence ambiguous, and the next Command flit, 8 ahead, would be taken in
place of the first one lost (flit 31 right after 22). Amaranth's simulator, no Verilator.
"""

from amaranth.sim import Simulator

from scaleup_ip.dl import BEATS_PER_FLIT, DlConfig, FlitOp, command_header, explicit_header
from scaleup_ip.dl.llr import LlrRx


def _header(seq, payload, explicit, replayed):
    if explicit:
        op = FlitOp.REPLAY if replayed else FlitOp.ORIGINAL
        return explicit_header.const({"op": op, "payload": payload, "seq": seq}).as_bits()
    return command_header.const({"op": FlitOp.ACK, "payload": payload, "ack_req_seq": 1,
                                 "seq_lo": seq & 7}).as_bits()


#: (sequence number, payload, Explicit, CRC good, replayed), one per flit, as they arrive.
FLITS = (
    [(s, 1, s % 7 == 1, True, False) for s in range(1, 22)]          # 1 .. 21 taken
    + [(22, 1, False, False, False)]                                  # 22 lost
    + [(s, 1, False, True, False) for s in range(23, 31)]             # 23: a replay is asked
    + [(22, 1, True, True, True)]                                     # the replay: 22 taken
    + [(23, 1, False, False, True), (24, 1, False, False, True)]      # 23, 24 lost
    + [(30, 0, False, True, False)]                                   # not Up: NOP, seq 30
    + [(s, 1, False, False, True) for s in range(25, 31)]             # 25 .. 30 lost
    + [(31, 1, False, True, False), (32, 1, False, True, False)]      # new flits
)


def test_nop_in_a_cut_replay():
    dut = LlrRx(DlConfig())
    delivered = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.replay_limit, 50)
        for seq, payload, explicit, good, replayed in FLITS:
            for beat in range(BEATS_PER_FLIT):
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.p.crc_ok, good)
                ctx.set(dut.i.p.header, _header(seq, payload, explicit, replayed))
                ctx.set(dut.i.p.data, seq)
                ctx.set(dut.i.p.last, beat == BEATS_PER_FLIT - 1)
                await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(2 * BEATS_PER_FLIT)

    async def watch(ctx):
        beat = 0
        async for _, _, valid, data in ctx.tick().sample(dut.o.valid, dut.o.p.data):
            if valid:
                if beat == 0:
                    delivered.append(data)
                beat = (beat + 1) % BEATS_PER_FLIT

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_process(watch)
    sim.run()
    assert delivered == list(range(1, 23)), f"delivered {delivered}"
