# SPDX-License-Identifier: BSD-2-Clause
"""Open, synthesizable scale-up interconnect IP in Amaranth HDL.

Each subpackage exports its cores, configurations and layouts:

- :mod:`scaleup_ip.tl`: the UALink transaction layer (:class:`~scaleup_ip.tl.TlEndpoint`);
- :mod:`scaleup_ip.dl`: the UALink data link (:class:`~scaleup_ip.dl.UalinkDl`);
- :mod:`scaleup_ip.ualink`: a whole UALink end, TL over DL (:class:`~scaleup_ip.ualink.UalinkEnd`);
- :mod:`scaleup_ip.ethx`: the ETH-X bridge (:class:`~scaleup_ip.ethx.EthxBridge`) and node
  (:class:`~scaleup_ip.ethx.EthxNode`); :mod:`scaleup_ip.ethx.link`: the lossless link;
- :mod:`scaleup_ip.crc`: the CRC-32 engine;
- :mod:`scaleup_ip.model`: the golden models, pure Python;
- :mod:`scaleup_ip.export`: Verilog of the integration tops (``python -m scaleup_ip.export``).
"""
