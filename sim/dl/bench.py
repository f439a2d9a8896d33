# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benchmark of the UALink DL (``make bench``, :func:`sim.bench.bench_dl`): two ends over
the error-injecting links at full load, goodput against the bit error rate, a long run.

The round trip ``m`` of the go-back-N bound is measured as go-back-N defines it: the DL flits a
lost flit costs, i.e. those replayed per replay when lone flits are dropped (``replay_round_trip``;
the peak of TxReplay without errors, the Ack round trip, is reported next to it). Rx_replay_limit
is then set just above it (:data:`LIMIT_MARGIN`), the smallest value that keeps a second replay
from being asked for while the first is on its way. Writes the JSON named by ``BENCH_OUT``.
"""

import json
import os
from pathlib import Path

import cocotb

from scaleup_ip.dl import BEATS_PER_FLIT
from sim.dl.link_env import ber_threshold, drain, flit_error_rate, measure, start

#: One-way delay of the error links, clocks.
DELAY = 60
#: Rx_replay_limit = the replay round trip + this, flit times.
LIMIT_MARGIN = 2
#: Lone flit drops per flit, to measure the replay round trip.
DROP_RATE = 1e-3
#: Clocks measured without errors and per lone-drop point.
CLOCKS = int(os.environ.get("BENCH_CLOCKS", "400000"))
#: Bit error rates swept, with the clocks measured at each: 2 M clocks (200 k DL flits each
#: way) where errors are frequent, since a finite run's goodput spreads with the number of
#: errors in it (at BER 1e-5, 400 k clocks gave 0.968 of the bound in one run and 2 M 0.998).
BERS = ((1e-8, CLOCKS), (1e-7, CLOCKS), (1e-6, 5 * CLOCKS), (1e-5, 5 * CLOCKS),
        (1e-4, 5 * CLOCKS))
#: The long run at BER 1e-6, DL flits each way.
LONG_FLITS = int(os.environ.get("BENCH_LONG_FLITS", "1000000"))


async def _point(dut, seed, replay_limit, clocks=CLOCKS, **controls):
    """Bring the link up, set the error controls, measure ``clocks``, drain; the counters'
    changes, the goodput each way and the counters at the end."""
    await start(dut, delay=DELAY, seed=seed, replay_limit=replay_limit)
    dut.link_enable.value = 1
    for name, value in controls.items():
        getattr(dut, name).value = value
    delta, goodput = await measure(dut, clocks)
    return delta, goodput, await drain(dut)


@cocotb.test()
async def bench(dut):
    delta, goodput, _ = await _point(dut, 1, 255)
    ack_round_trip = max(delta["a_tx_peak"], delta["b_tx_peak"])
    clean = min(goodput.values())
    delta, _, _ = await _point(dut, 2, 255, drop_threshold=round(DROP_RATE * 2**32))
    m = round(max(delta[f"{end}_tx_replayed"] / delta[f"{end}_tx_replays"] for end in "ab"))
    limit = m + LIMIT_MARGIN
    rows = []
    for k, (ber, clocks) in enumerate(BERS):
        delta, goodput, _ = await _point(dut, 3 + k, limit, clocks,
                                         ber_threshold=ber_threshold(ber))
        rows.append({"ber": ber, "clocks": clocks, "q": flit_error_rate(ber),
                     "goodput_a": goodput["a"],
                     "goodput_b": goodput["b"],
                     "q_seen": sum(delta[f"{end}_rx_bad_crc"] for end in "ab")
                     / sum(delta[f"{end}_rx_flits"] for end in "ab"),
                     "replayed": delta["a_tx_replayed"] + delta["b_tx_replayed"],
                     "bad_crc": delta["a_rx_bad_crc"] + delta["b_rx_bad_crc"]})
    _, goodput, final = await _point(dut, 99, limit, clocks=LONG_FLITS * BEATS_PER_FLIT,
                                     ber_threshold=ber_threshold(1e-6))
    long = {"ber": 1e-6, "dl_flits": LONG_FLITS, "goodput_a": goodput["a"],
            "goodput_b": goodput["b"], "tl_flits_a_to_b": final["b_good"],
            "tl_flits_b_to_a": final["a_good"], "bad": final["a_bad"] + final["b_bad"],
            "bad_crc": final["a_rx_bad_crc"] + final["b_rx_bad_crc"],
            "replayed": final["a_tx_replayed"] + final["b_tx_replayed"]}
    Path(os.environ["BENCH_OUT"]).write_text(json.dumps(
        {"round_trip_flits": m, "ack_round_trip_flits": ack_round_trip, "delay_clocks": DELAY,
         "replay_limit": limit, "clean_goodput": clean, "dl_efficiency": 628 / 640,
         "rows": rows, "long_run": long}, indent=2))
