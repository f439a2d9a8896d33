"""Pure-Python golden models: ints and bytes in, ints and bytes out; no Amaranth, no cocotb."""
