# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb side of :class:`sim.ethx.link.pair.EthxLinkPair`: both ends' bridge sides (and
best-effort sides, with ``be_bytes``), the channels between them (whose ``fate`` loses or
corrupts frames by kind), what was offered and what arrived, and the checks that every frame
arrived once and in order per VC, that the two ends' counters agree with each other and with
the channels' losses, and that nothing is kept, queued or owed credit at the end."""

import collections
import functools

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from scaleup_ip.ethx.link import (
    MIN_BE_BYTES,
    BeCount,
    LinkConfig,
    LinkRxCount,
    LinkTxCount,
    RxState,
    TxState,
    default_settings,
    eth_beat_layout,
    settings_layout,
)
from scaleup_ip.model.ethx import bridge as bridge_model
from scaleup_ip.model.ethx import link as model
from sim.ethx.env import EthxEnv, cycle
from sim.ethx.link.channel import EthxChannel
from sim.ethx.pair import NODES, other
from sim.streams import LayoutSink, LayoutSource, bytes_to_beats, random_pauses

__all__ = ["COUNT_MASK", "LinkPairEnv", "kind_of"]

COUNT_MASK = (1 << model.COUNT_BITS) - 1
#: The settings of the periodic control frames, which :meth:`LinkPairEnv.settle` stops.
_PERIODS = ("cf_period", "cc_period")


def kind_of(received):
    """A wire frame's kind for loss rules: ``data`` (poisoned ones too), ``cc``, ``be`` (a
    best-effort frame: not the link's) or a control kind's name."""
    if received.cls in (model.Class.DATA, model.Class.POISONED):
        return "data"
    if received.cls is model.Class.CC:
        return "cc"
    if received.cls is model.Class.FOREIGN:
        return "be"
    return received.kind.name.lower()


