# SPDX-License-Identifier: BSD-2-Clause
"""The SONiC Scale-Up Test Standard's LLR and CBFC cases (draft 0.4, 2 June 2026, §4.1-4.2) as
they apply to two lossless links back to back (``tb/ethx/link/test_scaleup.py``): each case's
pass rule, how it maps onto the link, and for a case that does not apply, why. The tests record
what they measured (:func:`record`); :func:`report` joins it to this table in
``build/bench/scaleup_tests.json`` and a Markdown table beside it.

The standard's tester and DUT ports become the two ends of the pair: the DUT is the end whose
counters a case reads, the other end and the cocotb channels between them are the tester (its
drops, corruptions and rewrites of frames on the wire, its sources and sinks at the bridge
sides). The SAI counter names map onto the link's (link README §5) as each case says."""

import dataclasses
import json
import os

__all__ = ["CASES", "Case", "ENV", "record", "report"]

#: The environment variable naming the file the tests append their records to.
ENV = "SCALEUP_RESULTS"


@dataclasses.dataclass(frozen=True)
class Case:
    """A case of the standard: its ID and goal, its pass rule, and how it is run here. ``fixed``
    is the verdict of a case not run in full: ``"n/a"`` (it does not apply, ``how`` says why),
    ``"not built"`` (the link lacks what it tests) or ``"partial"`` (run, but the link does
    less than the case asks)."""
    id: str
    goal: str
    rule: str
    how: str
    fixed: str | None = None


CASES = [
    Case("LLR-01", "Basic LLR sequence/ACK",
         "N=100 good frames: no loss; RX_OK = TX_OK = N; both ends' counters agree",
         "a sends 100 frames of the size sweep; a's TX_OK, b's RX_OK, ACKs sent and taken"),
    Case("LLR-02", "Retry (NACK)",
         "one frame of 100 dropped: NACK taken = 1, replays = 1 at the sender; no loss",
         "the channel drops a's 50th data frame once; NACK_RX and TX_REPLAY_NACK at a"),
    Case("LLR-03", "Retry (replay timer expired)",
         "REPLAY_COUNT_MAX=3, ACKs blocked (A) or frozen (B): after 3 retries, FLUSH",
         "replay_max 3; b's ACKs and NACKs dropped (A) or rewritten to the first ACK's number "
         "(B); the replays done and the frames flushed when a enters FLUSH"),
    Case("LLR-04", "NACK generation",
         "1000 frames with one bad CRC (1) or one gap (2): one NACK, one replay; no loss, "
         "in order",
         "a's 500th data frame corrupted (1: RX_BAD) or dropped (2: RX_MISSING) once"),
    Case("LLR-05", "Poison CRC handling",
         "a poisoned frame among 100: counted, not NACKed, not replayed",
         "a's 50th frame poisoned at its bridge side (user on its last beat): sent with its "
         "FCS poisoned (the pattern is ours, link README §1); RX_POISONED, NACK_TX, replays"),
    Case("LLR-06", "OUTSTANDING_FRAMES_MAX limit",
         "OUTSTANDING_FRAMES_MAX=4, ACKs dropped: only 4 frames replayed before FLUSH",
         "max_outstanding 4, replay_max 3, b's ACKs and NACKs dropped, 100 frames offered"),
    Case("LLR-07", "Buffer capacity (500 m)",
         "500 m round trip, max and min frames at 100 % line rate: no loss, received at "
         "line rate (within 5 %)",
         "channels of 390 clocks each way (500 m of fibre at 5 ns/m is 781 clocks round trip "
         "at 156.25 MHz, 10 Gb/s on 64 bits) [ours]; wire beats of data delivered per clock"),
    Case("LLR-08", "Flush recovery",
         "RE_INIT_ON_FLUSH: FLUSH forced, INIT follows, the link recovers",
         "the wire down longer than down_max in traffic; INIT after FLUSH is always on [ours]; "
         "100 frames after it arrive"),
    Case("LLR-09", "Packet size traversal",
         "64..9216 bytes +-1: no abnormal drop at any size",
         "data frames on the wire are 28 + 8n bytes (link README §1), so each size of the "
         "sweep is sent as the legal sizes just below and above it; MTU 9216"),
    Case("LLR-10", "LLR and non-LLR frames together",
         "(1) both kinds arrive, no loss; (2) with errors, non-LLR lost, LLR not",
         "a sends its frames and best-effort frames (64, 128, 1518 B; the best-effort path, "
         "link README §6: no link word, never replayed, no credits); in (2) 2 % of the wire's "
         "frames of both kinds corrupted"),
    Case("CBFC-01", "Sender credit handling",
         "SENDER_CREDITS_USED/CONSUMED/FREED match the formula over the size sweep",
         "S_CC and S_CF of each VC against sum(ceil((L + overhead) / credit_size)); S_CU 0"),
    Case("CBFC-02", "Receiver credit handling",
         "RECEIVER_CREDITS_CONSUMED/FREED match the formula over the size sweep",
         "R_CC and R_CF of each VC against the same sum"),
    Case("CBFC-03", "Credit loss/recovery",
         "CC_Update stopped, 100 corrupted frames: R counters unchanged; CC_Update resumed: "
         "they match S_CC/S_CF, S_CU 0",
         "cc_period 0 and replay_max 0: a's frames corrupted until 100 are flushed (LLR would "
         "otherwise repair them); then CC_UPDATEs again"),
    Case("CBFC-04", "Backpressure",
         "drain 100 %: most; 50 %: between; 0 %: traffic pauses; no loss",
         "b's bridge side takes a beat every clock, every other clock, or never"),
    Case("CBFC-05", "VLAN PCP+DEI mapping",
         "tagged traffic enters the VC its PCP and DEI map to",
         "on the tagged links of the link tests (64, 8 and 32 bits; link README §1): each VC its "
         "own PCP and the receivers' tables the inverse; b's table swapped for two frames (they "
         "must move to the other VC's R_CC); then traffic both ways with the DEI set and tags "
         "taken off by the tester, and a frame of another VID; the DEI is not read [ours]"),
    Case("CBFC-06", "IPv4 DSCP mapping", "DSCP-marked traffic enters its VC",
         "does not apply: ETH-X frames are layer 2 (EtherType 0x88B5), without an IP header",
         fixed="n/a"),
    Case("CBFC-07", "IPv6 DSCP mapping", "DSCP-marked traffic enters its VC",
         "does not apply: no IP header, as CBFC-06", fixed="n/a"),
    Case("CBFC-08", "Per-VC credit",
         "4 VCs, one held: the others are not affected",
         "VC 2's credit limit set to 0 (the receive buffer is shared [ours], so a held VC is a "
         "VC the receiver grants no credit); a source that follows vc_ready"),
    Case("CBFC-09", "Per-port credit",
         "2 VCs on a port limit: both flow; VC 1 held may or may not affect VC 0",
         "VC limits open, a port limit of 64 credits; VC 1's limit set to 0"),
    Case("CBFC-10", "N-to-1 incast, lossless",
         "N sources at line rate into one: flow control, no loss",
         "does not apply to a point-to-point link: needs more than two nodes (a switch)",
         fixed="n/a"),
    Case("CBFC-11", "N-to-1 incast, lossless + best effort",
         "no loss of lossless traffic; best effort degrades",
         "does not apply to a point-to-point link: needs more than two nodes (a switch)",
         fixed="n/a"),
    Case("CBFC-12", "Buffer capacity (500 m)",
         "500 m round trip, max and min frames at line rate: no loss, line rate (within 5 %)",
         "as LLR-07; the credits' round trip through the receive buffer: its peak use"),
]


