# SPDX-License-Identifier: BSD-2-Clause
"""Golden model of a UPLI originator with its watchdog and Isolation Mode.

Written from the UALink_200 Rev 1.0 Evaluation Copy, §3.1.3 (Isolation Mode), §3.1.4.3 (the
ISOLATE write response on a link down) and chapter 2 (Table 2-6 commands, §2.7.4.2 ReqTag,
§2.7.5 read responses, §2.7.5.1 manufactured data, §2.7.6 write responses, §2.7.8 multi-beat
and single-beat read responses), with the choices of ``rtl/scaleup_ip/tl/README.md`` §7
(marked **[ours]**). Section numbers in brackets are the specification's; choices neither text
makes are marked **[model]** and explained where they are made.

What it models. The originator keeps every request the device hands over in a table until its
whole answer has reached the device [§3.1.3]. Responses from the TL are matched to the table by
tag [§2.7.5, §2.7.6] and passed on or dropped; a watchdog firing (:meth:`Originator.expire`,
:meth:`Originator.stall`) or an ISOLATE write response starts Isolation Mode, after which every
TL response is dropped and each outstanding request is answered by a "dummy" completion timeout
(:meth:`Originator.dummy`).

Timing is not modelled: the caller reports events in the order they happen on the wires, one
call per beat or response. The watchdog's timing is given by :func:`expiry_window` for a
testbench to check. Requests are :class:`scaleup_ip.model.tl.flit.Request` (or anything with its
attributes ``cmd``, ``vc``, ``tag``, ``addr``, ``length``, ``num_beats``, ``src_acc``,
``dst_acc``); write responses are :class:`scaleup_ip.model.tl.flit.WriteResponse`; read-response
beats are :class:`ReadBeat`, one per UPLI beat.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .flit import ATOMIC_R, READ, WRITE_MESSAGE, WriteResponse

__all__ = [
    "CMPTO", "ISOLATE", "MANUFACTURED", "COUNTERS", "COUNTER_MAX",
    "MAX_OUTSTANDING", "MIN_TIMEOUT", "MAX_TIMEOUT",
    "Answer", "answer_of", "read_beats", "tick_window", "expiry_window",
    "ReadBeat", "Originator",
]

CMPTO = 0x8                         # Completion Timeout [UALink 1.0 Tables 2-9, 2-12]
ISOLATE = 0xF                       # write responses only [UALink 1.0 Table 2-12]
BEAT_BITS = 512                     # RdRspData [UALink 1.0 Table 2-8]
MANUFACTURED = (1 << BEAT_BITS) - 1  # all ones is recommended [UALink 1.0 §2.7.5.1]
BEAT_BYTES = 64
MAX_BEATS = 4                       # a response has 1 .. 4 beats [UALink 1.0 §2.7.3]

VENDOR_READS = range(0x08, 0x10)    # Read class vendor defined commands [UALink 1.0 Table 2-6]
VENDOR_ATOMICS = range(0x3C, 0x40)  # Atomic class: either channel [UALink 1.0 §2.7.4.6]

COUNTERS = ("EXPIRED", "STALLED", "ISOLATE", "DUMMY", "DISCARDED", "UNEXPECTED")
COUNTER_MAX = 0xFFFF                # 16-bit, saturating [ours]
MAX_OUTSTANDING = 64                # table entries 1 .. 64 [ours]
MIN_TIMEOUT, MAX_TIMEOUT = 16, (1 << 32) - 1    # completion_timeout clocks, or 0 [ours]
TICKS = 8                           # a tick every ceil(T / 8) clocks ... [ours]
EXPIRE_TICK = TICKS + 1             # ... the entry expires on its ninth [ours]


# --- What answers a request -----------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    """How a request is answered.

    Attributes
    ----------
    channel : str
        ``"read"``, ``"write"`` or ``"either"`` (a response on one channel or the other,
        never both [UALink 1.0 §2.7.3]).
    beats : int
        Read beats of the dummy answer (1 .. 4); 0 for ``"write"`` and ``"either"``, whose dummy
        is a write response.
    known : bool
        True when a read response's beat count is checked: Read (0x03) and AtomicR (0x30) only.
    """

    channel: str
    beats: int
    known: bool


def read_beats(addr, length):
    """Beats of a Read's response: ⌈(ReqAddr mod 64 + 4·(ReqLen + 1)) / 64⌉ [ours].

    Beat 0 holds the lowest addressed byte and the beats go up in 64-byte steps
    [UALink 1.0 §2.7.5.3], so the response has one beat per 64-byte block the request touches.

    A Read that crosses a 256-byte boundary (§2.7.4.6 forbids it; the TL drops it) would need 5;
    it counts as 4, the most a response carries (RdRspNumBeats is 2 bits) [ours, README §7].
    """
    nbytes = 4 * (length + 1)                                   # [UALink 1.0 §2.7.4.4]
    return min(-(-(addr % BEAT_BYTES + nbytes) // BEAT_BYTES), MAX_BEATS)


def _length(request):
    """ReqLen of ``request``: ``length`` (flit.Request) or ``len``."""
    return request.length if hasattr(request, "length") else request.len


def answer_of(request):
    """How ``request`` is answered, by its ReqCmd (README §7 "What answers a request") [ours].

    Parameters
    ----------
    request : Request
        Needs ``cmd``, ``addr``, ``length`` (or ``len``) and ``num_beats``.

    Returns
    -------
    Answer
        Read: :func:`read_beats` beats, checked; AtomicR: 1 beat, checked; a vendor read
        (0x08-0x0F): any size, the dummy has ReqNumBeats + 1 beats; a UPLI write message
        (0x2A) or vendor atomic (0x3C-0x3F): either channel; every other command: write.
    """
    cmd = request.cmd
    if cmd == READ:                                             # [UALink 1.0 Table 2-6]
        return Answer("read", read_beats(request.addr, _length(request)), True)
    if cmd == ATOMIC_R:                                         # atomics are one beat [ours]
        return Answer("read", 1, True)
    if cmd in VENDOR_READS:                                     # [UALink 1.0 §2.7.4.6]
        return Answer("read", request.num_beats + 1, False)
    if cmd == WRITE_MESSAGE or cmd in VENDOR_ATOMICS:           # [UALink 1.0 §2.7.4.6]
        return Answer("either", 0, False)
    return Answer("write", 0, False)        # Write, WriteFull, AtomicNR, vendor write; and [ours]
    #                                         every other (reserved) command, read README literally


# --- Watchdog timing ------------------------------------------------------------------------------

def _check_timeout(completion_timeout, allow_zero):
    ok = isinstance(completion_timeout, int) and not isinstance(completion_timeout, bool) and (
        MIN_TIMEOUT <= completion_timeout <= MAX_TIMEOUT or allow_zero and completion_timeout == 0)
    if not ok:
        zero = "0 (no watchdog) or " if allow_zero else ""
        raise ValueError(f"completion_timeout must be {zero}{MIN_TIMEOUT} .. {MAX_TIMEOUT} clocks, "
                         f"not {completion_timeout!r}")


def tick_window(completion_timeout):
    """The clocks after a request went to the TL at which the tick rule lets its entry expire.

    The entry ages on a tick every ``P`` = ⌈T / 8⌉ clocks and expires on its ninth tick
    (README §7 [ours]). The ticks run free, so the first one may come in the clock the request
    goes (0) or at any clock of the first period, up to ``P``: the ninth is then ``8P`` .. ``9P``
    clocks after it (both ends included, so that either counting convention fits).

    Parameters
    ----------
    completion_timeout : int
        T, 16 .. 2³² − 1 clocks.

    Returns
    -------
    tuple of int
        ``(8P, 9P)``; always inside :func:`expiry_window`.
    """
    _check_timeout(completion_timeout, allow_zero=False)
    period = -(-completion_timeout // TICKS)
    return TICKS * period, EXPIRE_TICK * period


def expiry_window(completion_timeout):
    """(earliest, latest) clocks after a request went to the TL at which its entry may expire.

    README §7 [ours]: "between ``completion_timeout`` and 1.125 · ``completion_timeout`` + 9
    clocks". It bounds :func:`tick_window` and leaves room for pipeline latency: with
    ``P`` = ⌈T / 8⌉, T ≤ 8P (the ninth tick is at least 8 periods on) and
    9P ≤ 9 · (T + 7) / 8 = 1.125 · T + 7.875 < 1.125 · T + 9, so
    ``(T, ⌊9T / 8⌋ + 9)`` holds every expiry the tick rule allows, with at least one clock to
    spare at the late end (exactly one when T mod 8 = 1; nine when T mod 8 = 0).

    Parameters
    ----------
    completion_timeout : int
        T, 16 .. 2³² − 1 clocks.

    Returns
    -------
    tuple of int
        ``(T, ⌊1.125 · T⌋ + 9)``, integer arithmetic.

    Raises
    ------
    ValueError
        For T = 0 (no watchdog: nothing expires) and any T outside 16 .. 2³² − 1.
    """
    if completion_timeout == 0:
        raise ValueError("completion_timeout 0 is no watchdog: nothing expires")
    _check_timeout(completion_timeout, allow_zero=False)
    return completion_timeout, 9 * completion_timeout // 8 + 9


# --- Read-response beats --------------------------------------------------------------------------

#: Field widths of a read-response beat [UALink 1.0 Table 2-8].
BEAT_WIDTHS = {"tag": 11, "vc": 2, "src_acc": 10, "dst_acc": 10, "num_beats": 2, "offset": 2,
               "status": 4, "data": BEAT_BITS, "error": 1}


@dataclass(frozen=True)
class ReadBeat:
    """One beat on a read-response channel [UALink 1.0 Table 2-8].

    Attributes
    ----------
    tag, vc, src_acc, dst_acc : int
        RdRspTag, RdRspVC, RdRspSrcPhysAccID, RdRspDstPhysAccID.
    num_beats, offset : int
        RdRspNumBeats (beats − 1; 0 in single-beat mode) and RdRspOffset [§2.7.8].
    last : bool
        RdRspLast.
    status : int
        RdRspStatus.
    data : int
        RdRspData, 512 bits.
    error : int
        RdRspDataError.
    """

    tag: int
    vc: int
    src_acc: int
    dst_acc: int
    num_beats: int
    offset: int
    last: bool
    status: int
    data: int
    error: int = 0

    def __post_init__(self):
        for name, bits in BEAT_WIDTHS.items():
            value = int(getattr(self, name))
            if not 0 <= value < 1 << bits:
                raise ValueError(f"ReadBeat.{name}={value:#x} does not fit in {bits} bits")


# --- The originator -------------------------------------------------------------------------------

@dataclass
class _Entry:
    """One outstanding request and what the device has had of its answer."""

    request: object
    answer: Answer
    offsets: set = field(default_factory=set)   # read offsets the device has had
    num_beats: int | None = None                # RdRspNumBeats of the latest of them (mode)
    offset: int = 0                             # RdRspOffset of the latest of them


class Originator:
    """A UPLI originator's request table, watchdog outcomes and Isolation Mode (README §7).

    Parameters
    ----------
    outstanding : int
        Table entries, 1 .. 64 [ours].
    completion_timeout : int
        Watchdog limit in clocks, 16 .. 2³² − 1, or 0: no watchdog, only ISOLATE starts
        Isolation Mode [ours].

    Attributes
    ----------
    entries : int
        ``outstanding`` as given: the table's size.
    completion_timeout : int
        As given.
    isolated : bool
        In Isolation Mode; holds until reset (a new object) [UALink 1.0 §3.1.3].
    cause : str or None
        ``"EXPIRED"``, ``"STALLED"`` or ``"ISOLATE"``: what started Isolation Mode (the first
        cause only).
    counts : dict
        ``EXPIRED``, ``STALLED``, ``ISOLATE``, ``DUMMY``, ``DISCARDED``, ``UNEXPECTED``; 16-bit,
        saturating [ours].

    Raises
    ------
    ValueError
        For parameters out of range.
    """

    def __init__(self, outstanding: int = 16, completion_timeout: int = 1_000_000):
        if not (isinstance(outstanding, int) and not isinstance(outstanding, bool)
                and 1 <= outstanding <= MAX_OUTSTANDING):
            raise ValueError(f"outstanding must be 1 .. {MAX_OUTSTANDING} entries, "
                             f"not {outstanding!r}")
        _check_timeout(completion_timeout, allow_zero=True)
        self.entries = outstanding
        self.completion_timeout = completion_timeout
        self.isolated = False
        self.cause = None
        self.counts = dict.fromkeys(COUNTERS, 0)
        self._table = {}            # tag -> _Entry, in issue order
        self._read_tag = None       # tag of the latest beat the device had on the read channel

    # --- the device's side ------------------------------------------------------------------------

    def outstanding(self):
        """The requests outstanding, in issue order."""
        return [entry.request for entry in self._table.values()]

    def can_issue(self, request):
        """Whether ``request`` can take an entry: one is free and no outstanding request has
        its tag (tags are unique among outstanding requests [UALink 1.0 §2.7.4.2]) [ours]."""
        return len(self._table) < self.entries and request.tag not in self._table

    def issue(self, request):
        """The device hands over ``request``; it takes an entry.

        Returns
        -------
        bool
            True: it goes to the TL. False: Isolation Mode holds, it is not sent and will be
            answered by :meth:`dummy` [UALink 1.0 §3.1.3 actions 1, 2].

        Raises
        ------
        ValueError
            When :meth:`can_issue` is false (the request would have to wait).
        """
        if not self.can_issue(request):
            why = "its tag is outstanding" if request.tag in self._table else "the table is full"
            raise ValueError(f"request tag {request.tag:#x} cannot be issued: {why}")
        self._table[request.tag] = _Entry(request, answer_of(request))
        return not self.isolated

    # --- responses from the TL --------------------------------------------------------------------

    def tl_read_beat(self, beat):
        """A read-response beat delivered by the TL.

        Returns
        -------
        bool
            True: it goes to the device unchanged (and with RdRspLast ends its request).
            False: dropped, counted ``DISCARDED`` in Isolation Mode [UALink 1.0 §3.1.3
            action 3], else ``UNEXPECTED`` (README §7 [ours]).
        """
        if self.isolated:
            self._count("DISCARDED")
            return False
        entry = self._table.get(beat.tag)
        if entry is None or not _read_matches(entry.answer, beat):
            self._count("UNEXPECTED")
            return False
        entry.offsets.add(beat.offset)
        entry.num_beats, entry.offset = beat.num_beats, beat.offset
        self._read_tag = beat.tag
        if beat.last:                                   # ends the request [UALink 1.0 §2.7.8]
            del self._table[beat.tag]
        return True

    def tl_write_response(self, rsp):
        """A write response delivered by the TL.

        Returns
        -------
        bool
            True: it goes to the device unchanged and ends its request. False: dropped. Status
            ISOLATE ends no request: counted ``ISOLATE``, and Isolation Mode starts
            [UALink 1.0 §3.1.4.3, Table 2-12] (also in Isolation Mode, where it is not counted
            ``DISCARDED`` [model]); else dropped as :meth:`tl_read_beat` drops.
        """
        if rsp.status == ISOLATE:
            self._count("ISOLATE")
            self._isolate("ISOLATE")
            return False
        if self.isolated:
            self._count("DISCARDED")
            return False
        entry = self._table.get(rsp.tag)
        if entry is None or entry.answer.channel == "read":     # [UALink 1.0 §2.7.6]
            self._count("UNEXPECTED")
            return False
        del self._table[rsp.tag]
        return True

    # --- the watchdog -----------------------------------------------------------------------------

    def expire(self, tag):
        """The watchdog of the outstanding request ``tag`` fired [UALink 1.0 §3.1.3].

        Counts ``EXPIRED`` and starts Isolation Mode; the request stays outstanding (a dummy
        answers it).

        Raises
        ------
        ValueError
            When no request with ``tag`` is outstanding, or there is no watchdog
            (``completion_timeout`` 0).
        """
        self._check_watchdog()
        if tag not in self._table:
            raise ValueError(f"no outstanding request has tag {tag:#x}")
        self._count("EXPIRED")
        self._isolate("EXPIRED")

    def stall(self):
        """A request waiting for the TL to take it (no credit) expired: counts ``STALLED`` and
        starts Isolation Mode (README §7 [ours]).

        Raises
        ------
        ValueError
            When there is no watchdog (``completion_timeout`` 0).
        """
        self._check_watchdog()
        self._count("STALLED")
        self._isolate("STALLED")

    # --- Isolation Mode ---------------------------------------------------------------------------

    def open_burst(self):
        """The tag of a multi-beat read response the device is part-way through, or None.

        That is the request of the latest beat the device had on the read channel when that
        beat had RdRspNumBeats > 0 (and no RdRspLast, or it would have ended the request). A
        multi-beat response's beats are contiguous [UALink 1.0 §2.7.8], so in Isolation Mode its
        dummy must come first on the read channel.
        """
        entry = self._table.get(self._read_tag)
        return self._read_tag if entry is not None and entry.num_beats else None

    def dummy(self, tag):
        """The dummy Completion Timeout answer of the outstanding request ``tag``; ends it.

        [UALink 1.0 §3.1.3 action 2; Tables 2-9, 2-12]; the beats per README §7 [ours]: a write
        response, or read beats with status CMPTO, data all ones [§2.7.5.1] and error 0, for the
        beats the device has not had, ascending, RdRspLast on the final one. RdRspNumBeats:
        a multi-beat burst in progress goes on with its own; after single beats, 0; with nothing
        delivered, a burst of all the answer's beats. The fields: the request's tag and VC,
        source and destination accelerator swapped [§2.7.5, §2.7.6]. Counts ``DUMMY`` once.

        Returns
        -------
        list
            :class:`ReadBeat` s in order, or one :class:`~scaleup_ip.model.tl.flit.WriteResponse`.

        Raises
        ------
        ValueError
            Not in Isolation Mode; no request ``tag`` outstanding; or its dummy goes on the read
            channel while another request's burst is open there (:meth:`open_burst`) [model].
        """
        if not self.isolated:
            raise ValueError("dummy answers are for Isolation Mode only")
        entry = self._table.get(tag)
        if entry is None:
            raise ValueError(f"no outstanding request has tag {tag:#x}")
        request = entry.request
        if not _dummy_on_read(entry):
            answer = [WriteResponse(vc=request.vc, tag=tag, src_acc=request.dst_acc,
                                    dst_acc=request.src_acc, status=CMPTO)]
        else:
            burst = self.open_burst()
            if burst not in (None, tag):
                raise ValueError(f"the read burst of tag {burst:#x} must be finished before "
                                 f"the dummy of tag {tag:#x}")
            answer = [ReadBeat(tag=tag, vc=request.vc, src_acc=request.dst_acc,
                               dst_acc=request.src_acc, num_beats=num_beats, offset=offset,
                               last=last, status=CMPTO, data=MANUFACTURED)
                      for num_beats, offset, last in _dummy_beats(entry)]
            self._read_tag = tag
        del self._table[tag]
        self._count("DUMMY")
        return answer

    # --- helpers ----------------------------------------------------------------------------------

    def _count(self, name):
        self.counts[name] = min(self.counts[name] + 1, COUNTER_MAX)

    def _isolate(self, cause):
        if not self.isolated:
            self.isolated, self.cause = True, cause

    def _check_watchdog(self):
        if self.completion_timeout == 0:
            raise ValueError("completion_timeout is 0: there is no watchdog to fire")


def _read_matches(answer, beat):
    """Whether a read beat fits the request answered by ``answer`` (README §7 [ours]): on its
    channel and, for Read and AtomicR, a multi-beat response of the request's beats or a
    single beat (RdRspNumBeats = 0) with an offset below them [UALink 1.0 §2.7.8]."""
    if answer.channel == "write":
        return False
    if not answer.known:
        return True
    fits = beat.num_beats + 1 == answer.beats
    single = beat.num_beats == 0 and beat.offset < answer.beats
    return fits or single


def _dummy_on_read(entry):
    """Whether the dummy of ``entry`` is read beats: for a read-channel request, and for an
    either-channel one the device has had read beats of [model: README §7 does not say; a
    write response then would leave the device with half a read response]."""
    return entry.answer.channel == "read" or entry.num_beats is not None


def _dummy_beats(entry):
    """``(num_beats, offset, last)`` of each dummy beat of ``entry``, in order.

    Nothing delivered: a multi-beat burst of all the answer's beats. A burst in progress: the
    rest of it, same RdRspNumBeats. Single beats so far: the offsets not yet had, single. When
    nothing is left (a faulty response that never set RdRspLast) the final beat is sent again,
    with RdRspLast, so that the device still sees its answer end [model].
    """
    total = entry.answer.beats or entry.request.num_beats + 1   # either: ReqNumBeats + 1 [model]
    if entry.num_beats is None:
        num_beats, offsets = total - 1, list(range(total))
    elif entry.num_beats:
        num_beats = entry.num_beats
        offsets = list(range(entry.offset + 1, num_beats + 1))
        offsets = offsets or [num_beats]
    else:
        num_beats = 0
        offsets = sorted(set(range(total)) - entry.offsets) or [total - 1]
    return [(num_beats, offset, i == len(offsets) - 1) for i, offset in enumerate(offsets)]
