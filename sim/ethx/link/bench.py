# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benchmark of the lossless link (``make bench``, :func:`sim.bench.bench_ethx_link`): two
links over error-injecting channels with a frame source and checker at each end, in hardware
(:class:`sim.ethx.link.pair.EthxLinkTraffic`): end ``a`` sends numbered bridge frames of one
size back to back to ``b``, every frame checked in order at ``b``.

1. ``m``, the go-back-N round trip in frames: the frames replayed after one lone lost data
   frame (a drop that hits one of ``a``'s control frames replays nothing and is not a sample).
2. For each frame error rate of :data:`POINTS` (the channel from ``a`` drops frames; the way
   back is clean): goodput, the frames delivered times their wire beats over the clocks
   (1.0 is the wire's rate), and the share of clocks the wire from ``a`` carried a beat
   (control frames too); :func:`sim.bench.bench_ethx_link` divides it by the error-free
   goodput and sets it next to the bound (1 - q)/(1 + (m - 1)q) at the rate of frames the
   channel actually dropped (``q seen``).
3. Credit-limited rate: VC 0's limit cut to :data:`LIMIT_FRAMES` frames' credits, below the
   credit round trip (measured with a lone frame: its credits taken to its CF_UPDATE back):
   the rate next to credits / credit round trip.
4. A long run (``BENCH_LINK_LONG`` frames, 10^6 by default) of smallest frames at 1e-3 frame
   loss both ways (ACKs, NACKs and credit updates too): every frame once and in order.

Writes the JSON named by ``BENCH_OUT``.
"""

import json
import os
from pathlib import Path

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from scaleup_ip.ethx.link import LinkConfig, LinkTxCount, default_settings, settings_layout
from scaleup_ip.model.ethx import bridge as bridge_model
from scaleup_ip.model.ethx import channel as channel_model
from scaleup_ip.model.ethx import link as model

from sim.ethx.env import EthxEnv, cycle
from sim.ethx.link.pair import channel_counts
from sim.ethx.pair import NODES, other

#: Frame error rates measured.
POINTS = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 3e-3, 1e-2)
#: Record words of the benchmark's frames: 16 + 8 x 126 = 1024 bytes.
WORDS = 126
#: Bytes of the benchmark's bridge frames.
FRAME_BYTES = bridge_model.HEADER_BYTES + bridge_model.WORD * WORDS
#: Clocks each way on the wire.
DELAY = 200
#: Clocks measured per point.
CLOCKS = int(os.environ.get("BENCH_CLOCKS", "2000000"))
#: Frames of the long run.
LONG_FRAMES = int(os.environ.get("BENCH_LINK_LONG", "1000000"))
#: Frame loss of the long run, both ways.
LONG_FER = 1e-3
#: The credit-limited run's VC 0 limit, in frames of the benchmark's size.
LIMIT_FRAMES = 2


class Bench(EthxEnv):
    config_class = LinkConfig

    def __init__(self, dut):
        super().__init__(dut)
        self.settings = default_settings(self.config, round_trip=2 * DELAY + 40)
        for end in NODES:
            self.control(end, seed=self.rng.getrandbits(64), reseed=0, enable=1, cut=0,
                         delay=DELAY, ber_threshold=0, burst_threshold=0, burst_length=0,
                         drop_threshold=0, ctl_threshold=0, ctl_kinds=0)
            self.set(end, up=1, gen_enable=0, words=WORDS)
        self.apply()

    def apply(self):
        value = settings_layout(self.config).const(self.settings).as_bits()
        for end in NODES:
            self.set(end, settings=value)

    def control(self, end, **levels):
        self.set(end, **{f"wire_{name}": value for name, value in levels.items()})

    def wire(self, end):
        return channel_counts(self.dut, end)

    def tx(self, end):
        return {k.name: v for k, v in self.counts(LinkTxCount, f"{end}_tx_counts").items()}

    def bad(self):
        return sum(self.get(end, "check_bad") for end in NODES)

    async def drop_one(self):
        """Drop exactly one frame from ``a``; returns once it is dropped."""
        before = self.wire("a")["dropped"]
        self.control("a", drop_threshold=(1 << 32) - 1)
        while self.wire("a")["dropped"] == before:
            await RisingEdge(self.dut.clk)
        self.control("a", drop_threshold=0)

    async def stop(self):
        """Sources off; until every frame sent has been checked and nothing is kept."""
        for end in NODES:
            self.set(end, gen_enable=0)
        await ClockCycles(self.dut.clk, 2 * self.config.rows(self.config.max_frame_bytes))
        while any(self.get(end, "gen_frames") != self.get(other(end), "check_frames")
                  or self.get(end, "kept") for end in NODES):
            await ClockCycles(self.dut.clk, 1000)


@cocotb.test(timeout_time=100_000, timeout_unit="sec")
async def bench(dut):
    tb = Bench(dut)
    cfg = tb.config
    await tb.reset()
    wire_beats = cfg.rows(model.wire_bytes_of(FRAME_BYTES))
    tb.set("a", gen_enable=1)
    await ClockCycles(dut.clk, 10 * DELAY)
    # 1. m: frames replayed per lone loss (the mean of a few).
    lone = []
    for _ in range(20):
        await ClockCycles(dut.clk, tb.rng.randrange(1, 1000))    # any phase of the CF_UPDATEs
        before = tb.tx("a")["TX_REPLAYED"]
        await tb.drop_one()
        await ClockCycles(dut.clk, 20 * DELAY)
        if tb.tx("a")["TX_REPLAYED"] != before:
            lone.append(tb.tx("a")["TX_REPLAYED"] - before)
        if len(lone) == 4:
            break
    assert lone, "no lone drop hit a data frame"
    m = sum(lone) / len(lone)
    # 2. Goodput against the frame error rate.
    rows = []
    for fer in POINTS:
        tb.control("a", drop_threshold=channel_model.frame_threshold(fer))
        await ClockCycles(dut.clk, 10 * DELAY)
        w0, t0, got0, c0 = tb.wire("a"), tb.tx("a"), tb.get("b", "check_frames"), cycle()
        line0 = tb.get("a", "line_beats")
        await ClockCycles(dut.clk, CLOCKS)
        w1, t1, got1, c1 = tb.wire("a"), tb.tx("a"), tb.get("b", "check_frames"), cycle()
        line = (tb.get("a", "line_beats") - line0) % (1 << 32) / (c1 - c0)
        dropped = w1["dropped"] - w0["dropped"]
        passed = w1["frames"] - w0["frames"]
        q_seen = dropped / max(1, dropped + passed)
        goodput = (got1 - got0) * wire_beats / (c1 - c0)
        rows.append({"fer": fer, "q_seen": q_seen, "dropped": dropped,
                     "frames": got1 - got0, "clocks": c1 - c0, "goodput": goodput,
                     "line_busy": line,
                     "replayed": t1["TX_REPLAYED"] - t0["TX_REPLAYED"],
                     "bound": model.goodput_bound(q_seen, m)})
        dut._log.info("FER %g: %s", fer, rows[-1])
    tb.control("a", drop_threshold=0)
    await tb.stop()
    credit_limited = await _credit_limited(tb)
    result = {"config": cfg.to_json(), "frame_bytes": FRAME_BYTES, "wire_beats": wire_beats,
              "delay": DELAY, "round_trip_frames": m, "lone_losses": lone, "rows": rows,
              "credit_limited": credit_limited, "bad": tb.bad()}
    result["long_run"] = await _long_run(tb)
    Path(os.environ["BENCH_OUT"]).write_text(json.dumps(result, indent=2))


async def _credit_limited(tb):
    """A lone frame's credit round trip (its credits taken to its CF_UPDATE back), then the rate
    with VC 0's limit cut to :data:`LIMIT_FRAMES` frames."""
    dut, cfg = tb.dut, tb.config
    tb.settings.update(cf_bytes=FRAME_BYTES)
    tb.apply()
    await ClockCycles(dut.clk, 20 * DELAY)
    before = tb.get("a", "s_cc")
    tb.set("a", gen_enable=1)                   # for one clock: one frame
    await RisingEdge(dut.clk)
    tb.set("a", gen_enable=0)
    while tb.get("a", "s_cc") == before:
        await RisingEdge(dut.clk)
    taken = cycle()
    while tb.get("a", "s_cf") != tb.get("a", "s_cc"):
        await RisingEdge(dut.clk)
    credit_rtt = cycle() - taken
    await tb.stop()
    limit = LIMIT_FRAMES * model.pkt_credits(FRAME_BYTES, cfg.credit_size, cfg.pkt_overhead)
    tb.settings["limits"] = [limit] + list(tb.settings["limits"][1:])
    tb.apply()
    tb.set("a", gen_enable=1)
    await ClockCycles(dut.clk, 10 * DELAY)
    got0, c0 = tb.get("b", "check_frames"), cycle()
    await ClockCycles(dut.clk, CLOCKS // 4)
    rate = (tb.get("b", "check_frames") - got0) * FRAME_BYTES / (cycle() - c0)
    await tb.stop()
    tb.settings = default_settings(cfg, round_trip=2 * DELAY + 40)
    tb.apply()
    result = {"limit_credits": limit, "credit_size": cfg.credit_size,
              "credit_round_trip": credit_rtt, "bytes_per_clock": rate,
              "predicted": limit * cfg.credit_size / credit_rtt,
              "predicted_frames": LIMIT_FRAMES * FRAME_BYTES / credit_rtt,
              "line_bytes_per_clock": cfg.eth_bytes}
    dut._log.info("credit limited: %s", result)
    return result


async def _long_run(tb):
    """Smallest frames both ways, :data:`LONG_FER` of every frame lost both ways, until
    :data:`LONG_FRAMES` have been checked."""
    dut = tb.dut
    got = {end: tb.get(end, "check_frames") for end in NODES}
    dropped = {end: tb.wire(end)["dropped"] for end in NODES}
    replayed = {end: tb.tx(end)["TX_REPLAYED"] for end in NODES}
    for end in NODES:
        tb.control(end, drop_threshold=channel_model.frame_threshold(LONG_FER))
        tb.set(end, words=bridge_model.MIN_WORDS, gen_enable=1)
    started = cycle()
    while sum(tb.get(end, "check_frames") - got[end] for end in NODES) < LONG_FRAMES:
        await ClockCycles(dut.clk, 10_000)
    for end in NODES:
        tb.control(end, drop_threshold=0)
    await tb.stop()
    return {"frames": sum(tb.get(end, "check_frames") - got[end] for end in NODES),
            "fer": LONG_FER, "clocks": cycle() - started, "bad": tb.bad(),
            "dropped": sum(tb.wire(end)["dropped"] - dropped[end] for end in NODES),
            "replayed": sum(tb.tx(end)["TX_REPLAYED"] - replayed[end] for end in NODES)}
