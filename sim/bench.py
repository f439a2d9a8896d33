# SPDX-License-Identifier: BSD-2-Clause
"""``make bench``: performance benchmarks, each writing ``build/bench/<name>.json``.

``crc``: for the 64- and 512-bit CRC-32 engines, beats and bytes per cycle for back-to-back
packets of 64, 65, 640 and 1518 bytes, and the measured latency next to the documented one
(a difference makes the run fail: the documentation would be wrong).

``tl``: for each traffic mix of :data:`sim.tl.traffic.MIXES`, without and with the address
cache, for the best, compact and slot packers, the TL packer's efficiency (data bytes / (flits
x 64)) next to the best legal packing of the same items (the best and slot packers more than
0.5 points below it make the run fail), items per flit, flits per clock at saturation and the
latency from an item accepted to its control half-flit leaving; and the TL unpacker's latency
from the flit that completes an item to the item valid on UPLI.

``tl_policy``: the golden model's packing policies (``best``, ``slots``, ``compact``) on the
same mixes, 200 pairs each, without and with the address cache, next to the best legal packing
(the slot policy more than 0.5 points below it makes the run fail; ``BENCH_SEED`` draws other
items): pure Python, no simulator.

``addrcache``: for each address pattern of :data:`sim.tl.cache_bench.PATTERNS`, the Tx address
cache's hit rate and the packer's efficiency with the cache off and on (4 ways x 1024 rows).
The 256-byte WriteFull stream must reach the spec's 1280/1344 = 95.24 % [UALink 1.0 §5.4]
with the cache on (less makes the run fail).

``dl``: two UALink DL ends over the error-injecting links at full load both ways: the round trip
``m`` in DL flits (flits replayed per lone lost flit), goodput (TL flits delivered in order / the
link's TL capacity of 9.8125 per DL flit) against the bit error rate next to the go-back-N bound (1
- q) / (1 + (m - 1) q) and next to the golden model's goodput (``rtl/scaleup_ip/model/dl/llr.py``,
the spec's rules, at the same ``m`` and Rx_replay_limit; less than 97 % of it makes the run fail), a
long run at BER 1e-6, and a plot (``dl.png``). ``BENCH_CLOCKS`` and ``BENCH_LONG_FLITS`` shorten it.

``ethx``: two ETH-X bridges over line-rate channels, node A's GPU loading node B's memory: for
128-byte and 8-byte loads and stores and 4 KB reads and writes, under load, the efficiency on
the full wire and by the white paper's metric next to the naive encoding's, and payload bytes
per clock; unloaded latency from AR to R and AW to B; for :data:`ETHX_CONFIGS`. 128-byte loads
under 85 % on the full wire with :data:`ETHX_LOAD_CONFIG` make the run fail (``BENCH_SCALE``
shortens it).

``simspeed``: the simulation speed of every ``make sim`` scenario (cycles/s, wall time, builds
cached) and the wall time of each of the ten slowest tests of the regression, run alone.
"""

import dataclasses
import json
import os
import subprocess
import sys
from xml.etree import ElementTree

from scaleup_ip.crc import Crc32, CrcConfig
from scaleup_ip.dl import BEATS_PER_FLIT
from scaleup_ip.ethx import EthxConfig
from scaleup_ip.ethx.link import LinkConfig
from scaleup_ip.tl import TlConfig
from scaleup_ip.tl.rx import TlRx
from scaleup_ip.tl.tx import TlTx
from sim.dl import model_link as dl_model_link
from sim import harness, toolchain
from sim.dl.link import DL_LINK, DlLink
from sim.dl.link_env import bound, go_back_n
from sim.ethx.link.pair import EthxLinkTraffic
from sim.ethx.pair import EthxPair
from sim.tl import policy as tl_policy

#: Flit times of the golden-model link per BER point, at least (or as many as the RTL ran).
DL_MODEL_FLITS = 100_000

CRC_CONFIGS = (CrcConfig(data_width=64, pipeline=1), CrcConfig(data_width=512, pipeline=2))


def _run(component, config, toplevel, module, out):
    """Run the cocotb benchmark ``module`` on ``component``; returns the JSON it wrote to
    ``out``."""
    harness.run(component, config, toplevel=toplevel, test_module=module, run_name="bench",
                extra_env={"BENCH_OUT": str(out)}, seed_value=1)
    return json.loads(out.read_text())


