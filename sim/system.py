# SPDX-License-Identifier: BSD-2-Clause
"""``make sim``: the system simulation and its report.

Seven scenarios:

- ``crc``: the 512-bit CRC-32 engine with its traffic made and checked in hardware
  (:mod:`sim.crc.traffic`): ``SIM_CRC_ITEMS`` (20 000) items of random Ethernet frames (each
  sent bare, then with the FCS the engine gave it, some with a bit flipped) and 640-byte
  UALink DL-flit-sized blocks, the digest of every result compared with the model's, which
  computes each CRC with :func:`zlib.crc32`;
- ``tl``: two UALink TL ends back to back (:class:`sim.tl.link.TlLink`), random requests and
  responses both ways, every item checked, with efficiency, flits per clock and credits
  (``SIM_TL_ITEMS`` items each way);
- ``tl_cache``: the same with address caches (4 ways x 1024 rows) and half of the requests
  streaming through a few regions per destination, with each end's Tx cache counters;
- ``ualink``: the full UALink link, two ends of TL and DL over the error-injecting links
  (:class:`sim.ualink.link.UalinkLink`) at bit error rate ``SIM_BER`` (1e-5), random UPLI
  traffic both ways (``SIM_UALINK_ITEMS`` items each way) made and checked in hardware
  (:mod:`scaleup_ip.tl.traffic`: every transfer compared on arrival), with the TL's efficiency, the
  DL's flits, replays and bad CRCs, and TL flits per clock against what the DL carries;
- ``ethx``: two ETH-X bridges over line-rate Ethernet channels, their AXI traffic, litmus and
  memories in hardware (:mod:`sim.ethx.run`): bursts of every length both ways, every one read
  back and checked, until the bridges have received ``SIM_ETHX_FRAMES`` (20 000) frames, then
  ``SIM_ETHX_ROUNDS`` (500) rounds of the message-passing litmus with release and acquire;
  both memories compared word by word; bytes per clock, frames and the serving sides' counters;
- ``ethx_lossy``: the same bridges behind lossless links over error-injecting channels losing
  ``SIM_LOSSY_FER`` (1e-3) of frames and flipping bits at ``SIM_LOSSY_BER`` (1e-6) both ways,
  with the channels' faults and the links' replays;
- ``ethx_long``: ``ethx_lossy`` over ``SIM_ETHX_LONG_FRAMES`` (100 000) frames
  (``SIM_ETHX_LONG_FRAMES=1000000`` is the long run of ``rtl/scaleup_ip/ethx/link/README.md``).

Writes ``build/sim/report.json`` (one section per scenario); exits non-zero on any mismatch.
``SIM_SCENARIOS=a,b`` runs only those scenarios, ``SEED=n`` reproduces a run, ``WAVES=1``
dumps waves.
"""

import json
import os
import shutil
import sys
import threading
import time

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from scaleup_ip.crc import CrcConfig
from scaleup_ip.ethx import EthxConfig
from scaleup_ip.tl import TlConfig
from sim import harness, progress, toolchain
from sim.crc.traffic import CrcTraffic
from sim.dl.link_env import TL_PER_CLOCK
from sim.ethx.traffic_system import EthxTrafficSystem
from sim.tl.link import TlLink
from sim.ualink.link import UALINK_LINK, UalinkLink

#: The configuration simulated: the production 512-bit engine (also one of the test builds).
CONFIG = CrcConfig(data_width=512, pipeline=2)
#: The TL ends simulated: default buffers.
TL_CONFIG = TlConfig()
#: The same with address caches, 4 ways x 1024 rows, each Rx cache following its peer's Tx.
TL_CACHE_CONFIG = TlConfig(cache_ways=4, cache_rows=1024, cache_rx_index="DSTACCID")
#: The ETH-X bridges simulated: those of the system test (4 sources), framing Ethernet.
ETHX_CONFIG = EthxConfig(sources=4)
#: The lossy scenarios' bridges (those of their test): the link adds and checks the FCS, a
#: frame goes as soon as no record follows.
ETHX_LOSSY_CONFIG = EthxConfig(sources=4, fcs=False, timeout=0)


