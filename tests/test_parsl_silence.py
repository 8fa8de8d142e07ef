"""The Parsl block watch's decisions, from tables (pure): the silence threshold, the interchange's reply read,
which nodes are leads, the two-signal judgement of one look (one signal never evicts), and the control picked."""

from __future__ import annotations

from typing import Any

import pytest

from hotspare import Host, JobFacts, ProbeResult, QuarantineReason
from hotspare_parsl.silence import (
    ANSWERED_RELOOK_S,
    RELOOK_S,
    WHEN_REPORTED,
    WHEN_SILENT,
    Lead,
    ManagerBeat,
    NodeEvidence,
    find_leads,
    judge_node,
    parse_managers,
    pick_control,
    silence_threshold_s,
)

N1, N2, N3 = Host("n1"), Host("n2"), Host("n3")


@pytest.mark.parametrize(("period_s", "floor_s", "fixed_s", "expected"), [
    (1, 3.0, None, 3.0),      # the floor
    (2, 3.0, None, 6.0),      # three heartbeat periods
    (30, 3.0, None, 90.0),    # HTEX's default period: why FailoverHTEX sets 1 s
    (1, 3.0, 8.0, 8.0),       # fixed by the user
])
def test_threshold(period_s: float, floor_s: float, fixed_s: float | None, expected: float) -> None:
    """A few heartbeat periods with a floor, unless fixed."""
    assert silence_threshold_s(period_s, floor_s, fixed_s) == expected


def test_parse_managers_keeps_good_entries_and_drops_malformed_ones() -> None:
    """The interchange's reply read as records; entries missing fields, with hostile hostnames or of the wrong type
    are left out or keep no host, never raise."""
    reply = [
        {"manager": "a1", "block_id": "0", "hostname": "n1", "heartbeat_age_s": 0.4, "tasks": 1, "active": True},
        {"manager": "b2", "block_id": 1, "hostname": "bad host; rm -rf /", "heartbeat_age_s": "7.5", "tasks": 0},
        {"manager": "c3", "block_id": "2", "hostname": "n3"},  # no age
        "garbage",
    ]
    assert parse_managers(reply) == [ManagerBeat("a1", "0", N1, 0.4, 1), ManagerBeat("b2", "1", None, 7.5, 0)]
    assert parse_managers(None) == []


BLOCKS = {"0": "101", "1": "102", "2": "103"}
HOSTS = {"101": N1, "102": N2, "103": N3}


@pytest.mark.parametrize(("ages", "states", "expected"), [
    ({"0": 0.5, "1": 0.5, "2": 0.5}, {}, []),                                    # all heard from
    ({"0": 4.0, "1": 0.5, "2": 0.5}, {}, [(N1, "101", WHEN_SILENT)]),            # block 0's manager silent
    ({"0": 0.5, "1": 0.5, "2": 0.5}, {N2: "IDLE+NOT_RESPONDING"}, [(N2, "102", WHEN_REPORTED)]),
    ({"0": 4.0, "1": 0.5, "2": 0.5}, {N1: "DOWN*"}, [(N1, "101", WHEN_SILENT)]),  # one lead per node
    ({"0": 0.5, "1": 0.5, "9": 60.0}, {}, []),                                   # a block no longer live
])
def test_leads(ages: dict[str, float], states: dict[Host, str], expected: list[tuple[Host, str, str]]) -> None:
    """A manager silent past the threshold, or a live block's node the scheduler calls unhealthy, is a lead."""
    beats = [ManagerBeat(f"m{b}", b, None, age, 1) for b, age in ages.items()]
    leads = find_leads(beats, 3.0, BLOCKS, HOSTS, states)
    assert [(lead.host, lead.job_id, lead.when) for lead in leads] == expected


def test_a_silent_manager_without_a_known_node_uses_its_own_hostname() -> None:
    """Before the provider learnt the block's node, the manager's own hostname names it."""
    leads = find_leads([ManagerBeat("m0", "0", N1, 5.0, 1)], 3.0, BLOCKS, {}, {})
    assert [(lead.host, lead.job_id) for lead in leads] == [(N1, "101")]


def _ok(host: Host) -> ProbeResult:
    return ProbeResult(host, True, "answered")


def _miss(host: Host) -> ProbeResult:
    return ProbeResult(host, False, "no answer within 2 s")


LEAD = Lead(N1, "101", "0", "block 0's manager silent for 4.0 s (threshold 3.0 s)", WHEN_SILENT)


@pytest.mark.parametrize("case", [
    # two missed probes, the control answering: dead, on its own probes
    (((_miss(N1), _ok(N2)), (_miss(N1), _ok(N2))), "ALLOCATED", "RUNNING", (), True, QuarantineReason.PROBED, None),
    # one missed probe and the scheduler's NOT_RESPONDING: dead, the scheduler's word in the reason
    (((_miss(N1), _ok(N2)), (_ok(N1), _ok(N2))), "ALLOCATED*", "RUNNING", (), True, QuarantineReason.SCHEDULER, None),
    # both answered (a busy node, a stopped manager): not evicted, looked at again later
    (((_ok(N1), _ok(N2)), (_ok(N1), _ok(N2))), "ALLOCATED", "RUNNING", (), False, None, ANSWERED_RELOOK_S),
    # one missed probe alone: one signal never evicts; looked at again soon
    (((_miss(N1), _ok(N2)), (_ok(N1), _ok(N2))), "ALLOCATED", "RUNNING", (), False, None, RELOOK_S),
    # ...but with one found by an earlier look at the same silence: two
    (((_miss(N1), _ok(N2)), (_ok(N1), _ok(N2))), "ALLOCATED", "RUNNING", ("probe",), True, QuarantineReason.PROBED,
     None),
    # the control missed too: the probe path is broken, no signal from probes
    (((_miss(N1), _miss(N2)), (_miss(N1), _miss(N2))), "ALLOCATED", "RUNNING", (), False, None, ANSWERED_RELOOK_S),
    # the scheduler's word alone: one signal
    ((), "DOWN+NOT_RESPONDING", "RUNNING", (), False, None, ANSWERED_RELOOK_S),
    # the job ended already: its probes prove nothing
    (((_miss(N1), _ok(N2)), (_miss(N1), _ok(N2))), "ALLOCATED", "COMPLETED", (), False, None, ANSWERED_RELOOK_S),
    # the scheduler ended the job for the node and calls it down: dead on that verdict
    ((), "DOWN*", "NODE_FAIL", (), True, QuarantineReason.SCHEDULER, None),
])
def test_judge_node(case: tuple[Any, ...]) -> None:
    """The core's two-signal rule on one look at a block's node (rounds, node state, job state, earlier signals ->
    dead, quarantine reason, when to look again)."""
    rounds, state, job, earlier, dead, reason, relook = case
    finding = judge_node(NodeEvidence(LEAD, rounds, N2, state, JobFacts("101", job, (N1,))), earlier)
    assert finding.dead is dead, finding.why
    if dead:
        assert finding.reason is reason
        assert ("manager silent" in finding.why and "n2 (control)" in finding.why) or not rounds
    else:
        assert finding.relook_s == relook


def test_pick_control() -> None:
    """Another live block's node, not the suspect nor one to avoid; None when there is none."""
    assert pick_control(N1, HOSTS, ["101", "102", "103"]) == (N2, "102")
    assert pick_control(N1, HOSTS, ["101", "102", "103"], avoid={N2}) == (N3, "103")
    assert pick_control(N1, HOSTS, ["101"]) is None