def _run_configs(block, configs, toplevel, module, out):
    """:func:`_run` for each of ``configs`` (``block(config)`` the component); every result
    in ``out`` as a list, which is returned."""
    results = []
    for config in configs:
        part = out.with_name(f"{out.stem}-{config.slug()}.json")
        results.append(_run(block(config), config, toplevel, module, part))
        part.unlink()
    out.write_text(json.dumps(results, indent=2))
    return results


def bench_crc(out):
    results = _run_configs(Crc32, CRC_CONFIGS, "crc32", "sim.crc.bench", out)
    print(f"\nCRC-32 engine ({out.relative_to(toolchain.REPO)})")
    print(f"  {'width':>5} {'pipe':>4} {'packet B':>8} {'beats/cycle':>11} {'bytes/cycle':>11}"
          f" {'lane fill':>9}")
    rows = [(result["config"], row) for result in results for row in result["rows"]]
    for config, row in rows:
        if row["measure"] == "throughput":
            print(f"  {config['data_width']:>5} {config['pipeline']:>4} "
                  f"{row['packet_bytes']:>8} {row['beats_per_cycle']:>11} "
                  f"{row['bytes_per_cycle']:>11} {row['lane_fill']:>9}")
    wrong = []
    for config, row in rows:
        if row["measure"] == "latency":
            line = (f"latency {config['data_width']}-bit pipeline {config['pipeline']}, "
                    f"{row['packet_bytes']}-byte packet: {row['cycles']} cycles "
                    f"(documented {row['documented']})")
            print(f"  {line}")
            if row["cycles"] != row["documented"]:
                wrong.append(line)
    return wrong


#: The TL with 4-way x 1024-row address caches: the TL benchmark's rows with the cache and the
#: address cache benchmark.
TL_CACHE_CONFIG = TlConfig(cache_ways=4, cache_rows=1024, cache_rx_index="DSTACCID")

#: A mix whose efficiency is further below its bound than this makes the run fail.
TL_BOUND_GAP = 0.005


#: The compact packer, without and with the address caches: its rows show what it costs.
TL_COMPACT_CONFIGS = (TlConfig(tx_packer="compact"),
                      dataclasses.replace(TL_CACHE_CONFIG, tx_packer="compact"))


def bench_tl(out):
    config = TlConfig()
    parts = _run_configs(TlTx, (config, TL_CACHE_CONFIG, *TL_COMPACT_CONFIGS), "tl_tx",
                         "sim.tl.bench", out)
    result = {"configs": [part["config"] for part in parts],
              "rows": [row for part in parts for row in part["rows"]]}
    rx_out = out.with_name("tl-rx.json")
    result["rx_latency"] = _run(TlRx(config), config, "tl_rx", "sim.tl.rx_bench",
                                rx_out)["rows"]
    rx_out.unlink()
    out.write_text(json.dumps(result, indent=2))
    print(f"\nUALink TL packer ({out.relative_to(toolchain.REPO)})")
    print(f"  {'packer':<8} {'mix':<20} {'cache':>5} {'efficiency':>10} {'bound':>7} "
          f"{'gap':>6} {'items/flit':>10} {'flits/clock':>11} {'items/clock':>11} "
          f"{'latency':>7}")
    wrong = []
    for row in result["rows"]:
        gap = row["bound"] - row["efficiency"]
        line = (f"  {row['packer']:<8} {row['mix']:<20} {'on' if row['cache'] else 'off':>5} "
                f"{row['efficiency']:>10.2%} {row['bound']:>7.2%} {gap:>6.2%} "
                f"{row['items_per_flit']:>10} {row['flits_per_clock']:>11} "
                f"{row['items_per_clock']:>11} {row['tx_latency']:>7}")
        print(line)
        if row["packer"] == "slots" and gap > TL_BOUND_GAP:
            wrong.append(f"TL packer more than {TL_BOUND_GAP:.1%} below its bound:{line}")
    print("  bound: the best legal packing of the same items; flits/clock and items/clock"
          " (delivered) over the saturated window; latency: clocks from the first item accepted"
          " to its flit leaving")
    print("  unpacker latency, flit completing the item -> UPLI valid: " + ", ".join(
        f"{row['item']} {row['rx_latency']}" for row in result["rx_latency"]))
    return wrong