def _run(name, make, config, toplevel, module, env, show):
    """Run scenario ``name`` with its logs in ``build/sim/<name>/``, calling ``show(figures)``
    with its progress while it runs. Returns (figures or None, failure text or None)."""
    folder = toolchain.BUILD / "sim" / name
    folder.mkdir(parents=True, exist_ok=True)
    part, live = folder / "report.json", folder / "progress.json"
    for path in (part, live):
        path.unlink(missing_ok=True)
    started = time.monotonic()
    seed = harness.seed()
    outcome, component = {}, make()

    def work():
        try:
            show({"state": "building"})
            harness.build(component, config, toplevel=toplevel)
            show({"state": "running"})
            harness.run(component, config, toplevel=toplevel, test_module=module,
                        run_name="system", extra_env={**env, "SIM_REPORT": str(part),
                                                      "SIM_PROGRESS": str(live)},
                        seed_value=seed, log=folder / "run.log", quiet=True)
        except (AssertionError, RuntimeError) as exc:
            outcome["failure"] = str(exc)

    thread = threading.Thread(target=work)
    thread.start()
    while thread.is_alive():
        thread.join(0.5)
        figures = progress.read(live)
        if figures:
            show(figures)
    build_log = harness.build_dir(config, toplevel=toplevel) / "build.log"
    if build_log.exists():
        shutil.copy(build_log, folder / "build.log")
    figures = json.loads(part.read_text()) if part.exists() else None
    if figures is not None:
        # cocotb derives each test's RANDOM_SEED from this one: SEED=<this> reproduces the run.
        figures["seed"] = seed
        figures["wall_seconds"] = round(time.monotonic() - started, 1)
    failure = outcome.get("failure") or (None if figures else "no report written")
    return figures, failure


def _crc_rows(figures):
    return [
        ("engine", f"CRC-32, {CONFIG.data_width}-bit beats, pipeline {CONFIG.pipeline}"),
        ("seed", figures["seed"]),
        ("Ethernet frames", f"{figures['frames']} sent bare, then with the FCS the engine gave "
                            f"({figures['corrupted']} corrupted, {figures['rejected']} rejected)"),
        ("640-byte blocks", figures["blocks"]),
        ("digest of the results", f"{figures['digest']} (model: {figures['expected_digest']})"),
        ("bytes", figures["bytes"]),
        ("cycles", figures["cycles"]),
        ("bytes per cycle", f"{figures['bytes_per_cycle']} of {figures['peak_bytes_per_cycle']}"),
        ("mismatches", figures["mismatches"]),
        ("simulator speed", f"{figures['sim_cycles_per_second']} cycles/s"),
        ("wall time (with build)", f"{figures['wall_seconds']} s"),
    ]


def _tl_rows(figures):
    caches = figures["config"]["cache_ways"]
    ends = "two UALink TL cores back to back, default buffers" + (
        f", address caches {caches} ways x {figures['config']['cache_rows']} rows" if caches
        else "")
    rows = [("ends", ends),
            ("seed", figures["seed"]), ("cycles", figures["cycles"])]
    for name, d in figures["directions"].items():
        rows.append((f"{name}", f"{d['items']} items, {d['data_bytes']} data bytes in "
                     f"{d['flits']} flits: efficiency {d['efficiency']:.2%}, "
                     f"{d['flits_per_clock']} flits/clock, credits home: {d['credits_home']}, "
                     f"receiver error: {d['error']}"))
        if "tx_cache" in d:
            c = d["tx_cache"]
            rows.append((f"{name} Tx cache", f"{c['compressed']} compressed of "
                         f"{c['compressed'] + c['uncompressed']} requests, {c['hits']} hits, "
                         f"{c['misses']} misses, {c['backoff_entries']} backoffs"))
    rows += [("mismatches", figures["mismatches"]),
             ("simulator speed", f"{figures['sim_cycles_per_second']} cycles/s"),
             ("wall time (with build)", f"{figures['wall_seconds']} s")]
    return rows


