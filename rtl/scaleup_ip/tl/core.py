# SPDX-License-Identifier: BSD-2-Clause
"""A UALink TL: packer and unpacker with their credit loop closed."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..config import ConfiguredComponent
from .layout import (
    CREDIT_BITS,
    TlConfig,
    UpliError,
    credit_array,
    flit_stream,
    rx_error_counts,
    tx_cache_port,
    upli_members,
)
from .rx.unpacker import TlRx
from .tx.packer import TlTx

__all__ = ["TlCore"]


class TlCore(ConfiguredComponent):
    """One TL end [UALink 1.0 §5]: :class:`~scaleup_ip.tl.tx.packer.TlTx` and :class:`~scaleup_ip.tl.rx.unpacker.TlRx`.

    The receiver's decoded Flow Control grants feed the packer's credits, and its released and
    returned buffers become the packer's Flow Control fields [§5.8], so two cores joined flit to
    flit run the whole TL credit protocol.

    Parameters
    ----------
    config : TlConfig

    Members
    -------
    req, orig, rd_rsp, wr_rsp : In(stream)
        Local UPLI traffic to send: requests with originator data (from the originator), read
        and write responses (from the completer).
    rx_req, rx_orig, rx_rd_rsp, rx_wr_rsp : Out(stream)
        Received UPLI traffic: requests with data toward the completer, responses toward the
        originator.
    flit_out : Out(flit_stream()), flit_in : In(flit_stream())
        TL flits to and from the data link; ``flit_in.ready`` is always 1.
    init_sent, peer_init : Out(1)
        Initial Credit Release Complete sent, and received.
    error : Out(1), error_counts : Out(rx_error_counts)
        The receiver's fatal error and its per-kind counters.
    credits : Out(credit_array(CREDIT_BITS))
        TL credits the packer holds (for credit-conservation checks).
    upli_events : Out(len(UpliError))
        The packer's UPLI violation pulses (:attr:`~scaleup_ip.tl.tx.packer.TlTx.upli_events`).
    tx_cache : Out(tx_cache_port())
        The Tx address cache's controls, with a cache
        (:attr:`~scaleup_ip.tl.tx.packer.TlTx.tx_cache`).

    Latency and throughput are those of :class:`~scaleup_ip.tl.tx.packer.TlTx` and
    :class:`~scaleup_ip.tl.rx.unpacker.TlRx`.
    """

    config_class = TlConfig

    def __init__(self, config):
        super().__init__(config, lambda config: {
            **upli_members(In),
            **({} if config.tx_cache is None else {"tx_cache": Out(tx_cache_port())}),
            **upli_members(Out, "rx_"),
            "flit_out": Out(flit_stream()),
            "flit_in": In(flit_stream()),
            "init_sent": Out(1),
            "peer_init": Out(1),
            "error": Out(1),
            "error_counts": Out(rx_error_counts),
            "credits": Out(credit_array(CREDIT_BITS)),
            "upli_events": Out(len(UpliError)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.tx = tx = TlTx(self._config)
        m.submodules.rx = rx = TlRx(self._config)
        for port in ("req", "orig", "rd_rsp", "wr_rsp"):
            wiring.connect(m, wiring.flipped(getattr(self, port)), getattr(tx, port))
            wiring.connect(m, getattr(rx, port), wiring.flipped(getattr(self, f"rx_{port}")))
        wiring.connect(m, tx.flit, wiring.flipped(self.flit_out))
        if self._config.tx_cache is not None:
            wiring.connect(m, wiring.flipped(self.tx_cache), tx.tx_cache)
        wiring.connect(m, wiring.flipped(self.flit_in), rx.flit)
        m.d.comb += [
            tx.grant.eq(rx.grant), tx.give.eq(rx.give), tx.give_init.eq(rx.give_init),
            self.init_sent.eq(tx.init_sent), self.peer_init.eq(rx.peer_init),
            self.error.eq(rx.error), self.error_counts.eq(rx.error_counts),
            self.credits.eq(tx.credits), self.upli_events.eq(tx.upli_events),
        ]
        return m