def bench_tl_policy(out):
    seed = int(os.environ.get("BENCH_SEED", 1))
    rows = tl_policy.rows(seed)
    out.write_text(json.dumps({"seed": seed, "pairs": 200, "rows": rows}, indent=2))
    print(f"\nUALink TL packing policies, golden model ({out.relative_to(toolchain.REPO)})")
    names = list(tl_policy.POLICIES)
    print(f"  {'mix':<20} {'cache':>5} {'bound':>7} " + " ".join(f"{n:>8}" for n in names)
          + f" {'pacing':>6}")
    wrong = []
    for k in range(0, len(rows), len(names)):
        group = rows[k:k + len(names)]
        mix, cache = group[0]["mix"], "on" if group[0]["cache"] else "off"
        if group[0]["bound"]:
            cells = [f"{r['efficiency']:>8.2%}" for r in group]
            bound = f"{group[0]['bound']:>7.2%}"
        else:                                   # no data: flits
            cells = [f"{r['flits']:>6} f" for r in group]
            bound = f"{group[0]['bound_flits']:>5} f"
        slots = group[names.index("slots")]
        line = f"  {mix:<20} {cache:>5} {bound} " + " ".join(cells) + f" {slots['pacing']:>6}"
        print(line)
        short = (slots["bound"] - slots["efficiency"] if slots["bound"]
                 else slots["flits"] / slots["bound_flits"] - 1)
        if short > TL_BOUND_GAP:
            wrong.append(f"the slot policy more than {TL_BOUND_GAP:.1%} below its bound:{line}")
    print("  efficiency: data bytes / (flits x 64); f: flits (mixes without data); pacing: the"
          f" slot policy's pacing flits; 200 pairs a mix, seed {seed} (BENCH_SEED)")
    return wrong


#: [UALink 1.0 §5.4] WriteFull with compressed requests and write responses: 1280 of 1344 bytes.
WRITEFULL_TARGET = 0.952


def bench_addrcache(out):
    config = TL_CACHE_CONFIG
    result = _run(TlTx(config), config, "tl_tx", "sim.tl.cache_bench", out)
    print(f"\nUALink TL address cache, 4 ways x 1024 rows ({out.relative_to(toolchain.REPO)})")
    print(f"  {'pattern':<22} {'off':>7} {'on':>7} {'hit rate':>8} {'compressed':>10}"
          f" {'backoffs':>8}")
    rows = {(row["pattern"], row["cache"]): row for row in result["rows"]}
    wrong = []
    for pattern in dict.fromkeys(row["pattern"] for row in result["rows"]):
        off, on = rows[pattern, "never"], rows[pattern, "adaptive"]
        print(f"  {pattern:<22} {off['efficiency']:>7.2%} {on['efficiency']:>7.2%} "
              f"{on['hit_rate']:>8.2%} {on['compressed']:>10} {on['backoffs']:>8}")
    stream = rows["writefull_256_stream", "adaptive"]["efficiency"]
    if stream < WRITEFULL_TARGET:
        wrong.append(f"256-byte WriteFull stream with the cache: {stream:.2%} "
                     f"(target {WRITEFULL_TARGET:.1%})")
    print("  efficiency: data bytes / (flits x 64), requests paired with peer responses;"
          " latency through the cache, request accepted -> its flit: "
          f"{result['tx_latency']['miss']} clocks (miss), {result['tx_latency']['hit']} (hit)")
    return wrong