def record(case, *, expected, measured, passed, frame_size="", notes=""):
    """Append what a test measured for ``case`` (an ID of :data:`CASES`, with a scenario
    suffix such as ``LLR-03 A``) to the file :data:`ENV` names, if any."""
    path = os.environ.get(ENV)
    if not path:
        return
    with open(path, "a") as out:
        out.write(json.dumps({"case": case, "frame_size": frame_size, "expected": expected,
                              "measured": measured, "pass": bool(passed),
                              "notes": notes}) + "\n")


def _labelled(record, case_id):
    """A record's measured figures, after its scenario (the case name past the ID) if any."""
    scenario = record["case"][len(case_id):].strip()
    return f"{scenario}: {record['measured']}" if scenario else record["measured"]


def report(records, run, out):
    """Write ``out`` (JSON: ``run``, the configuration and seed, and each case of
    :data:`CASES` with its records) and ``out`` with ``.md`` (a table); returns the table."""
    cases = []
    for case in CASES:
        mine = [r for r in records if r["case"].split()[0] == case.id]
        verdict = ("FAIL" if any(not r["pass"] for r in mine) else case.fixed if case.fixed
                   else "pass" if mine else "not run")
        cases.append({**dataclasses.asdict(case), "result": verdict, "records": mine})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"run": run, "cases": cases}, indent=2))
    rows = ["| case | goal | result | measured |", "|---|---|---|---|"]
    for c in cases:
        measured = "; ".join(_labelled(r, c["id"]) for r in c["records"]) or c["how"]
        rows.append(f"| {c['id']} | {c['goal']} | {c['result']} | {measured} |")
    table = "\n".join(rows) + "\n"
    out.with_suffix(".md").write_text(table)
    return table
