"""ETH-X AXI-to-Ethernet bridge: AXI4 transactions as records in Ethernet frames [ours]."""
