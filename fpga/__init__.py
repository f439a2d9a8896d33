"""FPGA builds: board self-tests with bitstreams, and per-block Fmax and area on ECP5."""
