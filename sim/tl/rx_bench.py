# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the TL receive benchmark: unloaded latency from the flit that completes an
item to the item valid on its UPLI output, counted on the RTL."""

import json
import os

import cocotb

from scaleup_ip.model.tl.flit import Packer, Request, WriteResponse, credit_table
from scaleup_ip.tl import ReqCmd
from sim.tl.rx_env import TlRxEnv
from sim.tl.traffic import make_read_response, make_request, make_write_response

#: What is measured: name -> item builder.
ITEMS = {
    "read request": lambda rng: make_request(rng, ReqCmd.READ.value, 0x1000, 64),
    "64 B WriteFull": lambda rng: make_request(rng, ReqCmd.WRITE_FULL.value, 0x1000, 64),
    "256 B WriteFull": lambda rng: make_request(rng, ReqCmd.WRITE_FULL.value, 0x1000, 256),
    "64 B read response": lambda rng: make_read_response(rng, 0),
    "write response": lambda rng: make_write_response(rng),
}


def _output(dut, item):
    if isinstance(item, Request):
        return dut.req__valid
    return dut.wr_rsp__valid if isinstance(item, WriteResponse) else dut.rd_rsp__valid


@cocotb.test(timeout_time=1, timeout_unit="ms")
async def bench(dut):
    env = TlRxEnv(dut)
    rows = []
    for name, make in ITEMS.items():
        init = await env.reset()
        model = Packer(credit_table(), init)
        flits = [f for f in iter(model.step, None)]             # FC fields and 0x01 message
        item = make(env.rng)
        (model.push_request if isinstance(item, Request) else model.push_response)(item)
        flits.append(None)
        flits += list(iter(model.step, None))
        for flit in flits:
            env.drive(flit)
            await env.edge()
        env.drive(None)
        valid = _output(dut, item)
        for clocks in range(1, 20):
            await env.edge()
            if valid.value:
                break
        rows.append({"item": name, "rx_latency": clocks})
        dut._log.info("%s: %d clocks", name, clocks)
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump({"config": json.loads(env.config.to_json()), "rows": rows}, f, indent=2)