def bench_dl(out):
    result = dl_figures(_run(DlLink(DL_LINK), DL_LINK, "dl_link", "sim.dl.bench", out))
    m, limit = result["round_trip_flits"], result["replay_limit"]
    out.write_text(json.dumps(result, indent=2))
    print(f"\nUALink DL, two ends over error links ({out.relative_to(toolchain.REPO)})")
    print(f"  round trip {m} DL flits replayed per lost flit (Ack round trip "
          f"{result['ack_round_trip_flits']}); Rx_replay_limit {limit}; goodput without errors "
          f"{result['clean_goodput']:.2%}; DL efficiency {result['dl_efficiency']:.2%}")
    print(f"  {'BER':>7} {'q':>8} {'goodput a':>9} {'goodput b':>9} {'bound':>7} {'ratio':>6}"
          f" {'q seen':>8} {'ratio':>6} {'model':>7} {'ratio':>6}")
    for row in result["rows"]:
        print(f"  {row['ber']:>7.0e} {row['q']:>8.2e} {row['goodput_a']:>9.2%} "
              f"{row['goodput_b']:>9.2%} {row['bound']:>7.2%} {row['ratio']:>6.3f} "
              f"{row['q_seen']:>8.2e} {row['ratio_seen']:>6.3f} "
              f"{row['model']:>7.2%} {row['ratio_model']:>6.3f}")
    long = result["long_run"]
    print(f"  long run, BER {long['ber']:.0e}: {long['dl_flits']} DL flits each way, "
          f"{long['tl_flits_a_to_b'] + long['tl_flits_b_to_a']} TL flits, {long['bad']} lost,"
          f" repeated or reordered, {long['bad_crc']} bad CRCs, {long['replayed']} replayed")
    _plot_dl(result, out.with_suffix(".png"))
    failures = [f"DL long run: {long['bad']} TL flits wrong"] if long["bad"] else []
    failures += [f"DL goodput at BER {row['ber']:.0e}: {row['ratio_model']:.3f} of the spec "
                 f"model's" for row in result["rows"] if row["ratio_model"] < 0.97]
    return failures


