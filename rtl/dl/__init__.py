"""UALink data link (DL): 640-byte DL flits, CRC, link-level replay [UALink 1.0 ch. 6]."""
