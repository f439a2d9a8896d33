"""The lossless Ethernet link under the ETH-X bridge: link-level retry and credit-based flow
control, UEC style [README]."""