def _ualink_rows(figures):
    dl = figures["dl"]
    rows = [("ends", "two UALink ends, TL and DL, over error links (one-way delay "
                     f"{figures['delay_clocks']} clocks, TxReplay {figures['config']['replay_depth']})"),
            ("bit error rate", f"{figures['ber']:.0e}")]
    rows += _tl_rows(figures)[1:-3]
    for end, far in (("a", "b"), ("b", "a")):
        tl_flits = figures["directions"][f"{end}->{far}"]["flits"]
        rows.append((f"{end}->{far} DL", f"{dl[f'{end}_tx_flits']} DL flits, "
                     f"{dl[f'{end}_tx_payload']} with payload, {dl[f'{end}_tx_replayed']} "
                     f"replayed in {dl[f'{end}_tx_replays']} replays; {dl[f'{far}_rx_bad_crc']} "
                     f"bad CRCs; TL flits {tl_flits / figures['cycles']:.3f}/clock of "
                     f"{TL_PER_CLOCK:.3f} the DL carries"))
    rows += [("DL efficiency", f"{628 / 640:.2%} (628 payload bytes per 640-byte flit)"),
             ("mismatches", figures["mismatches"]),
             ("simulator speed", f"{figures['sim_cycles_per_second']} cycles/s"),
             ("wall time (with build)", f"{figures['wall_seconds']} s")]
    return rows


def _ethx_rows(figures):
    """The ETH-X scenarios' rows (:mod:`sim.ethx.run`)."""
    cfg, gen, mp = figures["config"], figures["generators"], figures["litmus"]
    wire = (f"over lossless links, FER {figures['fer']:.0e} and BER {figures['ber']:.0e} both ways"
            if figures["links"] else "at line rate")
    rows = [
        ("bridges", f"two ETH-X bridges, {cfg['eth_width']}-bit Ethernet {wire}, "
                    f"{cfg['data_width']}-bit AXI; bursts and litmus made and checked in "
                    "hardware"),
        ("seed", figures["seed"]),
        ("frames", f"{figures['frames']} bridge frames received in "
                   f"{figures['traffic_clocks']} clocks of bursts"),
        ("bursts", "; ".join(f"from {e}: {g['writes']} written, {g['checked']} read back, "
                             f"{g['bad_data']} wrong words, {g['bad_resp']} wrong responses"
                             for e, g in gen.items())
                   + f"; {figures['bytes_moved']} bytes: {figures['bytes_per_clock']} B/clock"),
        ("served", "; ".join(f"{e}: {s['reads']} reads, {s['writes']} writes"
                             for e, s in figures["served"].items())),
        ("message passing", f"{mp['rounds_done']} rounds in {mp['clocks']} clocks, "
                            f"{mp['reads']} acquire+read pairs, {mp['flags_seen']} flag values "
                            f"seen, {mp['stale']} stale, {mp['bad_acquire']} early reads"),
    ]
    if figures["links"]:
        rows += _link_rows(figures)
    return rows + [
        ("drops and refusals", ", ".join(f"{e}: {v or 'none'}"
                                         for e, v in figures["errors"].items())),
        ("mismatches", figures["mismatches"]),
        ("simulator speed", f"{figures['sim_cycles_per_second']} cycles/s"),
        ("wall time (with build)", f"{figures['wall_seconds']} s"),
    ]


def _link_rows(figures):
    """The lossy scenarios' channel and link rows."""
    return [
        ("channels", "; ".join(f"from {e}: {c['frames']} frames, {c['dropped']} dropped, "
                               f"{c['error_beats']} bit errors, {c['ctl_dropped']} control "
                               "dropped" for e, c in figures["channels"].items())),
        ("links", "; ".join(f"{e}: {l['tx']['TX_OK']} sent, {l['tx']['TX_REPLAYED']} replayed "
                            f"({l['tx']['TX_REPLAY_NACK']} by NACK, {l['tx']['TX_REPLAY_TIMER']} "
                            f"by timer), {l['rx']['RX_BAD']} bad received"
                            for e, l in figures["link_counts"].items())),
    ]


