# SPDX-License-Identifier: BSD-2-Clause
"""The receive side's first block: every frame from the wire checked and classified."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from ....config import ConfiguredComponent
from ....crc import Crc32, CrcConfig
from ....model.crc.crc32 import FINAL_XOR
from ....model.ethx.bridge import ETHERTYPE, HEADER_BYTES, WORD
from ....model.ethx.link import POISON_RESIDUE, TAG_BYTES, TPID
from ..config import CONTROL_BYTES, FCS_BYTES, LINK_WORD_BYTES, MIN_BYTES, LinkConfig
from ..layout import (
    CAPTURE_FROM,
    LINK_ETHERTYPE,
    Class,
    Ctl,
    capture_layout,
    eth_stream,
    link_vc,
    rx_beat_layout,
    settings_layout,
)

__all__ = ["RxCheck"]

#: Beats that wait for their frame's FCS check: more than the CRC engine's latency, so that
#: the wire is never held while a frame's last beat waits.
_BEATS = 8
#: Frames whose last beat has arrived and whose FCS is being checked.
_FRAMES = 4
_CONTROL_KINDS = (Ctl.ACK, Ctl.NACK, Ctl.INIT, Ctl.INIT_ECHO, Ctl.CF_UPDATE)
#: The TPID as its two bytes come, in a little-endian value [README §1].
_TPID_LE = int.from_bytes(TPID.to_bytes(2, "big"), "little")


def _capture_bits(config):
    """Bits of the bytes taken from byte 8 on: those of :data:`capture_layout`, and the tag's
    with ``vlan``."""
    return capture_layout.size + 8 * config.tag_bytes


def _info_layout(config):
    """What a frame's last beat leaves for its judgement."""
    return data.StructLayout({
        "length": range(config.max_wire_bytes + 2),     # saturates past the longest
        "user": 1,
        "capture": _capture_bits(config),
    })


