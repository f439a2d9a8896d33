"""cocotb side of ``make sim``: a stream of Ethernet frames and DL-sized blocks through the CRC.

Frames travel with their FCS (the engine checks them, ``ok``); 640-byte blocks travel bare (the
engine generates their CRC). Every result is compared with :func:`zlib.crc32`. The figures go to
the JSON file named by ``SIM_REPORT``.
"""

import json
import os
import struct
import time
import zlib

import cocotb
from cocotb.triggers import ClockCycles
from cocotb.utils import get_sim_time

from sim import progress
from sim.crc_env import PERIOD_NS, CrcEnv

#: Bytes of a UALink DL flit, the other packet size the engine serves. [UALink 1.0 §6.3]
DL_FLIT_BYTES = 640
#: Ethernet frame lengths without FCS: 60..1514 bytes. [IEEE 802.3 §3.2.7, §4.4.2]
MIN_FRAME, MAX_FRAME = 60, 1514
#: Local Experimental EtherType 1. [IEEE 802 registry]
ETHERTYPE = 0x88B5


def ethernet_frame(rng):
    """A random frame (DA, SA, EtherType, payload) with its FCS appended."""
    header = struct.pack("!6s6sH", bytes([rng.randrange(256) & 0xFE]) + rng.randbytes(5),
                         bytes([0x02]) + rng.randbytes(5), ETHERTYPE)
    frame = header + rng.randbytes(rng.randrange(MIN_FRAME, MAX_FRAME + 1) - len(header))
    return frame + zlib.crc32(frame).to_bytes(4, "little")


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def system(dut):
    env = CrcEnv(dut)
    config, rng, source, sink = env.config, env.rng, env.source, env.sink
    frames, blocks = int(os.environ["SIM_FRAMES"]), int(os.environ["SIM_BLOCKS"])
    corrupt = float(os.environ.get("SIM_CORRUPT", "0.02"))
    await env.reset()

    kinds = ["frame"] * frames + ["block"] * blocks
    rng.shuffle(kinds)
    expected, total_bytes, corrupted = [], 0, 0
    for kind in kinds:
        if kind == "frame":
            packet = ethernet_frame(rng)
            if rng.random() < corrupt:
                damaged = bytearray(packet)
                damaged[rng.randrange(len(packet))] ^= 1 << rng.randrange(8)
                packet, corrupted = bytes(damaged), corrupted + 1
            good = zlib.crc32(packet[:-4]).to_bytes(4, "little") == packet[-4:]
        else:
            packet, good = rng.randbytes(DL_FLIT_BYTES), None
        env.send_packet(packet)
        expected.append((kind, zlib.crc32(packet), good))
        total_bytes += len(packet)

    start, wall = get_sim_time("ns"), time.monotonic()
    mismatches, rejected = 0, 0
    received = progress.Counter()
    progress.watch(dut, len(expected), received, lambda: mismatches)
    for index, (kind, crc, good) in enumerate(expected):
        result = await sink.recv()
        received.done += 1
        wrong = int(result.crc) != crc or int(result.malformed)
        if good is not None:
            wrong |= bool(result.ok) != good
            rejected += not result.ok
        if wrong:
            mismatches += 1
            dut._log.error("%s %d: crc %#010x ok %d, expected %#010x ok %s",
                           kind, index, int(result.crc), int(result.ok), crc, good)
    cycles = int(get_sim_time("ns") - start) // PERIOD_NS
    wall = time.monotonic() - wall
    await ClockCycles(dut.clk, 4 * config.latency)
    leftover = (not source.empty()) or (not sink.empty()) or bool(dut.o__valid.value)

    report = {
        "config": json.loads(config.to_json()),
        "seed": int(os.environ["COCOTB_RANDOM_SEED"]),
        "frames": frames, "blocks": blocks, "corrupted": corrupted, "rejected": rejected,
        "bytes": total_bytes, "cycles": cycles,
        "bytes_per_cycle": round(total_bytes / cycles, 3),
        "peak_bytes_per_cycle": config.bytes_per_beat,
        "mismatches": mismatches, "leftover": leftover,
        "sim_cycles_per_second": round(cycles / wall),
    }
    with open(os.environ["SIM_REPORT"], "w") as f:
        json.dump(report, f, indent=2)
    assert mismatches == 0, f"{mismatches} mismatches"
    assert rejected == corrupted, f"{rejected} frames rejected, {corrupted} corrupted"
    assert not leftover, "beats or results left over"
