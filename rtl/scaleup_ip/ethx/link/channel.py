# SPDX-License-Identifier: BSD-2-Clause
"""Error-injecting Ethernet channel: one direction of the wire between two lossless links, with
bit errors, error bursts, frame drops, control-frame drops by kind, a cut, and a programmable
delay, for simulation and FPGA tests."""

import dataclasses

from amaranth import Cat, Const, Module, Mux, ResetSignal, Shape, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...config import BlockConfig, ConfiguredComponent, check_int
from ...model.ethx import channel as model
from ...model.dl.err_link import THRESHOLD_BITS
from ...xorshift import Xorshift64
from ..layout import eth_beat_layout, eth_stream
from .config import ETH_WIDTHS
from .layout import LINK_ETHERTYPE

__all__ = ["ChannelConfig", "EthxChannel", "channel_controls", "channel_counters"]

#: The counters port: 32-bit wrapping counts, in :data:`scaleup_ip.model.ethx.channel.COUNTERS`
#: order.
channel_counters = data.StructLayout({name: model.COUNTER_BITS for name in model.COUNTERS})


@dataclasses.dataclass(frozen=True)
class ChannelConfig(BlockConfig):
    """Parameters of :class:`EthxChannel`.

    Parameters
    ----------
    eth_width : int
        Bits per beat: 8, 32 or 64.
    max_frame_bytes : int
        Longest frame passed, 64 to 16384 bytes: a frame of more beats than this takes
        (:attr:`max_rows`) is dropped (``oversize``).
    max_delay : int
        Largest ``delay``, 1 to 65535 clocks; a larger ``delay`` acts as this.
    """
    eth_width: int = 64
    max_frame_bytes: int = 1530
    max_delay: int = 1024

    def __post_init__(self):
        check_int("channel", "eth_width", self.eth_width, ETH_WIDTHS)
        check_int("channel", "max_frame_bytes", self.max_frame_bytes, range(64, 16385))
        check_int("channel", "max_delay", self.max_delay, range(1, 65536))

    @property
    def max_rows(self):
        """Beats of a longest frame."""
        return -(-self.max_frame_bytes // (self.eth_width // 8))

    @property
    def depth(self):
        """Beats the buffer holds, a power of two: a beat per clock for the largest delay and
        two longest frames, so that a frame arriving at line rate never waits."""
        need = self.max_delay + 2 * self.max_rows + 2
        return 1 << (need - 1).bit_length()

    @property
    def frames(self):
        """Frames the buffer holds (its time stamps): one per shortest good frame of 64 bytes,
        and two."""
        return self.depth // -(-64 // (self.eth_width // 8)) + 2


def channel_controls(config):
    """The controls of an :class:`EthxChannel` built from ``config``, by name."""
    return {
        "enable": In(1),
        "cut": In(1),
        "ber_threshold": In(THRESHOLD_BITS),
        "burst_threshold": In(THRESHOLD_BITS),
        "burst_length": In(model.BURST_BITS),
        "drop_threshold": In(THRESHOLD_BITS),
        "ctl_threshold": In(THRESHOLD_BITS),
        "ctl_kinds": In(model.KIND_MASK_BITS),
        "delay": In(range(config.max_delay + 1)),
    }


class EthxChannel(ConfiguredComponent):
    """One direction of an Ethernet wire: frames in, the same frames out, in order, some
    corrupted or dropped, each after a programmable delay. Two make a duplex channel.

    Frames are delimited by ``last``: a frame's first beat is the first after reset or after a
    ``last``. Beat ``k`` of a frame carries its bytes ``k*W .. k*W+W-1`` (``W = eth_width/8``), byte
    ``j`` of the beat in data bits ``8j+7 : 8j``, as
    :func:`~scaleup_ip.ethx.layout.eth_beat_layout`.

    Each accepted beat draws 128 random bits, :class:`scaleup_ip.model.dl.err_link.Draws` (two steps
    of the xorshift64 generator of :class:`scaleup_ip.model.dl.err_link.Generator`); the generator
    moves on every accepted beat, dropped or not, so one seed and one sequence of frames give the
    same errors and drops whatever the stalls. :class:`scaleup_ip.model.ethx.channel.ChannelModel`
    is the golden model of every decision below. In each beat's order:

    1. **Cut and drop.** At a frame's first beat the frame is dropped whole if ``cut`` is high
       (counted ``cut``), or else if ``enable`` and ``draws.drop < drop_threshold`` (counted
       ``dropped``) [ours]. The beats of a dropped frame get no error, take no part in a burst
       and are not counted but in the generator.
    2. **Bit error.** Where ``enable`` and ``draws.bit < ber_threshold``, data bit
       ``draws.bit_position % eth_width`` of the beat is flipped (counted ``error_beats``, even
       where the bit lies in a byte ``keep`` leaves out of the frame).
    3. **Burst** [ours]. Where ``enable``, no burst is running, ``burst_length`` is not 0 and
       ``draws.burst < burst_threshold``, a burst starts (counted ``bursts``): this beat and
       the next ``burst_length - 1`` beats that reach this step get every data bit inverted
       (over the bit error; each counted in ``burst_beats``), across frames. ``enable`` low
       ends a running burst.
    4. **Oversize.** A frame's beat ``max_rows`` (counting from 0:
       :attr:`ChannelConfig.max_rows` beats are fine) drops the frame (counted ``oversize``
       once); from that beat on, its beats are taken and dropped as those of step 1 (no error,
       no part in a burst).
    5. **Control drop.** At a frame's last beat (the frame not already dropped, and its beat
       ``14 // W``, holding byte 14, taken: this one or an earlier one), where its bytes 12-13,
       as they came in (before any error), are the link's EtherType 0x88B6 (byte 12 0x88) and
       byte 14 is a kind ``k`` below 32 with bit ``k`` of ``ctl_kinds`` set, the frame is
       dropped if ``enable`` and this last beat's ``draws.drop < ctl_threshold`` (counted
       ``ctl_dropped``) [ours]. Its beats went through steps 2-3 as any.
    6. Otherwise the frame passes (counted ``frames`` at its last beat) with ``keep``, ``last``
       and ``user`` as they came in.

    Controls are levels, sampled where each is used (``cut``, ``drop_threshold`` at a first
    beat, ``ctl_threshold``, ``ctl_kinds`` at a last beat, the others at each beat).
    ``seed`` is loaded while reset is high and at a ``reseed`` strobe; the beat accepted in the
    strobe's clock still takes the old draws. Seed 0 stands for
    :data:`scaleup_ip.model.dl.err_link.ZERO_SEED`.

    Latency: a frame is stored whole, then held: its first beat is offered on ``o`` from the
    ``delay + 1``-th clock edge after the one that took its last beat (``delay`` at most
    ``max_delay``; the third edge at ``delay`` 1 or 2), or once the frames before it have left.
    Throughput: one beat per clock in and out; as the buffer stores and forwards, a frame
    longer than the one before it leaves that many beats' time after it. ``i.ready`` falls
    only while the buffer's :attr:`ChannelConfig.depth` beats or :attr:`ChannelConfig.frames`
    frames are taken (``o`` stalled): nothing overflows.

    Reset empties the buffer (no frame leaves after it), clears the frame and burst state and
    the counters, and loads the seed.

    Parameters
    ----------
    config : ChannelConfig

    Members
    -------
    i : ``In(eth_stream(eth_width))``
        Frames from the sending MAC.
    o : ``Out(eth_stream(eth_width))``
        Frames to the receiving MAC.
    seed : ``In(64)``; reseed : ``In(1)``
        The generator's seed and its load strobe.
    enable : ``In(1)``
        Inject errors and drops; low, the channel only delays (and ``cut`` still drops).
    cut : ``In(1)``
        The wire is cut: every frame starting is dropped.
    ber_threshold, burst_threshold, drop_threshold, ctl_threshold : ``In(32)``
        Probabilities ``threshold / 2**32``: of a bit error in a beat, of a burst starting at a
        beat, of a frame being dropped, of a control frame of a kind in ``ctl_kinds`` being
        dropped.
    burst_length : ``In(16)``
        Beats per burst.
    ctl_kinds : ``In(32)``
        Control-frame kinds (``scaleup_ip.model.ethx.link.Ctl``) that ``ctl_threshold`` drops.
    delay : ``In(range(max_delay + 1))``
        Clocks a frame is held after its last beat.
    counters : ``Out(channel_counters)``
        Registered, wrapping 32-bit counts (:data:`scaleup_ip.model.ethx.channel.COUNTERS`), each a
        clock after its beat's acceptance.
    """

    config_class = ChannelConfig

    def __init__(self, config):
        super().__init__(config, lambda c: {
            "i": In(eth_stream(c.eth_width)),
            "o": Out(eth_stream(c.eth_width)),
            "seed": In(64),
            "reseed": In(1),
            **channel_controls(c),
            "counters": Out(channel_counters),
        })

    def elaborate(self, platform):
        # A beat's way: accepted, its fate decided from this clock's draws (``_decide``), its
        # flips applied on its way into the buffer, which stores a frame whole and lets it out
        # ``delay`` clocks after its last beat (``_FrameBuffer``).
        m = Module()
        m.submodules.generator = generator = Xorshift64()
        m.submodules.buffer = buffer = _FrameBuffer(self.config)
        accept = self.i.valid & self.i.ready
        m.d.comb += [
            generator.seed.eq(self.seed),
            generator.load.eq(self.reseed | ResetSignal()),
            generator.advance.eq(accept),
            self.i.ready.eq(buffer.ready),
            buffer.beat.eq(self.i.payload),
            buffer.delay.eq(Mux(self.delay > self.config.max_delay, self.config.max_delay,
                                self.delay)),
        ]
        wiring.connect(m, buffer.o, wiring.flipped(self.o))
        events = self._decide(m, generator.draws, accept, buffer)
        for name in model.COUNTERS:
            counter = self.counters[name]
            m.d.sync += counter.eq(counter + events[name])
        return m

    def _decide(self, m, draws, accept, buffer):
        """Drive ``buffer``'s write, commit and rollback and the beat's flips from the fate of
        the beat on ``i`` (steps 1-6 above); return the events to count."""
        cfg, beat = self.config, self.i.payload
        in_frame = Signal()                     # a frame's first beat taken, its last not yet
        dropping = Signal()                     # ... and that frame is dropped
        index = Signal(range(cfg.max_rows + 1))  # the beat's place in its frame, at most max_rows
        burst_left = Signal(model.BURST_BITS)   # burst beats still to come
        first = ~in_frame
        cut = first & self.cut
        drop = first & ~self.cut & self.enable & (draws.drop < self.drop_threshold)
        dropped = Mux(first, cut | drop, dropping)
        over = ~dropped & (index == cfg.max_rows)
        live = ~dropped & ~over
        bit_error = live & self.enable & (draws.bit < self.ber_threshold)
        running = self.enable & (burst_left != 0)
        start = (live & self.enable & (burst_left == 0) & (self.burst_length != 0)
                 & (draws.burst < self.burst_threshold))
        invert = live & (running | start)
        ctl_drop = (live & beat.last & self._control(m, index, accept)
                    & self.enable & (draws.drop < self.ctl_threshold))
        with m.If(accept):
            m.d.sync += [in_frame.eq(~beat.last), dropping.eq(dropped | over),
                         index.eq(Mux(beat.last | (index == cfg.max_rows), 0, index + 1))]
            with m.If(live):
                m.d.sync += burst_left.eq(Mux(running, burst_left - 1,
                                              Mux(start, self.burst_length - 1, 0)))
        position = draws.bit_position[:(cfg.eth_width - 1).bit_length()]
        flips = (Mux(bit_error, Const(1, cfg.eth_width) << position, 0)
                 ^ Mux(invert, Const(-1, cfg.eth_width), 0))
        m.d.comb += [
            buffer.flips.eq(flips),
            buffer.write.eq(accept & live),
            buffer.commit.eq(accept & live & beat.last & ~ctl_drop),
            buffer.rollback.eq(accept & (over | ctl_drop)),
        ]
        return {"frames": buffer.commit, "dropped": accept & drop, "cut": accept & cut,
                "ctl_dropped": accept & ctl_drop, "oversize": accept & over,
                "error_beats": accept & bit_error, "bursts": accept & start,
                "burst_beats": accept & invert}

    def _control(self, m, index, accept):
        """Whether the frame on ``i``, at its last beat, is a control frame of a kind in
        ``ctl_kinds``: bytes 12-14 as they came in, kept as they pass."""
        width, data = self.config.eth_width // 8, self.i.payload.data

        def byte(k):
            kept = Signal(8, name=f"byte{k}")
            here = index == k // width
            lane = data.word_select(k % width, 8)
            with m.If(accept & here):
                m.d.sync += kept.eq(lane)
            return Mux(here, lane, kept)

        ethertype = Cat(byte(13), byte(12))
        kind = byte(14)
        taken = index >= 14 // width
        return (taken & (ethertype == LINK_ETHERTYPE) & (kind < model.KIND_MASK_BITS)
                & self.ctl_kinds.bit_select(kind[:5], 1))


class _FrameBuffer(wiring.Component):
    """Store beats (``write``, with ``flips`` applied), forget the frame being written
    (``rollback``) or keep it (``commit``, with its last beat), and let each kept frame out on
    ``o`` once ``delay`` clocks have passed since its commit, in order.

    The memory is a ring of :attr:`ChannelConfig.depth` beats: ``wr`` the next row to write,
    ``kept`` the first row of the frame being written, ``released`` the end of the frames let
    out, ``rd`` the next row to read. Each commit queues its time and end; the head of that
    queue leaves it once old enough, whatever ``o`` does, so the ages compared stay below the
    time's range. ``ready`` is low while the ring or the queue is full.
    """

    def __init__(self, config):
        self._config = config
        super().__init__({
            "beat": In(eth_beat_layout(config.eth_width)),
            "flips": In(config.eth_width),
            "write": In(1), "commit": In(1), "rollback": In(1),
            "ready": Out(1),
            "delay": In(range(config.max_delay + 1)),
            "o": Out(eth_stream(config.eth_width)),
        })

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        rows = Shape.cast(range(cfg.depth)).width
        m.submodules.mem = mem = Memory(shape=eth_beat_layout(cfg.eth_width), depth=cfg.depth,
                                        init=[])
        write, read = mem.write_port(), mem.read_port()
        now = Signal((cfg.max_delay + 8).bit_length() + 1)
        m.submodules.stamps = stamps = SyncFIFOBuffered(width=len(now) + rows, depth=cfg.frames)
        wr, kept, released, rd = (Signal(rows, name=n) for n in ("wr", "kept", "released", "rd"))
        m.d.sync += now.eq(now + 1)
        m.d.comb += [
            self.ready.eq(((wr + 1)[:rows] != rd) & stamps.w_rdy),
            write.en.eq(self.write), write.addr.eq(wr),
            write.data.eq(self.beat), write.data.data.eq(self.beat.data ^ self.flips),
            stamps.w_en.eq(self.commit), stamps.w_data.eq(Cat(now, (wr + 1)[:rows])),
        ]
        with m.If(self.rollback):
            m.d.sync += wr.eq(kept)
        with m.Elif(self.write):
            m.d.sync += wr.eq(wr + 1)
        with m.If(self.commit):
            m.d.sync += kept.eq(wr + 1)
        stamp, end = stamps.r_data[:len(now)], stamps.r_data[len(now):]
        due = stamps.r_rdy & ((now - stamp)[:len(now)] >= self.delay)
        m.d.comb += stamps.r_en.eq(due)
        with m.If(due):
            m.d.sync += released.eq(end)
        take = (rd != released) & (~self.o.valid | self.o.ready)
        m.d.comb += [read.en.eq(take), read.addr.eq(rd), self.o.payload.eq(read.data)]
        m.d.sync += rd.eq(rd + take)
        with m.If(take):
            m.d.sync += self.o.valid.eq(1)
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        return m