class LinkPairEnv(EthxEnv):
    """Both ends' bridge sides, the channels between them, and what was offered and got."""

    config_class = LinkConfig

    def __init__(self, dut, *, delay=30, settings=None, loss=None, corrupt=0.5,
                 first_lost=False, line_rate=False):
        super().__init__(dut)
        cfg = self.config
        layout = eth_beat_layout(cfg.eth_width)
        self.source = {e: LayoutSource(dut, f"{e}_i", layout, dut.clk, dut.rst) for e in NODES}
        self.sink = {e: LayoutSink(dut, f"{e}_o", layout, dut.clk, dut.rst) for e in NODES}
        self.settings = dict(default_settings(cfg), **(settings or {}))
        self.loss = loss or {}          # probability of loss by kind (see kind_of)
        self.corrupt = corrupt          # of a loss, the part corrupted rather than dropped
        self.lose_first = set(NODES) if first_lost else set()  # ends to lose a data frame
        self.lost = {e: collections.Counter() for e in NODES}      # by (kind, fate), from e
        self.sent_kinds = {e: collections.Counter() for e in NODES}
        self.channel = {e: EthxChannel(dut, cfg, e, other(e), delay=delay, line_rate=line_rate,
                                       fate=functools.partial(self._fate, e)) for e in NODES}
        self.offered = {e: [[] for _ in range(cfg.vcs)] for e in NODES}
        self.poisoned = {e: [[] for _ in range(cfg.vcs)] for e in NODES}   # sent poisoned
        self.got = {e: [[] for _ in range(cfg.vcs)] for e in NODES}
        self.down = False
        self.foreign = {e: 0 for e in NODES}      # good foreign frames injected towards e
        self.rule = None                # rule(end, received, wire): a fate that overrides, or None
        self.arrivals = {e: [] for e in NODES}    # (clock, bytes) of each frame delivered to e
        self.pcp_seen = collections.Counter()     # (class, PCP) of the tagged frames sent
        # The best-effort path: frames offered from e (good ones, and how many malformed), sent
        # on e's wire so far, due at e in wire order (sent intact or injected), and got at e.
        self.be_offered = {e: [] for e in NODES}
        self.be_malformed = {e: 0 for e in NODES}
        self.be_sent = {e: 0 for e in NODES}
        self.be_due = {e: [] for e in NODES}
        self.be_got = {e: [] for e in NODES}
        if cfg.be_bytes:
            self.be_source = {e: LayoutSource(dut, f"{e}_be_i", layout, dut.clk, dut.rst)
                              for e in NODES}
            self.be_sink = {e: LayoutSink(dut, f"{e}_be_o", layout, dut.clk, dut.rst)
                            for e in NODES}

    def vlan(self):
        """The receive side of the tag option as the settings have it, or ``None``."""
        s = self.settings
        return model.Vlan(s["vid"], tuple(s["vc_of_pcp"])) if self.config.vlan else None

    def classify(self, wire):
        """``wire`` as the model's receive checks see it, with the settings' tag option."""
        return model.classify(wire, max_bytes=self.config.max_wire_bytes,
                              seq_bits=self.config.seq_bits, vlan=self.vlan())

    def _check_tag(self, got, wire):
        """A frame of the link's with the tag option: tagged with the settings' VID, DEI 0,
        and the PCP of its VC (data) or ``ctl_pcp``."""
        _, tci = model.untag(wire)
        s, vcs = self.settings, self.config.vcs
        pcp = (s["pcps"][model.link_vc(got.frame, vcs)]
               if got.cls in (model.Class.DATA, model.Class.POISONED) else s["ctl_pcp"])
        assert tci == (pcp, 0, s["vid"]), (got.cls, tci, pcp, wire[:24].hex())
        self.pcp_seen[got.cls, pcp] += 1

    def _fate(self, end, wire):
        got, fate = self._judge(end, wire)
        if kind_of(got) == "be":
            if fate is None:
                self.be_due[other(end)].append(wire[:-model.FCS_BYTES])
                self.foreign[other(end)] += 1
            elif fate is not False and self.classify(fate).cls is model.Class.FOREIGN:
                self.be_due[other(end)].append(fate[:-model.FCS_BYTES])
                self.foreign[other(end)] += 1
        return fate

    def _judge(self, end, wire):
        """``wire`` as the model classifies it, checked, and its fate (see ``fate``)."""
        got = self.classify(wire)
        if got.cls is model.Class.FOREIGN and self.config.be_bytes:
            # A best-effort frame: the next one offered at ``end``, with a good FCS.
            offered = self.be_offered[end]
            assert self.be_sent[end] < len(offered), "a best-effort frame never offered"
            assert wire[:-model.FCS_BYTES] == offered[self.be_sent[end]], (
                end, self.be_sent[end], wire.hex())
            self.be_sent[end] += 1
        else:
            assert got.cls in (model.Class.DATA, model.Class.POISONED, model.Class.CC,
                               model.Class.CONTROL), (got, len(wire), wire[:24].hex())
            assert got.node == NODES[end], got
            if self.config.vlan:
                self._check_tag(got, wire)
        kind = kind_of(got)
        self.sent_kinds[end][kind] += 1
        fate = self.rule(end, got, wire) if self.rule else None
        if fate is False:
            self.lost[end][kind, "drop"] += 1
            return got, False
        if fate is not None:
            if self.classify(fate).cls is model.Class.BAD:
                self.lost[end][kind, "corrupt"] += 1
            return got, fate
        if self.down:
            self.lost[end][kind, "down"] += 1
            return got, False
        if kind == "data" and end in self.lose_first:
            self.lose_first.discard(end)
            self.lost[end][kind, "drop"] += 1
            return got, False
        if self.rng.random() >= self.loss.get(kind, 0):
            return got, None
        if self.rng.random() < self.corrupt:
            self.lost[end][kind, "corrupt"] += 1
            bad = bytearray(wire)
            bad[self.rng.randrange(len(bad))] ^= 1 << self.rng.randrange(8)
            return got, bytes(bad)
        self.lost[end][kind, "drop"] += 1
        return got, False

    def apply_settings(self, end=None):
        layout = settings_layout(self.config)
        for e in NODES if end is None else [end]:
            getattr(self.dut, f"{e}_settings").value = layout.const(self.settings).as_bits()

    def set_up(self, level):
        for e in NODES:
            getattr(self.dut, f"{e}_up").value = level

    async def start(self, pause=0.0):
        self.apply_settings()
        self.set_up(1)
        await self.reset()
        for e in NODES:
            self.sink[e].set_backpressure(random_pauses(self.rng, pause))
            cocotb.start_soon(self._collect(e))
            if self.config.be_bytes:
                self.be_sink[e].set_backpressure(random_pauses(self.rng, pause))
                cocotb.start_soon(self._collect_be(e))

    async def _collect(self, end):
        cfg = self.config
        while True:
            data = b""
            while True:
                bits, last = await self.sink[end].recv_fields("data", "last")
                data += bits.to_bytes(cfg.eth_bytes, "little")
                if last:
                    break
            self.got[end][model.link_vc(data, cfg.vcs)].append(data)
            self.arrivals[end].append((cycle(), len(data)))

    async def _collect_be(self, end):
        """Best-effort frames out of ``end``: ``keep`` all ones but on a last beat, contiguous
        from byte 0 there."""
        cfg = self.config
        ones = (1 << cfg.eth_bytes) - 1
        while True:
            data = b""
            while True:
                bits, keep, last = await self.be_sink[end].recv_fields("data", "keep", "last")
                assert keep == ones or (last and keep and keep & (keep + 1) == 0), keep
                data += bits.to_bytes(cfg.eth_bytes, "little")[:keep.bit_length()]
                if last:
                    break
            self.be_got[end].append(data)

    # --- traffic ---------------------------------------------------------------------------

    def bridge_frame(self, end, vc=None, words=None):
        cfg = self.config
        vc = self.rng.randrange(cfg.vcs) if vc is None else vc
        most = (cfg.max_frame_bytes - 16) // 8
        words = words or self.rng.choice([6, 6, 7, 12, self.rng.randrange(6, most + 1), most])
        head = bridge_model.header(NODES[other(end)], NODES[end], vc)
        return head + self.rng.randbytes(bridge_model.WORD * words)

    def offer(self, end, frame, *, poisoned=False):
        """Send ``frame`` from ``end``'s bridge side; ``poisoned``: with ``user`` on its last
        beat, to be sent poisoned and never delivered."""
        vc = model.link_vc(frame, self.config.vcs)
        (self.poisoned if poisoned else self.offered)[end][vc].append(frame)
        beats = bytes_to_beats(frame, self.config.eth_bytes)
        for k, beat in enumerate(beats):
            self.source[end].send_nowait(user=int(poisoned and k == len(beats) - 1), **beat)

    def be_frame(self, size=None):
        """A best-effort frame (no FCS) of ``size`` bytes, or of a random legal size."""
        cfg = self.config
        size = size or self.rng.choice([MIN_BE_BYTES, self.rng.randrange(MIN_BE_BYTES, 200),
                                        self.rng.randrange(MIN_BE_BYTES, cfg.max_be_bytes + 1),
                                        cfg.max_be_bytes])
        return bytes.fromhex("02000000aa0102000000010208") + self.rng.randbytes(size - 13)

    def offer_be(self, end, frame, *, keep=None, holes=0, malformed=False):
        """Send ``frame`` on ``end``'s best-effort side; a malformed one (too short, too long,
        with ``keep`` as given on its last beat, with ``holes`` beats of no bytes before its
        last, or ``malformed`` as the caller knows) is expected dropped and counted."""
        cfg = self.config
        beats = bytes_to_beats(frame, cfg.eth_bytes)
        if keep is not None:
            beats[-1]["keep"] = keep
        beats[-1:-1] = [dict(data=0xDEADBEEF, keep=0, last=0)] * holes
        if (keep is None and not holes and not malformed
                and MIN_BE_BYTES <= len(frame) <= cfg.max_be_bytes):
            self.be_offered[end].append(frame)
        else:
            self.be_malformed[end] += 1
        for beat in beats:
            self.be_source[end].send_nowait(user=0, **beat)

    async def traffic(self, frames, vcs=None, gap=0.02):
        """``frames`` random frames from each end, now and then a pause."""
        for _ in range(frames):
            for e in NODES:
                vc = None if vcs is None else self.rng.choice(vcs)
                self.offer(e, self.bridge_frame(e, vc))
            while not all(self.source[e].empty() for e in NODES):
                await RisingEdge(self.dut.clk)
            if self.rng.random() < gap:
                await ClockCycles(self.dut.clk, self.rng.randrange(1, 400))

    def delivered(self):
        return all(len(self.got[other(e)][v]) >= len(self.offered[e][v])
                   for e in NODES for v in range(self.config.vcs)) and self.be_delivered()

    def be_delivered(self):
        """Every best-effort frame offered has been sent, and every frame due has arrived or
        been dropped."""
        if not self.config.be_bytes:
            return True
        for e in NODES:
            dropped = self.be_counts(e)["BE_RX_DROPPED"]
            if (self.be_sent[e] < len(self.be_offered[e]) or not self.be_source[e].empty()
                    or len(self.be_got[e]) + dropped < len(self.be_due[e])):
                return False
        return True

    async def settle(self, clocks=200_000, flushed=False):
        """Until every frame has arrived and both ends have nothing kept or owed; then the
        periodic CF_UPDATEs and CC_UPDATEs stop (:meth:`resume` starts them again), and those
        on the way land. With ``flushed`` (frames a FLUSH dropped never arrive), also once
        nothing is owed or waiting, both transmitters advance and no frame has arrived, all
        through two periods of the periodic control frames."""
        window = max(200, 2 * max(self.settings[k] for k in _PERIODS))
        still, seen = 0, None
        for _ in range(clocks // 100):
            if self.delivered() and self.quiet():
                break
            if flushed:
                now = (tuple(map(len, self.arrivals.values())),
                       tuple(map(len, self.be_got.values())))
                still = still + 100 if now == seen and self._drained() else 0
                seen = now
                if still >= window:
                    break
            await ClockCycles(self.dut.clk, 100)
        self._periods = {k: self.settings[k] for k in _PERIODS}
        self.settings.update(dict.fromkeys(_PERIODS, 0))
        self.apply_settings()
        for _ in range(clocks // 100):          # the last frames may wait for the timer
            if not any(int(getattr(self.dut, f"{e}_kept").value) for e in NODES):
                break
            await ClockCycles(self.dut.clk, 100)
        assert not any(int(getattr(self.dut, f"{e}_kept").value) for e in NODES), \
            "the replay rings did not drain"
        for _ in range(clocks // 100):          # and the control frames it asks for
            await ClockCycles(self.dut.clk, 4 * self.config.rows(self.config.max_wire_bytes))
            if all(self.channel[e].idle() for e in NODES):
                break

    def _drained(self):
        """Every credit taken given back (:meth:`quiet`: no data frame kept, on the wire or in
        a receive buffer), nothing waiting at a bridge side, both transmitters in ADVANCE (a
        frame queued would go at once), every best-effort frame through
        (:meth:`be_delivered`)."""
        return (self.quiet() and self.be_delivered()
                and all(self.source[e].empty() and int(getattr(self.dut, f"{e}_tx_state").value)
                        == TxState.ADVANCE.value for e in NODES))

    def resume(self):
        """The periodic CF_UPDATEs and CC_UPDATEs that :meth:`settle` stopped, back on: for
        traffic after a settle (without them the last credits freed stay unreported)."""
        self.settings.update(self._periods)
        self.apply_settings()

    def inject_foreign(self, end, frame):
        """``frame`` (FCS included), not the link's, onto the wire from ``end`` between the
        frames on the way; the far receiver must count it foreign, or bad if its FCS is."""
        got = self.classify(frame)
        assert got.cls in (model.Class.FOREIGN, model.Class.BAD), got
        if got.cls is model.Class.BAD:
            self.lost[end]["foreign", "corrupt"] += 1
        else:
            self.foreign[other(end)] += 1
            self.be_due[other(end)].append(frame[:-model.FCS_BYTES])
        self.channel[end].inject(frame)

    def credits(self, port, vc):
        """VC ``vc``'s 20-bit count of the credit counters port ``port`` (e.g. ``a_s_cc``)."""
        value = getattr(self.dut, port).value.to_unsigned()
        return value >> (model.COUNT_BITS * vc) & COUNT_MASK

    def credits_taken(self, end, vc):
        """The credits the frames offered from ``end`` on ``vc`` take, poisoned ones too
        (README §4), modulo the counters'."""
        cfg = self.config
        return sum(model.pkt_credits(len(f), cfg.credit_size, cfg.pkt_overhead)
                   for f in self.offered[end][vc] + self.poisoned[end][vc]) % (COUNT_MASK + 1)

    def quiet(self):
        for e in NODES:
            s_cc = getattr(self.dut, f"{e}_s_cc").value.to_unsigned()
            s_cf = getattr(self.dut, f"{e}_s_cf").value.to_unsigned()
            if s_cc != s_cf:
                return False
        return True

    def tx(self, end):
        return {k.name: v for k, v in self.counts(LinkTxCount, f"{end}_tx_counts").items()}

    def rx(self, end):
        return {k.name: v for k, v in self.counts(LinkRxCount, f"{end}_rx_counts").items()}

    def be_counts(self, end):
        return {k.name: v for k, v in self.counts(BeCount, f"{end}_be_counts").items()}

    def check_be(self, end):
        """``end``'s best-effort frames: every good one offered sent once, in order, the
        malformed ones counted; what arrived at the far end is what was due there (sent
        intact or injected), in order, less the frames it counted dropped."""
        if not self.config.be_bytes:
            return
        f = other(end)
        mine, far = self.be_counts(end), self.be_counts(f)
        assert self.be_source[end].empty() and self.be_sink[f].empty()
        assert self.be_sent[end] == len(self.be_offered[end])
        assert mine["BE_TX"] == self.sent_kinds[end]["be"] == self.be_sent[end], mine
        assert mine["BE_TX_MALFORMED"] == self.be_malformed[end], mine
        got = iter(self.be_got[f])
        at, missing = next(got, None), 0
        for frame in self.be_due[f]:
            if frame == at:
                at = next(got, None)
            else:
                missing += 1
        assert at is None, (f, "a best-effort frame out of order, doubled or never due")
        assert far["BE_RX"] == len(self.be_got[f]) and far["BE_RX_DROPPED"] == missing, (
            far, missing)
        self.dut._log.info("%s best effort: %d offered, %d malformed, %d due at %s, %d got, "
                           "%d dropped there", end, len(self.be_offered[end]),
                           self.be_malformed[end], len(self.be_due[f]), f,
                           len(self.be_got[f]), missing)

    def check(self, flushed=False):
        """Everything offered arrived once, in order per VC; with ``flushed``, but the frames
        a FLUSH dropped, as many as the transmitter counted."""
        cfg = self.config
        for e in NODES:
            f = other(e)
            if flushed:
                self.check_flushed(e)
                self.check_be(e)
                continue
            tx, rx, lost = self.tx(e), self.rx(f), self.lost[e]
            self.dut._log.info("%s tx %s", e, tx)
            self.dut._log.info("%s rx %s", f, rx)
            self.dut._log.info("%s -> %s lost %s; sent %s", e, f, dict(lost),
                               dict(self.sent_kinds[e]))
            for v in range(cfg.vcs):
                assert self.got[f][v] == self.offered[e][v], (e, v, len(self.got[f][v]),
                                                              len(self.offered[e][v]))
            assert self.source[e].empty() and self.sink[e].empty()
            assert self.channel[e].idle()
            self.check_be(e)
            sent = self.sent_kinds[e]
            corrupted = sum(n for (k, why), n in lost.items() if why == "corrupt")
            assert rx["RX_BAD"] == corrupted
            assert rx["RX_FOREIGN"] == self.foreign[f] and rx["RX_OVERFLOW"] == 0
            assert tx["TX_OK"] + tx["TX_REPLAYED"] == sent["data"] + sent["cc"]
            assert tx["TX_OK"] == rx["RX_OK"] + rx["RX_POISONED"]
            assert rx["RX_OK"] == sum(len(q) for q in self.offered[e]) + tx["CC_TX"]
            assert rx["RX_POISONED"] == tx["TX_POISONED"] == sum(map(len, self.poisoned[e]))
            assert rx["CC_RX"] == tx["CC_TX"]
            assert tx["INIT_TX"] == sent["init"]
            assert tx["TX_FLUSHED"] == 0 and tx["CREDIT_ERROR"] == 0
            # An INIT sent again (its echo lost or late) starts the sequence over: ACKs and NACKs
            # of the first exchange still on the wire are then out of the window, counted and
            # dropped (SEED=2019296820, 8-bit, lossy). Without a second INIT there are none.
            assert tx["ACK_NACK_SEQ_ERROR"] == 0 or tx["INIT_TX"] > 1
            assert tx["TX_MALFORMED"] == 0
            assert tx["PEAK_REPLAY"] <= cfg.replay_frames - 1       # room kept for one more
            assert tx["PEAK_REPLAY"] > 0 or not any(self.offered[e])
            # What the far end's transmitter got is what this end's receiver sent, less losses.
            for name, kind, count in (("ACK_RX", "ack", "ACK_TX"), ("NACK_RX", "nack", "NACK_TX"),
                                      ("CF_RX", "cf_update", "CF_TX"),
                                      ("INIT_ECHO_RX", "init_echo", "INIT_ECHO_TX")):
                gone = sum(n for (k, _), n in lost.items() if k == kind)
                assert sent[kind] == self.rx(e)[count], name
                assert self.tx(f)[name] == self.rx(e)[count] - gone, name
            assert int(getattr(self.dut, f"{e}_tx_state").value) == TxState.ADVANCE.value
            # A bad or missing frame into e's receiver leaves it NACK_SENT until the next
            # eligible frame, which may never come; without either it is SEND_ACKS.
            trouble = any(why != "drop" or k in ("data", "cc") for k, why in self.lost[f])
            states = (RxState.SEND_ACKS, RxState.NACK_SENT) if trouble else (RxState.SEND_ACKS,)
            assert int(getattr(self.dut, f"{e}_rx_state").value) in [s.value for s in states]
            for v in range(cfg.vcs):        # each frame took its credits once
                s_cc = self.credits(f"{e}_s_cc", v)
                assert s_cc == self.credits(f"{e}_s_cf", v) == self.credits(f"{f}_r_cf", v)
                assert s_cc == self.credits_taken(e, v)


    def check_flushed(self, end):
        """``end``'s frames: what arrived is what was offered less some frames, in order, and
        every frame missing (CC_UPDATEs too: entered, never accepted) was FLUSHed."""
        tx, rx, missing = self.tx(end), self.rx(other(end)), 0
        for v in range(self.config.vcs):
            got = iter(self.got[other(end)][v])
            at = next(got, None)
            for frame in self.offered[end][v]:
                if frame == at:
                    at = next(got, None)
                else:
                    missing += 1
            assert at is None, (end, v, "a frame out of order, doubled or not offered")
        delivered = sum(len(q) for q in self.got[other(end)])
        assert rx["RX_OK"] == delivered + rx["CC_RX"]
        # A flushed frame may have arrived (its ACK lost on the way down); one missing was
        # flushed.
        assert missing + tx["CC_TX"] - rx["CC_RX"] <= tx["TX_FLUSHED"], (missing, tx, rx)
        s_cc = getattr(self.dut, f"{end}_s_cc").value.to_unsigned()
        assert s_cc == getattr(self.dut, f"{end}_s_cf").value.to_unsigned()
        assert s_cc == getattr(self.dut, f"{other(end)}_r_cf").value.to_unsigned()
        assert self.source[end].empty() and self.sink[end].empty() and self.channel[end].idle()
        self.dut._log.info("%s: %d frames flushed; tx %s; rx %s", end, missing, tx, rx)