def _key_crc(f):
    return (f"{f['bytes_per_cycle']} of {f['peak_bytes_per_cycle']} B/clock, {f['frames']} frames "
            f"+ {f['blocks']} blocks")


def _key_tl(f):
    d = f["directions"]
    return ("efficiency " + " / ".join(f"{x['efficiency']:.2%}" for x in d.values())
            + ", flits/clock " + " / ".join(str(x["flits_per_clock"]) for x in d.values()))


def _key_ualink(f):
    dl = f["dl"]
    return (_key_tl(f) + f"; {dl['a_tx_replays'] + dl['b_tx_replays']} replays, "
            f"{dl['a_rx_bad_crc'] + dl['b_rx_bad_crc']} bad CRCs")


def _key_ethx(f):
    bad = sum(g["bad_data"] + g["bad_resp"] for g in f["generators"].values())
    mp = f["litmus"]
    line = (f"{f['bytes_per_clock']} B/clock, {f['frames']} frames, {bad} wrong; litmus "
            f"{mp['rounds_done']} rounds, {mp['stale'] + mp['bad_acquire']} failures")
    if f["links"]:
        links = f["link_counts"].values()
        line += (f"; {sum(x['tx']['TX_REPLAYED'] for x in links)} replayed, "
                 f"{sum(x['rx']['RX_BAD'] for x in links)} bad frames")
    return line


#: Per scenario: its figures in one line for the summary, and its rows for the full report.
SUMMARY = {"crc": (_key_crc, _crc_rows), "tl": (_key_tl, _tl_rows),
           "tl_cache": (_key_tl, _tl_rows), "ualink": (_key_ualink, _ualink_rows),
           "ethx": (_key_ethx, _ethx_rows), "ethx_lossy": (_key_ethx, _ethx_rows),
           "ethx_long": (_key_ethx, _ethx_rows)}


def scenarios():
    """Every scenario: ``{name: (make the component, config, toplevel, module, env)}``."""
    crc_env = {"SIM_CRC_ITEMS": os.environ.get("SIM_CRC_ITEMS", "20000")}
    tl_env = {"SIM_TL_ITEMS": os.environ.get("SIM_TL_ITEMS", "20000")}
    ualink_env = {"SIM_TL_ITEMS": os.environ.get("SIM_UALINK_ITEMS", "20000"),
                  "SIM_BER": os.environ.get("SIM_BER", "1e-5")}
    rounds = os.environ.get("SIM_ETHX_ROUNDS", "500")
    ethx_env = {"SIM_ETHX_FRAMES": os.environ.get("SIM_ETHX_FRAMES", "20000"),
                "SIM_ETHX_ROUNDS": rounds, "SIM_LOSSY_FER": "0", "SIM_LOSSY_BER": "0"}
    lossy_env = dict(ethx_env, SIM_LOSSY_FER=os.environ.get("SIM_LOSSY_FER", "1e-3"),
                     SIM_LOSSY_BER=os.environ.get("SIM_LOSSY_BER", "1e-6"))
    long_env = dict(lossy_env, SIM_ETHX_FRAMES=os.environ.get("SIM_ETHX_LONG_FRAMES", "100000"))
    return {
        "crc": (lambda: CrcTraffic(CONFIG), CONFIG, "crc_traffic", "sim.crc.system", crc_env),
        "tl": (lambda: TlLink(TL_CONFIG), TL_CONFIG, "tl_link", "sim.tl.system", tl_env),
        "tl_cache": (lambda: TlLink(TL_CACHE_CONFIG), TL_CACHE_CONFIG, "tl_link",
                     "sim.tl.system", tl_env),
        "ualink": (lambda: UalinkLink(UALINK_LINK), UALINK_LINK, "ualink_link",
                   "sim.ualink.system", ualink_env),
        "ethx": (lambda: EthxTrafficSystem(ETHX_CONFIG), ETHX_CONFIG, "ethx_traffic_system",
                 "sim.ethx.run", ethx_env),
        "ethx_lossy": (lambda: EthxTrafficSystem(ETHX_LOSSY_CONFIG), ETHX_LOSSY_CONFIG,
                       "ethx_traffic_system", "sim.ethx.run", lossy_env),
        "ethx_long": (lambda: EthxTrafficSystem(ETHX_LOSSY_CONFIG), ETHX_LOSSY_CONFIG,
                      "ethx_traffic_system", "sim.ethx.run", long_env),
    }


