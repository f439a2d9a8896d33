# SPDX-License-Identifier: BSD-2-Clause
"""Two golden-model DL endpoints (:class:`scaleup_ip.model.dl.llr.DlEndpoint`) back to back over
lossy delay lines, one flit time per step, with a monitor that re-derives the transmit rules
from the flits sent: the model's own link test (``tb/dl/test_llr_model.py``) and the spec
protocol's goodput next to the RTL's in the DL benchmark (:mod:`sim.bench`)."""

import random
from collections import deque

from scaleup_ip.model.dl.llr import (
    EXPLICIT_INTERVAL,
    SEQ_RESET,
    DlEndpoint,
    Flit,
    Op,
    decode_header,
    seq_add,
)

__all__ = ["Channel", "Link", "TxMonitor", "delays_for", "flit_seq", "goodput", "replay_round_trip"]


def flit_seq(index):
    """The sequence number of the ``index``-th payload flit since reset [§6.6.6.1]."""
    return seq_add(SEQ_RESET, index + 1)



class Channel:
    """A delay line of ``delay`` flit times that corrupts flits.

    Each flit is bad with probability ``q``; with probability ``burst_rate`` a burst of 1 ..
    ``burst_max`` bad flits starts; ``hook(flit)`` may force a flit bad. A bad flit arrives
    with its header changed and a "garbage" payload, and ``crc_ok`` False.
    """

    def __init__(self, delay, rng, q=0.0, burst_rate=0.0, burst_max=1, hook=None):
        self.line = deque([None] * delay)
        self.rng, self.q, self.hook = rng, q, hook
        self.burst_rate, self.burst_max, self.burst = burst_rate, burst_max, 0

    def carry(self, flit):
        self.line.append(flit)
        out = self.line.popleft()
        if out is None or not self._bad(out):
            return out, True
        return Flit(out.header ^ 0x5A5A5A, "garbage"), False

    def _bad(self, flit):
        if self.hook and self.hook(flit):
            return True
        if self.burst:
            self.burst -= 1
            return True
        if self.rng.random() < self.burst_rate:
            self.burst = self.rng.randint(1, self.burst_max) - 1
            return True
        return self.rng.random() < self.q


class TxMonitor:
    """Re-derives the transmit rules from the flits one endpoint sends (payloads ``(end, k)``).

    Every header decodes; the payload bit matches the payload; an explicit flit at least every
    7 flits [§6.6.5.6]; a payload flit carries the sequence number of its index (explicit) or
    its low bits (command); new payloads go out in order, op Original when explicit; a payload
    flit that goes back starts a replay: explicit op Replay; a NOP
    carries Tx_last_seq [§6.6.6.1]; ackReqSeq is never 0.
    """

    def __init__(self):
        self.commands = 0
        self.last_index = self.max_index = -1

    def check(self, flit):
        if flit is None:
            return
        h = decode_header(flit.header)
        assert h.payload == (flit.payload is not None)
        self.commands = 0 if h.explicit else self.commands + 1
        assert self.commands < EXPLICIT_INTERVAL
        assert h.explicit or h.ack_req_seq != 0
        index = flit.payload[1] if h.payload else self.max_index
        seq = flit_seq(index)
        assert h.seq == (seq if h.explicit else seq & 7)
        if not h.payload:
            assert h.op is not Op.REPLAY
            return
        if index > self.max_index:
            assert index == self.max_index + 1
            assert h.op is not Op.REPLAY
        elif h.explicit:
            assert h.op is Op.REPLAY
        if index <= self.last_index:        # a replay starts (again): Explicit, op Replay
            assert h.explicit and h.op is Op.REPLAY
        # A jump forward within flits sent before: acknowledged during a replay, skipped [ours].
        self.last_index, self.max_index = index, max(index, self.max_index)


class Link:
    """Endpoints ``a`` and ``b`` back to back over two :class:`Channel` s.

    Each flit time: the TL of each end offers a payload with probability ``load``, both ends
    send, the channels carry, both ends receive. Deliveries are checked in order at once.
    """

    def __init__(self, rng, ab, ba, load=(0.8, 0.8), **kwargs):
        self.rng, self.load = rng, load
        self.ends = (DlEndpoint(**kwargs), DlEndpoint(**kwargs))
        self.channels = (ab, ba)
        self.monitors = (TxMonitor(), TxMonitor())
        self.offered, self.delivered, self.t = [0, 0], [0, 0], 0

    def step(self, offer=True):
        for i, ep in enumerate(self.ends):
            if offer and self.rng.random() < self.load[i]:
                ep.push((i, self.offered[i]))
                self.offered[i] += 1
        flits = [ep.send() for ep in self.ends]
        for i, f in enumerate(flits):
            self.monitors[i].check(f)
            out, ok = self.channels[i].carry(f)
            got = self.ends[1 - i].receive(out, crc_ok=ok)
            if got is not None:
                assert got == (i, self.delivered[i]), f"flit time {self.t}: {got}"
                self.delivered[i] += 1
        self.t += 1

    def run(self, flit_times, offer=True):
        for _ in range(flit_times):
            self.step(offer)

    def drain(self, limit):
        """Run without new traffic until everything is delivered and acknowledged."""
        for _ in range(limit):
            if self.delivered == self.offered and all(ep.quiescent for ep in self.ends):
                return
            self.step(offer=False)
        raise AssertionError(f"not drained: {self.delivered} of {self.offered}")


def replay_round_trip(delays, seed=1, flit_times=20_000, q=1e-3):
    """The go-back-N round trip of the model link with one-way ``delays`` (flit times): flits
    replayed per replay, at full load with lone bad flits (rate ``q``)."""
    rng = random.Random(seed)
    link = Link(rng, Channel(delays[0], rng, q), Channel(delays[1], rng), load=(1.0, 1.0),
                replay_limit=255)
    link.run(flit_times)
    c = link.ends[0].counters
    return c.replayed_flits / c.replays_started


def delays_for(m):
    """One-way delays (flit times) that give the model link the replay round trip ``m``."""
    for total in range(max(0, m - 4), m + 1):
        delays = (total // 2, total - total // 2)
        if round(replay_round_trip(delays)) == m:
            return delays
    raise ValueError(f"no model delays give a replay round trip of {m} flits")


def goodput(q, delays, replay_limit, flit_times, seed, depth=32):
    """Payload flits delivered per flit time (the mean of the two directions), both ends at
    full load, each flit bad with probability ``q``."""
    rng = random.Random(seed)
    link = Link(rng, Channel(delays[0], rng, q), Channel(delays[1], rng, q), load=(1.0, 1.0),
                depth=depth, replay_limit=replay_limit)
    link.run(2000)
    before = list(link.delivered)
    link.run(flit_times)
    delivered = sum(after - b for after, b in zip(link.delivered, before, strict=True))
    return delivered / 2 / flit_times
