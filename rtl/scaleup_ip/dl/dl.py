# SPDX-License-Identifier: BSD-2-Clause
"""The UALink data link: TL flits to and from 640-byte DL flits with CRC and link-level replay
[UALink 1.0 ch. 6]."""

from amaranth import Module, Mux, Signal
from amaranth.lib import enum
from amaranth.lib.wiring import In, Out, connect, flipped

from ..config import ConfiguredComponent
from ..skid import SkidBuffer
from ..tl.layout import flit_stream
from .crc.check import DlCrcCheck
from .crc.insert import DlCrcInsert
from .from_wire import DlFromWire
from .layout import (
    ACK_TIMEOUT_BITS,
    MAX_UNACKED,
    REPLAY_LIMIT_BITS,
    DlConfig,
    LinkMode,
    body_beat_layout,
    phy_stream,
    rx_counts,
    tx_counts,
    unpack_beat_layout,
)
from .llr.rx import LlrRx
from .llr.tx import LlrTx
from .unpack import DlUnpack
from .to_wire import DlToWire
from .pack import DlPack

__all__ = ["DlState", "UalinkDl"]

#: [§6.7.1.3] Consecutive flits received that take the NOP state Up.
_UP_RECEIVED = 2


class DlState(enum.Enum, shape=2):
    """DL link states [§6.7.1]."""
    FAULT = 0
    IDLE = 1
    NOP = 2
    UP = 3


