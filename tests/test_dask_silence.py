"""The silent-node rule of the failover clusters, pure: heartbeats read into a threshold learned from their cadence,
and a look's probes and the scheduler's word judged with the core's two-signal rule (tables, fake probe answers)."""

from __future__ import annotations

import pytest

from hotspare import SIGNAL_PROBE, SIGNAL_SCHEDULER, Host, JobFacts, ProbeResult, QuarantineReason
from hotspare_dask.silence import (
    ANSWERED_RELOOK_S,
    RELOOK_S,
    SILENCE_FLOOR_S,
    SILENCE_STARTUP_S,
    Heartbeats,
    Lead,
    NodeEvidence,
    jobs_on,
    judge_node,
    pick_control,
    probes_count,
)

N2, N3, N4 = Host("n2"), Host("n3"), Host("n4")


def beats(period_s: float, count: int, *, hb: Heartbeats | None = None, poll_s: float = 0.5) -> Heartbeats:
    """A worker heard every ``period_s`` (scheduler clock = ours), read every ``poll_s``, ``count`` beats long."""
    hb = hb or Heartbeats()
    for k in range(count):
        hb.read({"w": 100.0 + k * period_s}, k * period_s, poll_s)
    return hb


@pytest.mark.parametrize(("period_s", "count", "fixed_s", "floor_s", "expected"), [
    (0.5, 2, None, SILENCE_FLOOR_S, SILENCE_STARTUP_S),  # just registered: the startup threshold
    (0.5, 20, None, SILENCE_FLOOR_S, SILENCE_FLOOR_S),  # 5 x 0.5 s is under the floor
    (2.0, 20, None, SILENCE_FLOOR_S, 10.0),  # 200+ workers beat every 2 s: 5 x 2 s
    (0.5, 20, None, 1.0, 2.5),  # a lower floor lets the cadence speak
    (0.5, 2, 7.0, SILENCE_FLOOR_S, 7.0),  # fixed: always
])
def test_threshold_is_learned_from_the_heartbeat_cadence(period_s: float, count: int, fixed_s: float | None,
                                                         floor_s: float, expected: float) -> None:
    """The threshold is five heartbeat gaps, never under the floor; a fixed one wins; a new worker gets 5 s."""
    hb = beats(period_s, count, hb=Heartbeats(floor_s=floor_s, fixed_s=fixed_s), poll_s=min(period_s, 0.5))
    assert hb.threshold_s("w") == pytest.approx(expected)


def test_a_worker_is_silent_from_the_read_that_last_changed_its_heartbeat() -> None:
    """Silence is timed on this side, from the first read of the last ``last_seen`` value (any scheduler clock)."""
    hb = beats(0.5, 20)  # last beat read at 9.5
    for now in (10.0, 11.0, 12.0, 12.5):
        hb.read({"w": 100.0 + 19 * 0.5}, now, 0.5)
    assert hb.silent(12.5) == []  # 3.0 s: not past the threshold
    hb.read({"w": 109.5}, 13.0, 0.5)
    (silence,) = hb.silent(13.0)
    assert (silence.address, silence.silent_s, silence.threshold_s) == ("w", 3.5, SILENCE_FLOOR_S)
    hb.read({"w": 110.0}, 13.5, 0.5)  # heard again
    assert hb.silent(13.5) == []


def test_a_late_read_starts_every_silence_again() -> None:
    """A read long after the last (this loop or the scheduler was busy) may show heartbeats not yet taken in: the
    silence is timed from that read, and found again if it goes on."""
    hb = beats(0.5, 20)  # the last beat read at 9.5, then no read until 30.0
    hb.read({"w": 109.5}, 30.0, 0.5)
    assert hb.silent(30.0) == []
    for k in range(1, 8):
        hb.read({"w": 109.5}, 30.0 + 0.5 * k, 0.5)
    assert [s.address for s in hb.silent(33.5)] == ["w"]


def test_workers_gone_from_the_scheduler_are_forgotten() -> None:
    hb = beats(0.5, 20)
    hb.read({"x": 5.0}, 10.0, 0.5)
    assert hb.threshold_s("w") == SILENCE_STARTUP_S and [s.address for s in hb.silent(30.0)] == ["x"]


def answered(host: Host) -> ProbeResult:
    return ProbeResult(host, True, "answered")


def missed(host: Host) -> ProbeResult:
    return ProbeResult(host, False, "no answer within 2 s")