def chosen(names=None):
    """The scenario names ``SIM_SCENARIOS`` (comma-separated) selects, all by default; an
    unknown name raises ``SystemExit`` with the valid ones."""
    names = names if names is not None else os.environ.get("SIM_SCENARIOS", "")
    wanted = [n.strip() for n in names.split(",") if n.strip()] or list(SUMMARY)
    unknown = [n for n in wanted if n not in SUMMARY]
    if unknown:
        raise SystemExit(f"unknown scenario {', '.join(unknown)}; the scenarios are: "
                         f"{', '.join(SUMMARY)}")
    return wanted


def _full_report(results):
    """The full report, a block of rows per scenario, as text."""
    lines = []
    for name, figures in results.items():
        if figures:
            lines.append(f"[{name}]")
            lines += [f"  {label:<28} {value}" for label, value in SUMMARY[name][1](figures)]
    return "\n".join(lines) + "\n"


def _summary(results, failures):
    table = Table(title="make sim", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("scenario", "result", "seed", "wall s", "cycles/s", "figures"):
        table.add_column(column, overflow="fold", no_wrap=column != "figures")
    for name, figures in results.items():
        if figures is None:
            table.add_row(name, "[red]FAIL[/]", "", "", "", "no report")
            continue
        table.add_row(name, "[red]FAIL[/]" if name in failures else "[green]pass[/]",
                      str(figures["seed"]), str(figures["wall_seconds"]),
                      f"{figures['sim_cycles_per_second']:,}",
                      f"{figures['mismatches']} wrong; " + SUMMARY[name][0](figures))
    return table


def main():
    names = chosen()
    console = Console(highlight=False)
    console.width = max(console.width, 120)
    report = toolchain.BUILD / "sim" / "report.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    every = scenarios()
    results, failures = {}, {}
    columns = [TextColumn("{task.description:<11}"), BarColumn(bar_width=24),
               MofNCompleteColumn(), TextColumn("{task.fields[state]}"),
               TimeElapsedColumn()]
    with Progress(*columns, console=console) as bar:
        for name in names:
            task = bar.add_task(name, total=None, state="")

            def show(live, task=task):
                if "state" in live:
                    bar.update(task, state=live["state"])
                    return
                rate = live["cycles"] / max(live["wall"], 1e-9)
                bar.update(task, total=live["total"], completed=live["done"],
                           state=f"{rate:,.0f} cycles/s, {live['errors']} errors")

            figures, failure = _run(name, *every[name], show)
            results[name] = figures
            state = "FAILED" if failure else "done"
            if figures:
                state += f", {figures['sim_cycles_per_second']:,} cycles/s"
            bar.update(task, state=state, **({"completed": bar.tasks[task].total}
                                             if not failure and bar.tasks[task].total else {}))
            if failure:
                failures[name] = failure
    report.write_text(json.dumps(results, indent=2))
    report.with_suffix(".txt").write_text(_full_report(results))
    console.print(_summary(results, failures))
    console.print(f"full report: {report.with_suffix('.txt').relative_to(toolchain.REPO)}, "
                  f"figures: {report.relative_to(toolchain.REPO)}")
    for name, failure in failures.items():
        logs = toolchain.BUILD / "sim" / name
        console.print(f"[red]FAILED[/] {name}: {failure}\n  logs: {logs / 'run.log'}, "
                      f"{logs / 'build.log'}", markup=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