class UalinkDl(ConfiguredComponent):
    """One end of a UALink data link.

    Transmit: TL flits (``tl_in``) are packed into DL flit bodies (:class:`DlPack`), given sequence
    numbers and headers and kept for replay (:class:`LlrTx`), put in the wire order of Figure 6-4
    (:class:`DlToWire`) and sent with their CRC (:class:`DlCrcInsert`) on ``phy_out``. Receive:
    flits from ``phy_in`` are checked (:class:`DlCrcCheck`), put back in the logical order
    (:class:`DlFromWire`), taken in order or dropped by the replay rules (:class:`LlrRx`), and
    unpacked (:class:`DlUnpack`) to ``tl_out``. The receiver tells the transmitter what to Ack and
    when to ask for a replay, and hands it the Acks and Replay Requests received.

    Link states [§6.7.1]: FAULT while ``fault`` (the reset state; [ours] no RS: ``fault``
    stands for its fault signalling), then IDLE (nothing sent); NOP when ``enable`` (NOP flits
    only), UP once ``config.nop_flits`` NOP flits are sent and two flits in a row were
    received with a good CRC; back to IDLE on an ack timeout, ``retrain`` [ours: a PHY
    retrain, or a higher layer taking the link down] or a malformed DL flit received
    (:class:`DlUnpack` contains it, §6.7.4.2), and from there to NOP again while ``enable``.
    The replay state is kept through IDLE and NOP [ours], so flits lost while the link was
    down are replayed when it is UP again: nothing is lost but the TL flits a malformed flit
    takes with it (README §1). Entering NOP makes the
    receiver trust only Explicit flits until one is taken (Rx_ambiguous) [ours], since flits
    lost while the link was down never showed as bad CRCs.

    Latency (no errors, empty queues): a TL flit is on ``phy_out`` within about 50 clocks
    (its DL flit's 10 beats, the wire order's 11, the CRC's 11, registers, the skid buffer
    after the packer and TxReplay's read), and out of ``tl_out`` about 28 clocks after its DL
    flit's last beat arrives (with the skid buffer before the unpacker). An Ack or Replay
    Request received acts on the transmitter's flits that start from 3 clocks after the
    receiver takes the flit that carries it (a register between the two halves, the
    transmitter's choice made a clock ahead) [ours]. Throughput: a DL flit every 10 clocks
    each way (9.8125 TL flits), while ``phy_out`` is ready and TxReplay has room.

    Parameters
    ----------
    config : DlConfig

    Members
    -------
    tl_in : In(flit_stream()), tl_out : Out(flit_stream())
        TL flits to send and received.
    phy_out : Out(phy_stream()), phy_in : In(phy_stream())
        DL flits, 64 bytes per beat.
    fault, enable, retrain : In(1)
        Link control (see above).
    ack_timeout : In(ACK_TIMEOUT_BITS), replay_limit : In(REPLAY_LIMIT_BITS)
        Tx_ack_time_out and Rx_replay_limit, in flit times [§6.6.5.8, §6.6.4.6]; the spec's
        defaults are :data:`~scaleup_ip.dl.layout.ACK_TIMEOUT_DEFAULT` and
        :data:`~scaleup_ip.dl.layout.REPLAY_LIMIT_DEFAULT`.
    state : Out(DlState)
        The link state (above).
    tx_counts : Out(tx_counts), rx_counts : Out(rx_counts)
        The replay counters.
    malformed : Out(32)
        Taken flits with a malformed segment header.
    ups : Out(32)
        Times the link went UP.
    unacked : Out(range(MAX_UNACKED + 1))
        Flits in TxReplay, not yet acknowledged.
    """

    config_class = DlConfig

    def __init__(self, config):
        super().__init__(config, {
            "tl_in": In(flit_stream()),
            "tl_out": Out(flit_stream()),
            "phy_out": Out(phy_stream()),
            "phy_in": In(phy_stream()),
            "fault": In(1),
            "enable": In(1),
            "retrain": In(1),
            "ack_timeout": In(ACK_TIMEOUT_BITS),
            "replay_limit": In(REPLAY_LIMIT_BITS),
            "state": Out(DlState),
            "tx_counts": Out(tx_counts),
            "rx_counts": Out(rx_counts),
            "malformed": Out(32),
            "ups": Out(32),
            "unacked": Out(range(MAX_UNACKED + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.pack = pack = DlPack()
        m.submodules.llr_tx = tx = LlrTx(cfg)
        m.submodules.to_wire = to_wire = DlToWire()
        m.submodules.crc_tx = crc_tx = DlCrcInsert()
        m.submodules.crc_rx = crc_rx = DlCrcCheck()
        m.submodules.from_wire = from_wire = DlFromWire()
        m.submodules.llr_rx = rx = LlrRx(cfg)
        m.submodules.unpack = unpack = DlUnpack()
        # [ours] A skid buffer between the packer and the transmitter, and one between the
        # receiver and the unpacker (a clock each way): the transmitter's choice of the next
        # flit (from the link state) reaches the packer's wide registers no more, nor the
        # receiver's verdict the unpacker's, nor the unpacker's step the receive side's
        # handshakes (the CRC check's verdict queue and the wire order). The unpacker's
        # decision starts from the beat, so the second has its own output register.
        m.submodules.body_skid = body_skid = SkidBuffer(body_beat_layout)
        m.submodules.rx_skid = rx_skid = SkidBuffer(unpack_beat_layout, flop_out=True)
        connect(m, flipped(self.tl_in), pack.i)
        connect(m, pack.o, body_skid.i)
        connect(m, body_skid.o, tx.body)
        connect(m, tx.o, to_wire.i)
        connect(m, to_wire.o, crc_tx.i)
        connect(m, crc_tx.o, flipped(self.phy_out))
        connect(m, flipped(self.phy_in), crc_rx.i)
        connect(m, crc_rx.o, from_wire.i)
        connect(m, from_wire.o, rx.i)
        connect(m, rx.o, rx_skid.i)
        connect(m, rx_skid.o, unpack.i)
        connect(m, unpack.o, flipped(self.tl_out))
        # The receiver's commands and its own Replay Requests reach the transmitter through
        # registers: one clock of Ack and Replay Request latency [ours], off the transmitter's
        # window checks and the receiver's verdict.
        m.d.sync += [tx.ingress.eq(rx.ingress), tx.request.eq(rx.request)]
        m.d.comb += [
            tx.rx_seq.eq(rx.rx_seq),
            tx.ack_timeout.eq(self.ack_timeout), rx.replay_limit.eq(self.replay_limit),
            crc_tx.kill.eq(0),
            self.tx_counts.eq(tx.counts), self.rx_counts.eq(rx.counts),
            self.malformed.eq(unpack.malformed), self.unacked.eq(tx.unacked),
        ]
        self._states(m, tx, rx, unpack)
        return m

    def _states(self, m, tx, rx, unpack):
        """The link state machine [§6.7.1] and the transmitter's mode; a malformed DL flit
        takes the link down [§6.7.4.2], and the unpacker starts afresh when it comes up."""
        cfg = self._config
        nops = Signal(range(cfg.nop_flits + 1))
        received = Signal(range(_UP_RECEIVED + 1))
        state = self.state
        # The transmitter's mode is a register of its own, written with the state (the same
        # value the state's decode would give, in the same clock), so that it can be placed by
        # the transmitter's choice of the next flit rather than by the state machine.
        mode = Signal(LinkMode)
        modes = {DlState.FAULT: LinkMode.IDLE, DlState.IDLE: LinkMode.IDLE,
                 DlState.NOP: LinkMode.NOP, DlState.UP: LinkMode.UP}

        def go(to):
            return [state.eq(to), mode.eq(modes[to])]
        m.d.comb += [tx.mode.eq(mode), rx.resync.eq(0), unpack.restart.eq(rx.resync)]
        with m.Switch(state):
            with m.Case(DlState.FAULT):
                m.d.sync += go(DlState.IDLE)
            with m.Case(DlState.IDLE):
                m.d.sync += [nops.eq(0), received.eq(0)]
                with m.If(self.enable & ~self.retrain):
                    m.d.sync += go(DlState.NOP)
                    m.d.comb += rx.resync.eq(1)
            with m.Case(DlState.NOP):
                with m.If(tx.nop & (nops != cfg.nop_flits)):
                    m.d.sync += nops.eq(nops + 1)
                with m.If(rx.ingress.flit):
                    m.d.sync += received.eq(Mux(rx.good, Mux(received == _UP_RECEIVED, received,
                                                             received + 1), 0))
                with m.If((nops == cfg.nop_flits) & (received == _UP_RECEIVED)):
                    m.d.sync += [*go(DlState.UP), self.ups.eq(self.ups + 1)]
                with m.If(self.retrain | ~self.enable | unpack.fault):
                    m.d.sync += go(DlState.IDLE)
            with m.Case(DlState.UP), m.If(tx.timeout | self.retrain | ~self.enable
                                          | unpack.fault):
                m.d.sync += go(DlState.IDLE)
        with m.If(self.fault):
            m.d.sync += go(DlState.FAULT)