def look(rounds: list[tuple[ProbeResult, ...]], *, state: str = "ALLOCATED", job: str | None = "RUNNING",
         control: Host | None = N2, closed: bool = False) -> NodeEvidence:
    lead = (Lead(N3, "42", "its worker w's connection to the scheduler closed", "after its worker's connection closed",
                 closed=True) if closed else
            Lead(N3, "42", "its worker w silent for 3.4 s (threshold 3.0 s)", "while its worker was silent"))
    facts = None if job is None else JobFacts("42", job, (N3,))
    return NodeEvidence(lead, tuple(rounds), control, state, facts)


@pytest.mark.parametrize(("evidence", "earlier", "dead", "signals", "reason"), [
    # Two missed probes while the control answered: dead.
    (look([(missed(N3), answered(N2)), (missed(N3), answered(N2))]), (), True, ("probe", "probe"), "probed"),
    # One missed probe and SLURM's NOT_RESPONDING: dead, on the scheduler's word too.
    (look([(missed(N3), answered(N2)), (answered(N3), answered(N2))], state="ALLOCATED+NOT_RESPONDING"), (),
     True, ("probe", "scheduler"), "scheduler"),
    # A busy worker (a task holding the GIL): its node answers both probes. No signal at all.
    (look([(answered(N3), answered(N2)), (answered(N3), answered(N2))]), (), False, (), "probed"),
    # One slow answer: one signal never evicts.
    (look([(missed(N3), answered(N2)), (answered(N3), answered(N2))]), (), False, ("probe",), "probed"),
    # The control missed too: the probe path is in doubt, nobody's failure counts.
    (look([(missed(N3), missed(N2)), (missed(N3), missed(N2))]), (), False, (), "probed"),
    # The job ended: a step of an ended job fails on a healthy node, so the probes say nothing.
    (look([(missed(N3), answered(N2)), (missed(N3), answered(N2))], job="COMPLETED"), (), False, (), "probed"),
    (look([(missed(N3), answered(N2)), (missed(N3), answered(N2))], job=None), (), False, (), "probed"),
    # The scheduler's word alone (PBS: no probe from here): never.
    (look([], state="down", control=None), (), False, ("scheduler",), "scheduler"),
    # A signal found by an earlier look at the same silence counts with this one.
    (look([(missed(N3), answered(N2)), (answered(N3), answered(N2))]), ("probe",), True, ("probe", "probe"),
     "probed"),
    # No other job to probe beside it: the lone node's two misses count (as the supervisor counts a lone host).
    (look([(missed(N3),), (missed(N3),)], control=None), (), True, ("probe", "probe"), "probed"),
    # A crashed node after SLURM noticed: DOWN and its job still RUNNING.
    (look([(missed(N3), answered(N2)), (missed(N3), answered(N2))], state="DOWN*"), (), True,
     ("probe", "probe", "scheduler"), "scheduler"),
    # SLURM already concluded: the job NODE_FAIL on a DOWN node (its probes cannot count, a job that ended fails
    # them anyway): dead on that verdict, as the lost-job judging reads it.
    (look([(missed(N3), answered(N2)), (missed(N3), answered(N2))], state="DOWN*", job="NODE_FAIL"), (), True,
     ("scheduler",), "scheduler"),
    # NODE_FAIL but the node back (rebooted) and answering: not this rule's; the lost-job judging decides.
    (look([(answered(N3), answered(N2))], state="IDLE", job="NODE_FAIL"), (), False, (), "probed"),
    # A worker's connection closed and PBS reports its MOM down (no probe job can be placed on a down node): dead.
    (look([], state="down", control=None, closed=True), (), True, ("scheduler", "closed"), "scheduler"),
    # Closed, the node answering (the worker died alone, its nanny restarts it): no signal from the probes; the
    # closed connection alone never counts.
    (look([(answered(N3), answered(N2)), (answered(N3), answered(N2))], closed=True), (), False, ("closed",),
     "probed"),
    # Closed and one missed probe, the scheduler saying nothing: a pair of probes is needed.
    (look([(missed(N3), answered(N2)), (answered(N3), answered(N2))], closed=True), (), False,
     ("probe", "closed"), "probed"),
    # Closed and two missed probes (a crash on SLURM before it notices): dead, on the probes.
    (look([(missed(N3), answered(N2)), (missed(N3), answered(N2))], closed=True), (), True,
     ("probe", "probe", "closed"), "probed"),
], ids=["two-probes", "probe+scheduler", "busy-answers", "one-probe", "control-missed", "job-ended", "job-unknown",
        "scheduler-alone", "earlier-signal", "no-control", "down", "node-fail", "node-fail-rebooted",
        "closed+down", "closed-answered", "closed+one-probe", "closed+two-probes"])
