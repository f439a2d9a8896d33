"""cocotb benchmark of the UALink DL (``make bench``, :func:`sim.bench.bench_dl`): two ends over
the error-injecting links at full load, goodput against the bit error rate next to the
go-back-N bound, the round trip measured without errors, and a long run. Writes the JSON
named by ``BENCH_OUT``."""

import json
import os
from pathlib import Path

import cocotb

from sim.dl_link_env import ber_threshold, bound, drain, flit_error_rate, measure, start

#: One-way delay of the error links, clocks.
DELAY = 60
#: Rx_replay_limit, flit times: above the round trip (21 DL flits here), so that a Replay
#: Request is repeated only once the replay it asked for had time to come.
REPLAY_LIMIT = int(os.environ.get("BENCH_REPLAY_LIMIT", "40"))
#: Bit error rates swept, and clocks measured at each.
BERS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4)
CLOCKS = int(os.environ.get("BENCH_CLOCKS", "200000"))
#: The long run at BER 1e-6, DL flits each way.
LONG_FLITS = int(os.environ.get("BENCH_LONG_FLITS", "1000000"))


async def _point(dut, ber, seed):
    await start(dut, delay=DELAY, seed=seed, replay_limit=REPLAY_LIMIT)
    dut.link_enable.value = 1
    dut.ber_threshold.value = ber_threshold(ber)
    delta, goodput = await measure(dut, CLOCKS)
    final = await drain(dut)
    return delta, goodput, final


@cocotb.test()
async def bench(dut):
    rows = []
    delta, goodput, _ = await _point(dut, 0, 1)
    m = max(delta["a_tx_peak"], delta["b_tx_peak"])      # the round trip, in DL flits
    clean = min(goodput.values())
    for k, ber in enumerate(BERS):
        delta, goodput, _ = await _point(dut, ber, 2 + k)
        eta = bound(ber, m)
        rows.append({"ber": ber, "q": flit_error_rate(ber), "goodput_a": goodput["a"],
                     "goodput_b": goodput["b"], "bound": eta,
                     "ratio": min(goodput.values()) / eta,
                     "replayed": delta["a_tx_replayed"] + delta["b_tx_replayed"],
                     "bad_crc": delta["a_rx_bad_crc"] + delta["b_rx_bad_crc"]})
    await start(dut, delay=DELAY, seed=99, replay_limit=REPLAY_LIMIT)
    dut.link_enable.value = 1
    dut.ber_threshold.value = ber_threshold(1e-6)
    delta, goodput = await measure(dut, LONG_FLITS * 10)
    final = await drain(dut)
    long = {"ber": 1e-6, "dl_flits": LONG_FLITS, "goodput_a": goodput["a"],
            "goodput_b": goodput["b"], "tl_flits_a_to_b": final["b_good"],
            "tl_flits_b_to_a": final["a_good"], "bad": final["a_bad"] + final["b_bad"],
            "bad_crc": final["a_rx_bad_crc"] + final["b_rx_bad_crc"],
            "replayed": final["a_tx_replayed"] + final["b_tx_replayed"]}
    Path(os.environ["BENCH_OUT"]).write_text(json.dumps(
        {"round_trip_flits": m, "delay_clocks": DELAY, "replay_limit": REPLAY_LIMIT,
         "clean_goodput": clean,
         "dl_efficiency": 628 / 640, "rows": rows, "long_run": long}, indent=2))