def dl_figures(result):
    """Add to the DL benchmark's ``result`` each point's bounds, the golden model's goodput at
    the same round trip and replay limit, and the ratios. Goodput is the mean of the two
    directions (their errors are independent; the mean halves the spread of a finite run)."""
    m, limit = result["round_trip_flits"], result["replay_limit"]
    delays = dl_model_link.delays_for(m)
    for k, row in enumerate(result["rows"]):
        row["goodput"] = (row["goodput_a"] + row["goodput_b"]) / 2
        row["bound"] = bound(row["ber"], m)
        row["bound_seen"] = go_back_n(row["q_seen"], m)
        flits = max(DL_MODEL_FLITS, row["clocks"] // BEATS_PER_FLIT)
        row["model"] = dl_model_link.goodput(row["q"], delays, limit, flits, seed=k + 1,
                                             depth=DL_LINK.replay_depth)
        row["ratio"] = row["goodput"] / row["bound"]
        row["ratio_model"] = row["goodput"] / row["model"]
        row["ratio_seen"] = row["goodput"] / row["bound_seen"]
    result["model_delays"] = delays
    return result


def _plot_dl(result, path):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot
    rows = result["rows"]
    bers = [row["ber"] for row in rows]
    fine = [10 ** (k / 10) for k in range(-80, -39)]
    figure, axes = pyplot.subplots(figsize=(6, 4))
    axes.semilogx(fine, [bound(b, result["round_trip_flits"]) for b in fine],
                  label=f"go-back-N bound, m = {result['round_trip_flits']}")
    axes.semilogx(bers, [row["model"] for row in rows], "s", mfc="none",
                  label="golden model (spec rules), same m")
    axes.semilogx(bers, [row["goodput_a"] for row in rows], "o", label="RTL, a to b")
    axes.semilogx(bers, [row["goodput_b"] for row in rows], "x", label="RTL, b to a")
    axes.set_xlabel("bit error rate")
    axes.set_ylabel("goodput (of the TL capacity)")
    axes.set_title("UALink DL link-level replay")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


#: The bridge sized for load: 64 reads and 64 writes in flight (more than the channel's
#: bandwidth-delay product of 128-byte loads) and frames given 256 clocks to fill.
ETHX_LOAD_CONFIG = EthxConfig(sources=4, outstanding=64, timeout=256)
#: The bridges measured: the system test's (4 sources, 8 outstanding, aggregation timeout 64
#: clocks), the one sized for load, and one sending each frame as soon as its records stop
#: coming (the latency floor).
ETHX_CONFIGS = (EthxConfig(sources=4), ETHX_LOAD_CONFIG, EthxConfig(sources=4, timeout=0))
#: The efficiency target of 128-byte loads under load on the full wire (:data:`ETHX_LOAD_CONFIG`).
ETHX_LOAD_TARGET = 0.85


def bench_ethx(out):
    results = _run_configs(EthxPair, ETHX_CONFIGS, "ethx_pair", "sim.ethx.bench", out)
    print(f"\nETH-X bridge pair, A's GPU on B's memory ({out.relative_to(toolchain.REPO)})")
    wrong = []
    for config, result in zip(ETHX_CONFIGS, results, strict=True):
        cfg = result["config"]
        print(f"  {cfg['eth_width']}-bit Ethernet, {cfg['data_width']}-bit AXI, fill "
              f"{cfg['fill']} B, timeout {cfg['timeout']} clocks, {cfg['outstanding']} "
              f"outstanding; channel delay {result['delay_clocks']} clocks")
        print(f"  {'workload':<14} {'ways':>4} {'wire':>7} {'naive':>7} {'paper':>7} {'naive':>7}"
              f" {'frames':>6} {'B/clock':>7}")
        for row in result["rows"]:
            print(f"  {row['workload']:<14} {1 + row['both_ways']:>4} "
                  f"{row['wire_efficiency']:>7.2%} "
                  f"{row['naive_wire_efficiency']:>7.2%} {row['paper_efficiency']:>7.2%} "
                  f"{row['naive_paper_efficiency']:>7.2%} {row['frames']:>6} "
                  f"{row['bytes_per_clock']:>7.2f}")
        print("  unloaded latency, clocks (median of " + ", ".join(
            f"{row['access']} {row['first_clocks']}/{row['last_clocks']}"
            for row in result["latency"]) + "): AR to first/last R, AW to B")
        if config is not ETHX_LOAD_CONFIG:
            continue
        for load in (row for row in result["rows"] if row["workload"] == "128 B loads"):
            if load["wire_efficiency"] < ETHX_LOAD_TARGET:
                wrong.append(f"ETH-X 128 B loads ({1 + load['both_ways']} ways, sized for "
                             f"load): {load['wire_efficiency']:.2%} on the wire (target 85 %)")
    return wrong


#: The lossless link's benchmark configuration: 64-bit; the replay ring (16 KB) and the receive
#: buffer's credits (32 KB) cover the frame and credit round trips at
#: :data:`sim.ethx.link.bench.DELAY` (about 1000 clocks, 8 KB, for the credits).
ETHX_LINK_CONFIG = LinkConfig(eth_width=64, rx_bytes=32768)


def bench_ethx_link(out):
    config = ETHX_LINK_CONFIG
    result = _run(EthxLinkTraffic(config), config, "ethx_link_traffic", "sim.ethx.link.bench",
                  out)
    m = result["round_trip_frames"]
    clean = result["rows"][0]["goodput"]           # the error-free rate: go-back-N's 1
    for row in result["rows"]:
        row["efficiency"] = row["goodput"] / clean
        row["ratio"] = row["efficiency"] / row["bound"]
    out.write_text(json.dumps(result, indent=2))
    print(f"\nETH-X lossless link, a to b over error-injecting channels "
          f"({out.relative_to(toolchain.REPO)})")
    print(f"  {result['frame_bytes']}-byte frames ({result['wire_beats']} wire beats), delay "
          f"{result['delay']} clocks each way; round trip m = {m:.2f} frames replayed per lone "
          f"loss {result['lone_losses']}")
    busy = result["rows"][0]["line_busy"]
    print(f"  error-free: data frames {clean:.2%} of the wire's rate; the wire busy {busy:.2%}"
          f" of clocks (control frames the rest)")
    print(f"  {'FER':>7} {'q seen':>8} {'frames':>7} {'replayed':>8} {'goodput':>8} {'of clean':>8}"
          f" {'bound':>7} {'ratio':>6}")
    for row in result["rows"]:
        print(f"  {row['fer']:>7.0e} {row['q_seen']:>8.2e} {row['frames']:>7} "
              f"{row['replayed']:>8} {row['goodput']:>8.2%} {row['efficiency']:>8.2%} "
              f"{row['bound']:>7.2%} {row['ratio']:>6.3f}")
    c = result["credit_limited"]
    print(f"  credit-limited: VC limit {c['limit_credits']} credits of {c['credit_size']} B, "
          f"credit round trip {c['credit_round_trip']} clocks: {c['bytes_per_clock']:.2f} B/clock"
          f" (credits / round trip {c['predicted']:.2f}, whole frames "
          f"{c['predicted_frames']:.2f}; line {c['line_bytes_per_clock']})")
    long = result["long_run"]
    print(f"  long run: {long['frames']} frames both ways at FER {long['fer']:.0e} both ways, "
          f"{long['dropped']} dropped, {long['replayed']} replayed, {long['bad']} out of order")
    _plot_ethx_link(result, out.with_suffix(".png"))
    failures = [f"link goodput at FER {row['fer']:.0e}: {row['ratio']:.3f} of the bound"
                for row in result["rows"] if abs(row["ratio"] - 1) > 0.03]
    failures += [f"link: the wire busy {busy:.2%} of clocks without errors (target 99 %)"] if (
        busy < 0.99) else []
    failures += [f"link: {result['bad'] + long['bad']} frames out of order"] if (
        result["bad"] or long["bad"]) else []
    return failures


def _plot_ethx_link(result, path):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot
    from scaleup_ip.model.ethx.link import goodput_bound
    m = result["round_trip_frames"]
    rows = [row for row in result["rows"] if row["fer"] > 0]
    fine = [10 ** (k / 10) for k in range(-65, -15)]
    figure, axes = pyplot.subplots(figsize=(6, 4))
    axes.semilogx(fine, [goodput_bound(q, m) for q in fine], label=f"go-back-N bound, m = {m:.2f}")
    axes.semilogx([row["q_seen"] or row["fer"] for row in rows],
                  [row["efficiency"] for row in rows], "o", label="RTL, a to b (of error-free)")
    axes.set_xlabel("frame error rate")
    axes.set_ylabel("goodput / error-free goodput")
    axes.set_title("ETH-X lossless link: go-back-N goodput")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def bench_simspeed(out):
    """Simulation speed: every ``make sim`` scenario (default sizes, builds cached first) and
    the ten slowest tests of the regression (by ``tb/durations.json``), each timed alone."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    subprocess.run([sys.executable, "-m", "sim.system"], env=env, cwd=toolchain.REPO,
                   stdout=subprocess.DEVNULL)           # builds (and a first run)
    done = subprocess.run([sys.executable, "-m", "sim.system"], env=env, cwd=toolchain.REPO)
    report = json.loads((toolchain.BUILD / "sim" / "report.json").read_text())
    scenarios = {name: {"cycles_per_second": f["sim_cycles_per_second"],
                        "wall_seconds": f["wall_seconds"]} if f else None
                 for name, f in report.items()}
    durations = json.loads((toolchain.REPO / "tb" / "durations.json").read_text())
    slowest = sorted(durations, key=durations.get, reverse=True)[:10]
    results = out.with_name("simspeed-tests.xml")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "1",
                    f"--junitxml={results}", *slowest], cwd=toolchain.REPO, env=env,
                   stdout=subprocess.DEVNULL)
    tests = {f"{case.get('classname').replace('.', '/')}.py::{case.get('name')}":
             round(float(case.get("time")), 1)
             for case in ElementTree.parse(results).iter("testcase")}
    result = {"scenarios": scenarios, "slowest_tests_seconds": tests}
    out.write_text(json.dumps(result, indent=2))
    print(f"simulation speed ({out.relative_to(toolchain.REPO)})")
    for name, figures in scenarios.items():
        if figures:
            print(f"  {name:<12} {figures['cycles_per_second']:>9,} cycles/s "
                  f"{figures['wall_seconds']:>7} s")
    for test, seconds in tests.items():
        print(f"  {seconds:>7} s  {test}")
    return [] if done.returncode == 0 else ["simspeed: make sim failed"]


BENCHES = {"crc": bench_crc, "tl": bench_tl, "tl_policy": bench_tl_policy,
           "addrcache": bench_addrcache, "dl": bench_dl,
           "ethx": bench_ethx, "ethx_link": bench_ethx_link, "simspeed": bench_simspeed}


def main():
    out = toolchain.BUILD / "bench"
    out.mkdir(parents=True, exist_ok=True)
    chosen = sys.argv[1:] or list(BENCHES)
    wrong = [line for name in chosen for line in BENCHES[name](out / f"{name}.json")]
    for line in wrong:
        print(f"FAILED: a figure misses its documented value or target: {line}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