def test_judge_node(evidence: NodeEvidence, earlier: tuple[str, ...], dead: bool, signals: tuple[str, ...],
                    reason: str) -> None:
    """Two signals (two missed probes, or one and the scheduler's word) make a node dead; anything less never."""
    finding = judge_node(evidence, earlier)
    assert (finding.host, finding.dead, finding.signals, finding.reason) == (N3, dead, signals,
                                                                            QuarantineReason(reason))
    assert set(finding.signals) <= {SIGNAL_PROBE, SIGNAL_SCHEDULER, "closed"}
    assert evidence.lead.why in finding.why and "job 42" in finding.why


@pytest.mark.parametrize(("evidence", "relook_s"), [
    (look([(missed(N3), answered(N2)), (answered(N3), answered(N2))]), RELOOK_S),  # one signal: soon, for a second
    (look([(answered(N3), answered(N2)), (answered(N3), answered(N2))]), ANSWERED_RELOOK_S),  # answered: later
    (look([], state="down", control=None), ANSWERED_RELOOK_S),  # no probe can give the second (PBS)
    (look([(missed(N3), answered(N2))], state="DOWN", job="COMPLETED"), ANSWERED_RELOOK_S),  # the job ended
])
def test_a_node_found_alive_is_looked_at_again_soon_only_while_a_probe_can_give_a_second_signal(
        evidence: NodeEvidence, relook_s: float) -> None:
    finding = judge_node(evidence)
    assert not finding.dead and finding.relook_s == relook_s


def test_a_closed_connection_and_the_schedulers_down_read_as_such() -> None:
    finding = judge_node(look([], state="down", control=None, closed=True))
    assert finding.why == ("was reported unhealthy by the scheduler after its worker's connection closed (its worker "
                           "w's connection to the scheduler closed; probes: none (no probe from here); scheduler: node "
                           "down, job 42 RUNNING)")


def test_the_finding_names_every_answer() -> None:
    """The quarantine's evidence: the lead, each probe answer (the control marked), the scheduler's word."""
    finding = judge_node(look([(missed(N3), answered(N2)), (missed(N3), answered(N2))]))
    assert finding.why == ("failed two probes while its worker was silent (its worker w silent for 3.4 s (threshold "
                           "3.0 s); probes: n3: no answer within 2 s, n2 (control): answered; n3: no answer within "
                           "2 s, n2 (control): answered; scheduler: node ALLOCATED, job 42 RUNNING)")


@pytest.mark.parametrize(("state", "counts"), [("RUNNING", True), ("running", True), ("COMPLETING", False),
                                               ("NODE_FAIL", False), ("PENDING", False),
                                               # PBS's job_state letters: R runs; E exiting, Q queued, F finished
                                               ("R", True), ("E", False), ("Q", False), ("F", False)])
def test_probes_count_only_while_the_job_runs(state: str, counts: bool) -> None:
    assert probes_count(JobFacts("1", state)) is counts


def test_jobs_on_a_node() -> None:
    """Every live job of the cluster on the dead node, but not one already judged."""
    hosts = {"10": N3, "11": N2, "12": N3, "13": N3}
    live = {"a": "10", "b": "11", "c": "12"}  # 13 is no longer the cluster's
    assert jobs_on(N3, hosts, live) == {"a": "10", "c": "12"}
    assert jobs_on(N3, hosts, live, {"10"}) == {"c": "12"}


@pytest.mark.parametrize(("avoid", "expected"), [
    (set(), (N2, "11")),
    ({N2}, (N4, "14")),
    ({N2, N4}, None),
])
def test_pick_control(avoid: set[Host], expected: tuple[Host, str] | None) -> None:
    """Another live job's node, in host order, neither the suspect nor quarantined/silent/looked at."""
    hosts = {"10": N3, "11": N2, "14": N4, "9": Host("n1")}
    live = {"a": "10", "b": "11", "d": "14"}  # n1's job 9 ended
    assert pick_control(N3, hosts, live, avoid=avoid) == expected
