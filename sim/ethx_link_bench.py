"""cocotb benchmark of the lossless link (``make bench``, :func:`sim.bench.bench_ethx_link`): two
links (:class:`sim.ethx_link_pair.EthxLinkWire`) over error-injecting channels, end ``a``
sending bridge frames of one size back to back to ``b``, every frame checked in order at ``b``.

1. ``m``, the go-back-N round trip in frames: the frames replayed after one lone lost frame.
2. For each frame error rate of :data:`POINTS` (the channel from ``a`` drops frames; the way
   back is clean): goodput, the frames delivered times their wire beats over the clocks
   (1.0 is the wire's rate); :func:`sim.bench.bench_ethx_link` divides it by the error-free
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

from rtl.ethx.link.config import LinkConfig
from rtl.ethx.link.layout import LinkTxCount, default_settings, eth_beat_layout, settings_layout
from rtl.model import ethx as bridge_model
from rtl.model import ethx_channel as channel_model
from rtl.model import ethx_link as model

from .ethx_env import EthxEnv, cycle
from .ethx_link_pair import NODES, channel_counts
from .streams import LayoutSink, LayoutSource, bytes_to_beats

#: Frame error rates measured.
POINTS = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 3e-3, 1e-2)
#: Record words of the benchmark's frames: 16 + 8 x 126 = 1024 bytes.
WORDS = 126
#: Bytes of the benchmark's bridge frames.
FRAME_BYTES = bridge_model.HEADER_BYTES + bridge_model.WORD * WORDS
#: Clocks each way on the wire.
DELAY = 200
#: Clocks measured per point.
CLOCKS = int(os.environ.get("BENCH_CLOCKS", "300000"))
#: Frames of the long run.
LONG_FRAMES = int(os.environ.get("BENCH_LINK_LONG", "1000000"))
#: Frame loss of the long run, both ways.
LONG_FER = 1e-3
#: The credit-limited run's VC 0 limit, in frames of the benchmark's size.
LIMIT_FRAMES = 2
#: Each frame's number: its first record word.
_NUMBER_END = bridge_model.HEADER_BYTES + bridge_model.WORD


class Bench(EthxEnv):
    config_class = LinkConfig

    def __init__(self, dut):
        super().__init__(dut)
        cfg = self.config
        layout = eth_beat_layout(cfg.eth_width)
        self.source = LayoutSource(dut, "a_i", layout, dut.clk, dut.rst)
        self.sink = LayoutSink(dut, "b_o", layout, dut.clk, dut.rst)
        self.back = LayoutSource(dut, "b_i", layout, dut.clk, dut.rst)
        self.front = LayoutSink(dut, "a_o", layout, dut.clk, dut.rst)
        self.settings = default_settings(cfg, round_trip=2 * DELAY + 40)
        self.got = self.got_back = 0
        self.next = {end: 0 for end in NODES}       # the number of each end's next frame
        self.bad = 0
        for end in NODES:
            self.control(end, seed=self.rng.getrandbits(64), reseed=0, enable=1, cut=0,
                         delay=DELAY, ber_threshold=0, burst_threshold=0, burst_length=0,
                         drop_threshold=0, ctl_threshold=0, ctl_kinds=0)
            getattr(dut, f"{end}_up").value = 1
        self.apply()

    def apply(self):
        value = settings_layout(self.config).const(self.settings).as_bits()
        for end in NODES:
            getattr(self.dut, f"{end}_settings").value = value

    def control(self, end, **levels):
        for name, value in levels.items():
            getattr(self.dut, f"{end}_wire_{name}").value = value

    def wire(self, end):
        return channel_counts(self.dut, end)

    def tx(self, end):
        return {k.name: v for k, v in self.counts(LinkTxCount, f"{end}_tx_counts").items()}

    async def feed(self, end, words, count=None):
        """Keep ``end``'s source busy with ``count`` frames (or for ever), numbered on from the
        last it sent."""
        source = self.source if end == "a" else self.back
        head = bridge_model.header(NODES["b" if end == "a" else "a"], NODES[end], 0)
        rows = self.config.rows(bridge_model.HEADER_BYTES + bridge_model.WORD * words)
        for _ in iter(int, 1) if count is None else range(count):
            while source.count() > 2 * rows:
                await RisingEdge(self.dut.clk)
            number = self.next[end].to_bytes(bridge_model.WORD, "little")
            frame = head + number + bytes(bridge_model.WORD * (words - 1))
            for beat in bytes_to_beats(frame, self.config.eth_bytes):
                source.send_nowait(user=0, **beat)
            self.next[end] += 1

    async def check(self, sink, counter):
        """Take frames at ``sink``; each must carry the next number."""
        width = self.config.eth_bytes
        data, expect = b"", 0
        while True:
            beat = await sink.recv()
            if len(data) < _NUMBER_END:
                data += int(beat.data).to_bytes(width, "little")
            if beat.last:
                seq = int.from_bytes(data[bridge_model.HEADER_BYTES:_NUMBER_END], "little")
                if seq != expect:
                    self.bad += 1
                expect += 1
                setattr(self, counter, getattr(self, counter) + 1)
                data = b""

    async def drop_one(self):
        """Drop exactly one frame from ``a``; returns once it is dropped."""
        before = self.wire("a")["dropped"]
        self.control("a", drop_threshold=(1 << 32) - 1)
        while self.wire("a")["dropped"] == before:
            await RisingEdge(self.dut.clk)
        self.control("a", drop_threshold=0)


@cocotb.test(timeout_time=10_000, timeout_unit="sec")
async def bench(dut):
    tb = Bench(dut)
    cfg = tb.config
    await tb.reset()
    cocotb.start_soon(tb.check(tb.sink, "got"))
    cocotb.start_soon(tb.check(tb.front, "got_back"))
    wire_beats = cfg.rows(model.wire_bytes_of(FRAME_BYTES))
    feeder = cocotb.start_soon(tb.feed("a", WORDS))
    await ClockCycles(dut.clk, 10 * DELAY)
    # 1. m: frames replayed per lone loss (the mean of a few).
    lone = []
    for _ in range(4):
        before = tb.tx("a")["TX_REPLAYED"]
        await tb.drop_one()
        await ClockCycles(dut.clk, 20 * DELAY)
        lone.append(tb.tx("a")["TX_REPLAYED"] - before)
    m = sum(lone) / len(lone)
    # 2. Goodput against the frame error rate.
    rows = []
    for fer in POINTS:
        tb.control("a", drop_threshold=channel_model.frame_threshold(fer))
        await ClockCycles(dut.clk, 10 * DELAY)
        w0, t0, got0, c0 = tb.wire("a"), tb.tx("a"), tb.got, cycle()
        await ClockCycles(dut.clk, CLOCKS)
        w1, t1, got1, c1 = tb.wire("a"), tb.tx("a"), tb.got, cycle()
        dropped = w1["dropped"] - w0["dropped"]
        passed = w1["frames"] - w0["frames"]
        q_seen = dropped / max(1, dropped + passed)
        goodput = (got1 - got0) * wire_beats / (c1 - c0)
        rows.append({"fer": fer, "q_seen": q_seen, "dropped": dropped,
                     "frames": got1 - got0, "clocks": c1 - c0, "goodput": goodput,
                     "replayed": t1["TX_REPLAYED"] - t0["TX_REPLAYED"],
                     "bound": model.goodput_bound(q_seen, m)})
        dut._log.info("FER %g: %s", fer, rows[-1])
    tb.control("a", drop_threshold=0)
    feeder.kill()
    await ClockCycles(dut.clk, 20 * DELAY)
    # 3. Credit-limited rate: a lone frame's credit round trip, then the rate at a small limit.
    tb.settings.update(cf_bytes=FRAME_BYTES)
    tb.apply()
    credits = model.pkt_credits(FRAME_BYTES, cfg.credit_size, cfg.pkt_overhead)
    s_cc, s_cf = dut.a_s_cc, dut.a_s_cf
    await ClockCycles(dut.clk, 20 * DELAY)
    lone_task = cocotb.start_soon(tb.feed("a", WORDS, count=1))
    before = s_cc.value.to_unsigned()
    while s_cc.value.to_unsigned() == before:
        await RisingEdge(dut.clk)
    taken = cycle()
    while s_cf.value.to_unsigned() != s_cc.value.to_unsigned():
        await RisingEdge(dut.clk)
    credit_rtt = cycle() - taken
    await lone_task
    await ClockCycles(dut.clk, 10 * DELAY)
    limit = LIMIT_FRAMES * credits
    tb.settings["limits"] = [limit] + list(tb.settings["limits"][1:])
    tb.apply()
    feeder = cocotb.start_soon(tb.feed("a", WORDS))
    await ClockCycles(dut.clk, 10 * DELAY)
    got0, c0 = tb.got, cycle()
    await ClockCycles(dut.clk, CLOCKS // 2)
    rate = (tb.got - got0) * (FRAME_BYTES) / (cycle() - c0)
    feeder.kill()
    credit_limited = {"limit_credits": limit, "credit_size": cfg.credit_size,
                      "credit_round_trip": credit_rtt, "bytes_per_clock": rate,
                      "predicted": limit * cfg.credit_size / credit_rtt,
                      "predicted_frames": LIMIT_FRAMES * (FRAME_BYTES) / credit_rtt,
                      "line_bytes_per_clock": cfg.eth_bytes}
    dut._log.info("credit limited: %s", credit_limited)
    await ClockCycles(dut.clk, 20 * DELAY)
    tb.settings = default_settings(cfg, round_trip=2 * DELAY + 40)
    tb.apply()
    result = {"config": cfg.to_json(), "frame_bytes": FRAME_BYTES, "wire_beats": wire_beats,
              "delay": DELAY, "round_trip_frames": m, "lone_losses": lone, "rows": rows,
              "credit_limited": credit_limited, "bad": tb.bad}
    # 4. The long run: smallest frames both ways, 1e-3 of every frame lost both ways.
    long = await _long_run(tb)
    result["long_run"] = long
    Path(os.environ["BENCH_OUT"]).write_text(json.dumps(result, indent=2))


async def _long_run(tb):
    dut, words = tb.dut, bridge_model.MIN_WORDS
    got, got_back = tb.got, tb.got_back
    for end in NODES:
        tb.control(end, drop_threshold=channel_model.frame_threshold(LONG_FER))
    half = LONG_FRAMES // 2
    started = cycle()
    tasks = [cocotb.start_soon(tb.feed(end, words, count=half)) for end in NODES]
    for task in tasks:
        await task
    while tb.got < tb.next["a"] or tb.got_back < tb.next["b"]:
        await ClockCycles(dut.clk, 1000)
    for end in NODES:
        tb.control(end, drop_threshold=0)
    return {"frames": tb.got - got + tb.got_back - got_back, "fer": LONG_FER,
            "clocks": cycle() - started, "bad": tb.bad,
            "dropped": sum(tb.wire(e)["dropped"] for e in NODES),
            "replayed": sum(tb.tx(e)["TX_REPLAYED"] for e in NODES)}