class RxCheck(ConfiguredComponent):
    """Each frame from the wire checked (README §1 "Receive checks") and classified
    (:class:`~scaleup_ip.ethx.link.layout.Class`), its beats passed on with a
    :func:`~scaleup_ip.ethx.link.layout.verdict_layout` on the last one.

    Bytes 8 .. 55 are taken as they pass (:data:`~scaleup_ip.ethx.link.layout.capture_layout`;
    8 .. 63 with ``vlan``, a tagged frame's read without its tag); the FCS is checked by a
    :class:`~scaleup_ip.crc.Crc32` beside a queue of the frame's beats, so a beat leaves at once
    and only a last beat waits for its frame's FCS.

    Latency: one clock for a beat; a last beat, the CRC engine's latency. Throughput: one
    beat per clock; ``i.ready`` falls only if ``o`` is held.

    Members
    -------
    i : ``In(eth_stream(eth_width))``
        Frames from the wire, FCS included; ``user`` on a last beat: the MAC found it bad.
    o : ``Out(stream.Signature(rx_beat_layout(config)))``
        The same beats without ``keep`` (full beats but the FCS's), ``store`` clear on the
        link word's bytes 16 .. 23 (of any frame; with ``vlan``, of a frame whose bytes 12 .. 13
        are the TPID: on the tag, the zero bytes and the link word, bytes 12 .. 15 and 20 .. 31,
        ``merge`` on bytes 16 .. 23 at 64 bits), and the verdict on ``last``.
    settings : ``In(settings_layout(config))``
        With ``vlan`` only: the VID and the PCP-to-VC table are read.
    """

    config_class = LinkConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)),
            "o": Out(stream.Signature(rx_beat_layout(c))),
        } | ({"settings": In(settings_layout(c))} if c.vlan else {}))

    def elaborate(self, platform):
        cfg, i = self.config, self.i
        m = Module()
        m.submodules.crc = crc = Crc32(CrcConfig(data_width=cfg.eth_width, pipeline=1))
        beat_layout = data.StructLayout({"data": cfg.eth_width, "last": 1, "store": 1,
                                         "merge": 1})
        m.submodules.beats = beats = SyncFIFO(width=beat_layout.size, depth=_BEATS)
        m.submodules.infos = infos = SyncFIFO(width=_info_layout(cfg).size, depth=_FRAMES)

        take = i.valid & i.ready
        m.d.comb += [i.ready.eq(beats.w_rdy & infos.w_rdy & crc.i.ready),
                     crc.i.payload.data.eq(i.p.data), crc.i.payload.keep.eq(i.p.keep),
                     crc.i.payload.last.eq(i.p.last), crc.i.valid.eq(take)]

        # Position, length and capture of the frame coming in.
        pos = Signal(range(cfg.max_wire_bytes + 2))       # saturates past the longest
        user = Signal()
        capture = Signal(_capture_bits(cfg))
        rows = len(capture) // cfg.eth_width
        slot = (pos - CAPTURE_FROM)[:len(pos)] >> (cfg.eth_bytes.bit_length() - 1)
        nbytes = sum(i.p.keep[k] for k in range(cfg.eth_bytes))
        total = Mux(pos + nbytes > cfg.max_wire_bytes, cfg.max_wire_bytes + 1, pos + nbytes)
        with m.If(take):
            m.d.sync += [pos.eq(Mux(i.p.last, 0, total)), user.eq(~i.p.last & (user | i.p.user))]
        beat = Signal(beat_layout)
        m.d.comb += [beat.data.eq(i.p.data), beat.last.eq(i.p.last),
                     beats.w_data.eq(beat), beats.w_en.eq(take)]
        self._store(m, pos, take, beat)
        # The captured bytes with this beat's in place: registered, and queued with a last beat.
        now = Signal.like(capture)
        m.d.comb += now.eq(capture)
        for k in range(rows):
            with m.If((pos >= CAPTURE_FROM) & (slot == k)):
                m.d.comb += now.word_select(k, cfg.eth_width).eq(i.p.data)
        with m.If(take):
            m.d.sync += capture.eq(now)
        info = Signal(_info_layout(cfg))
        m.d.comb += [info.length.eq(total), info.user.eq(user | i.p.user), info.capture.eq(now),
                     infos.w_data.eq(info), infos.w_en.eq(take & i.p.last)]

        # Out: beats at once; a last beat with its frame's FCS result and verdict.
        out = Signal(beat_layout)
        head = Signal(_info_layout(cfg))
        m.d.comb += [out.eq(beats.r_data), head.eq(infos.r_data)]
        judged = ~out.last | (infos.r_rdy & crc.o.valid)
        o = self.o
        m.d.comb += [o.valid.eq(beats.r_rdy & judged), o.p.data.eq(out.data),
                     o.p.last.eq(out.last), o.p.store.eq(out.store), o.p.merge.eq(out.merge),
                     beats.r_en.eq(o.valid & o.ready)]
        done = o.valid & o.ready & out.last
        m.d.comb += [infos.r_en.eq(done), crc.o.ready.eq(done)]
        # The CRC engine's result for a frame ending in its poisoned FCS (README §1).
        poisoned = (crc.o.payload.crc == (POISON_RESIDUE ^ FINAL_XOR)) & ~crc.o.payload.malformed
        self._judge(m, head, crc.o.payload.ok & ~crc.o.payload.malformed, poisoned, o.p.verdict)
        return m

    def _store(self, m, pos, take, beat):
        """``store`` and ``merge`` of the beat at ``pos``: clear on the link word's bytes; with
        ``vlan``, of a frame whose bytes 12 .. 13 are the TPID, on the tag, the zero bytes and
        the link word, the 64-bit beat of bytes 8 .. 15 merged into the next (README §1). At 8
        bits byte 12 alone decides (0x81): a frame whose byte 13 then differs is foreign, and
        the receive buffer keeps nothing of it."""
        cfg, i = self.config, self.i
        word = (pos >= HEADER_BYTES) & (pos < HEADER_BYTES + LINK_WORD_BYTES)
        if not cfg.vlan:
            m.d.comb += [beat.store.eq(~word), beat.merge.eq(0)]
            return
        data = i.p.data
        if cfg.eth_width == 64:
            here = (pos == 8) & (data[32:48] == _TPID_LE)
        elif cfg.eth_width == 32:
            here = (pos == 12) & (data[:16] == _TPID_LE)
        else:
            here = (pos == 12) & (data == TPID >> 8)
        tagging = Signal()
        with m.If(take):
            m.d.sync += tagging.eq(~i.p.last & (tagging | here))
        t = tagging | here
        if cfg.eth_width == 64:
            drop = Mux(t, (pos == 8) | (pos == 24), word)
            m.d.comb += beat.merge.eq(t & (pos == 16))
        else:
            drop = Mux(t, ((pos >= 12) & (pos < 16)) | ((pos >= 20) & (pos < 32)), word)
            m.d.comb += beat.merge.eq(0)
        m.d.comb += beat.store.eq(~drop)

    def _view(self, m, info):
        """The captured bytes as :data:`capture_layout` reads them, the frame's length and
        whether it came tagged: with ``vlan``, a frame whose bytes 12 .. 13 are the TPID and
        whose VID is the settings' is read without its tag (README §1)."""
        cfg = self.config
        raw = info.capture
        if not cfg.vlan:
            return data.View(capture_layout, raw), info.length, Const(0, 1), None
        tci = Cat(raw[56:64], raw[48:56])                   # bytes 14 .. 15, big-endian
        tag = (raw[32:48] == _TPID_LE) & (tci[:12] == self.settings.vid)
        untagged = Cat(raw[:32], raw[64:96], raw[128:])
        view = Signal(capture_layout)
        m.d.comb += view.eq(Mux(tag, untagged, raw[:capture_layout.size]))
        return view, Mux(tag, info.length - TAG_BYTES, info.length), tag, tci[13:16]

    def _judge(self, m, info, fcs_ok, poisoned, verdict):
        """A frame's class and fields from its length, MAC flag, FCS (good, or ``poisoned``:
        the good one XOR the poison) and captured bytes."""
        cfg = self.config
        cap, length, tag, pcp = self._view(m, info)
        kind = Signal(Ctl)
        m.d.comb += kind.eq(cap.b14)
        etype = Cat(cap.type_lo, cap.type_hi)
        ours, link = etype == ETHERTYPE, etype == LINK_ETHERTYPE
        poison = ours & poisoned
        # The runt and giant rules on the length as received, and on the untagged length for
        # the link's frames: with ``vlan`` an untagged one is 8 bytes shorter at most.
        size_bad = ((info.length < MIN_BYTES) | (info.length > cfg.max_wire_bytes)
                    | ((ours | link) & ((length < MIN_BYTES)
                                        | (length > cfg.max_wire_bytes - cfg.tag_bytes))))
        bad = (info.user | size_bad
               | ~(fcs_ok | poison) | (ours & ((length & (WORD - 1)) != FCS_BYTES))
               | (link & (length != CONTROL_BYTES + FCS_BYTES)))
        control = link & kind.as_value().matches(*_CONTROL_KINDS)
        with m.If(bad):
            m.d.comb += verdict.cls.eq(Class.BAD)
        with m.Elif(poison):
            m.d.comb += verdict.cls.eq(Class.POISONED)
        with m.Elif(ours):
            m.d.comb += verdict.cls.eq(Class.DATA)
        with m.Elif(link & (kind == Ctl.CC_UPDATE)):
            m.d.comb += verdict.cls.eq(Class.CC)
        with m.Elif(control):
            m.d.comb += verdict.cls.eq(Class.CONTROL)
        with m.Else():
            m.d.comb += verdict.cls.eq(Class.FOREIGN)
        m.d.comb += [
            verdict.kind.eq(Mux(link, kind, Ctl.NONE)),
            verdict.seq.eq(cap.word.seq),
            verdict.bytes.eq(Mux(bad, 0, length - LINK_WORD_BYTES - FCS_BYTES)),
            verdict.vc.eq(link_vc(cap.b14, cfg.vcs)),
            verdict.tagged.eq(tag),
        ]
        if cfg.vlan:
            with m.If(tag):         # entries at or above ``vcs`` name the last VC [ours]
                entry = self.settings.vc_of_pcp[pcp]
                m.d.comb += verdict.vc.eq(Mux(entry >= cfg.vcs, cfg.vcs - 1, entry))
        for v in range(cfg.vcs):
            m.d.comb += verdict.counts[v].eq(cap.counts[v])
