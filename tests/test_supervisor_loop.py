"""The whole supervisor loop with a fake runner: no process is started, every decision is the real one.

The fake runner plays each attempt from a script (its output, its exit status), answers probes from a table
and answers scheduler commands through the same runner; the ledger, patterns, classifier, policy and
quarantine are the real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from conftest import RunRecord, fake_slurm, read_run
from hotspare import Host
from hotspare.act.gateway import ProbeHow, Running
from hotspare.act.observe import Observer, Watch
from hotspare.act.probe import ProbeResult
from hotspare.act.runner import Completed, Outcome, StopCause
from hotspare.act.scheduler import SchedulerQuery
from hotspare.decide.policy import Budgets
from hotspare.decide.pool import Pool
from hotspare.errors import EXIT_INTERRUPTED, EXIT_NO_RETRY, EXIT_OK, EXIT_RETRY_ELSEWHERE
from hotspare.evidence.patterns import load_patterns
from hotspare.evidence.scan import Scanner
from hotspare.record.ledger import Ledger
from hotspare.record.quarantine import Quarantine
from hotspare.supervisor import RunConfig, Supervisor

#: Beyond any Linux pid_max (2**22): recorded as the launcher's group, it can never name a real process.
NO_PID = 2**22 + 1


@dataclass
class Script:
    """One attempt as the fake launcher plays it: its output, then its exit status after ``polls`` polls."""

    output: bytes
    rc: int
    #: Polls before it exits by itself (each advances the fake clock by a second); None: only when stopped.
    polls: int | None = 0


@dataclass
class FakeClock:
    now_s: float = 0.0

    def __call__(self) -> float:
        return self.now_s


@dataclass
class FakeRunning:
    script: Script
    log_path: Path
    on_output: Callable[[bytes], None]
    clock: FakeClock
    stopped_by: StopCause | None = None
    polled: int = 0
    pid: int = NO_PID

    def poll(self, timeout_s: float) -> int | None:
        if self.polled == 0:
            self.log_path.write_bytes(self.script.output)
            self.on_output(self.script.output)
        self.polled += 1
        self.clock.now_s += 1.0
        if self.stopped_by is not None:
            return -15
        done = self.script.polls is not None and self.polled > self.script.polls
        return self.script.rc if done else None

    def stop(self, why: StopCause, grace_s: float) -> None:
        self.stopped_by = self.stopped_by or why

    def finish(self) -> Outcome:
        rc = self.poll(0.0)
        assert rc is not None
        return Outcome(rc, float(self.polled), self.script.output[-4096:], self.stopped_by)


@dataclass
class FakeRunner:
    """Attempts from ``scripts``; probes fail on ``dead`` hosts; scheduler commands answer ``answer``."""

    scripts: list[Script]
    dead: frozenset[str] = frozenset()
    answer: Completed | None = None
    #: Hosts that miss this many probes, then answer (a slow or briefly frozen node).
    flaky: dict[str, int] = field(default_factory=dict)
    #: Seconds this site's launcher takes to start a probe: a probe with a shorter deadline misses on every host.
    probe_start_s: float = 0.0
    clock: FakeClock = field(default_factory=FakeClock)
    launched: list[tuple[str, ...]] = field(default_factory=list)
    probed: list[tuple[str, ...]] = field(default_factory=list)
    asked: list[tuple[str, ...]] = field(default_factory=list)

    def launch(self, argv: Sequence[str], log_path: Path, on_output: Callable[[bytes], None], *,
               env: Mapping[str, str]) -> Running:
        script = self.scripts[len(self.launched)]
        self.launched.append(tuple(argv))
        return FakeRunning(script, log_path, on_output, self.clock)

    def probe(self, hosts: Sequence[Host], how: ProbeHow) -> list[ProbeResult]:
        self.probed.append(tuple(h.name for h in hosts))
        found = []
        for h in hosts:
            silent = h.name in self.dead or self.flaky.get(h.name, 0) > 0 or how.timeout_s < self.probe_start_s
            if self.flaky.get(h.name, 0) > 0:
                self.flaky[h.name] -= 1
            found.append(ProbeResult(h, not silent, "no answer within 3 s" if silent else "answered"))
        return found

    def capture(self, argv: Sequence[str], timeout_s: float) -> Completed:
        self.asked.append(tuple(argv))
        assert self.answer is not None, f"no scheduler command expected, got {argv}"
        return Completed(tuple(argv), self.answer.rc, self.answer.stdout, self.answer.stderr, self.answer.timed_out)


CONFIG = RunConfig(command=("train",), allocation=("n1", "n2", "n3", "n4"), nhosts=3, launcher="srun",
                   budgets=Budgets(backoff_base_s=0, backoff_max_s=0))


#: No scheduler (outside a batch job).
NO_SCHEDULER = SchedulerQuery(None, None)


def supervise(tmp: Path, runner: FakeRunner, *, scheduler: SchedulerQuery | None = NO_SCHEDULER,
              on_attempt: Callable[[int, Pool, Path], None] | None = None) -> tuple[int, Ledger]:
    sup = Supervisor(CONFIG, tmp / "run", clock=runner.clock, sleep=lambda s: None, scheduler=scheduler,
                     runner=runner, on_attempt=on_attempt)
    return sup.run(), Ledger.open(tmp / "run")


def _supervise_on(tmp: Path, runner: FakeRunner, allocation: tuple[str, ...], nhosts: int) -> RunRecord:
    """Run to success on ``allocation`` (``nhosts`` active) with no scheduler; the ledger's record."""
    config = replace(CONFIG, allocation=allocation, nhosts=nhosts)
    sup = Supervisor(config, tmp / "run", clock=runner.clock, sleep=lambda s: None, scheduler=NO_SCHEDULER,
                     runner=runner)
    assert sup.run() == EXIT_OK
    return read_run(tmp / "run")


def nodelists(runner: FakeRunner) -> list[str]:
    return [next(a for a in argv if a.startswith("--nodelist=")) for argv in runner.launched]


def test_a_rank_killed_on_a_named_host_swaps_it_for_the_spare(tmp_path: Path) -> None:
    """srun names n2 ('srun: error: n2: task 1: Killed'): n2 out (scraped) for the spare n4, no probe, attempt 2
    succeeds, exit 0."""
    runner = FakeRunner([Script(b"step=4 loss=1.0\nsrun: error: n2: task 1: Killed\n", 1), Script(b"step=9\n", 0)])
    code, ledger = supervise(tmp_path, runner)
    attempts, decisions = ledger.attempts(), ledger.decisions()
    entries = Quarantine.attach(ledger.connection).entries()
    ledger.close()
    assert code == EXIT_OK
    assert [a.failure_class for a in attempts] == ["rank_killed", "success"]
    assert (decisions[0].action, decisions[0].hosts, decisions[0].quarantine_reason) == ("swap", ("n2",), "scraped")
    assert [(e.host.name, e.reason) for e in entries] == [("n2", "scraped")]
    assert nodelists(runner) == ["--nodelist=n1,n2,n3", "--nodelist=n1,n4,n3"]
    assert runner.probed == [("n4", "n1")]  # only the spare, checked before use (and a control)


def test_an_unattributed_failure_is_probed_and_the_silent_host_swapped(tmp_path: Path) -> None:
    """rc 1 naming no host: every active host is probed; n3 does not answer, so n3 is swapped (reason probed)."""
    runner = FakeRunner([Script(b"step=4\n", 1), Script(b"step=9\n", 0)], dead=frozenset({"n3"}))
    code, ledger = supervise(tmp_path, runner)
    decisions, probes = ledger.decisions(), [o for o in ledger.observations(1) if o.kind == "probe"]
    ledger.close()
    assert code == EXIT_OK
    # every active host twice (quick, 1 s apart), then the spare, before use
    assert runner.probed == [("n1", "n2", "n3"), ("n1", "n2", "n3"), ("n4", "n1")]
    assert (decisions[0].action, decisions[0].hosts, decisions[0].quarantine_reason) == ("swap", ("n3",), "probed")
    assert {o.host for o in probes} == {"n1", "n2", "n3"}
    assert nodelists(runner)[1] == "--nodelist=n1,n2,n4"


def test_quick_probes_every_host_misses_fall_back_to_the_full_timeout(tmp_path: Path) -> None:
    """A site whose launcher needs 3 s to start a probe: both quick rounds (2 s deadline) miss on every host, which
    blames nobody; the hosts are probed once more with the full --probe-timeout, and that round finds n3."""
    runner = FakeRunner([Script(b"step=4\n", 1), Script(b"step=9\n", 0)], dead=frozenset({"n3"}), probe_start_s=3.0)
    code, ledger = supervise(tmp_path, runner)
    decisions = ledger.decisions()
    notes = [o.detail for o in ledger.observations(1) if o.kind == "probe" and o.host is None]
    ledger.close()
    assert code == EXIT_OK
    assert runner.probed[:3] == [("n1", "n2", "n3")] * 3  # two quick rounds, then the full one
    assert (decisions[0].hosts, decisions[0].quarantine_reason) == (("n3",), "probed")
    assert any("probed again with the full timeout" in n for n in notes), notes


def test_a_lone_host_that_misses_the_quick_probes_gets_the_full_timeout(tmp_path: Path) -> None:
    """One active host, no control: missing both quick probes proves nothing of the probe path (a slow site), so
    the full --probe-timeout round decides; it answers there, and the host is kept."""
    runner = FakeRunner([Script(b"step=4\n", 1), Script(b"step=9\n", 0)], probe_start_s=3.0)
    config = replace(CONFIG, allocation=("n1",), nhosts=1)
    sup = Supervisor(config, tmp_path / "run", clock=runner.clock, sleep=lambda s: None, scheduler=NO_SCHEDULER,
                     runner=runner)
    assert sup.run() == EXIT_OK
    assert runner.probed == [("n1",)] * 3  # two quick, then the full one, which it answered
    assert nodelists(runner) == ["--nodelist=n1", "--nodelist=n1"]


def test_the_same_failure_on_healthy_hosts_stops_with_3(tmp_path: Path) -> None:
    """rc 1 naming no host, every probe answered, and the retry in place fails the same way: the failure is the
    program's (issue 20): exit 3 after one retry, with the reason, never 93."""
    runner = FakeRunner([Script(b"step=4\ntable 'x' has no column 7\n", 1)] * 3)  # no line says why
    code, ledger = supervise(tmp_path, runner)
    decisions = ledger.decisions()
    ledger.close()
    assert code == EXIT_NO_RETRY
    assert [d.action for d in decisions] == ["retry", "stop"]
    assert "same failure on healthy hosts (attempts 1 and 2)" in decisions[-1].reason
    assert len(runner.launched) == 2 and len(runner.probed) == 4  # two quick probes after each failure
    assert set(nodelists(runner)) == {"--nodelist=n1,n2,n3"}


def test_a_failure_that_changes_is_retried_then_stops_with_3(tmp_path: Path) -> None:
    """Defect 1 stays fixed, and the exit-code contract holds: a failure naming no host that changes between
    attempts, every probe answered: two retries in place, then exit 3 (no node evidence, so not 93)."""
    runner = FakeRunner([Script(f"step=4\nphase {word}\n".encode(), 1) for word in ("alpha", "bravo", "charlie")])
    code, ledger = supervise(tmp_path, runner)
    decisions = ledger.decisions()
    ledger.close()
    assert code == EXIT_NO_RETRY
    assert [d.action for d in decisions] == ["retry", "retry", "stop"]
    assert "every host answered its probe" in decisions[-1].reason
    assert len(runner.launched) == 3


def test_probes_that_reach_no_host_are_node_evidence_enough_for_93(tmp_path: Path) -> None:
    """The same failure, but no probe reaches any host (quick and full rounds): the hosts are in doubt, so the
    same-failure rule does not apply; the budget spent, the job asks for another allocation (93)."""
    runner = FakeRunner([Script(b"step=4\n", 1)] * 3, dead=frozenset({"n1", "n2", "n3"}))
    code, ledger = supervise(tmp_path, runner)
    decisions = ledger.decisions()
    ledger.close()
    assert code == EXIT_RETRY_ELSEWHERE
    assert [d.action for d in decisions] == ["retry", "retry", "stop"]
    assert "could not reach" in decisions[-1].reason


def test_a_stop_request_cancels_the_attempt(tmp_path: Path) -> None:
    """request_stop() during an attempt: it is stopped (interrupted), recorded cancelled, exit 130, no probe."""
    runner = FakeRunner([Script(b"step=1\n", 0, polls=None)])
    sup = Supervisor(CONFIG, tmp_path / "run", clock=runner.clock, sleep=lambda s: None,
                     scheduler=NO_SCHEDULER, runner=runner,
                     on_attempt=lambda number, pool, log: sup.request_stop())
    assert sup.run() == EXIT_INTERRUPTED
    ledger = Ledger.open(tmp_path / "run")
    (attempt,) = ledger.attempts()
    assert (attempt.stopped_by, attempt.failure_class) == ("interrupted", "cancelled")
    assert ledger.run_state() == ("cancelled", EXIT_INTERRUPTED)
    ledger.close()
    assert runner.probed == []


def test_the_default_scheduler_query_goes_through_the_runner_and_its_failure_is_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Inside a SLURM job the supervisor asks scontrol through its runner during a stall; scontrol failing
    (real text, no slurm.conf found) is recorded every time and said once on stderr; the job still succeeds."""
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    failing = Completed((), 1, "", "scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
                        "scontrol: fatal: Could not establish a configuration source\n", False)
    runner = FakeRunner([Script(b"step=1\n", 0, polls=22)], answer=failing)
    code, ledger = supervise(tmp_path, runner, scheduler=None)
    errors = [o for o in ledger.observations() if o.kind == "scheduler-error"]
    ledger.close()
    assert code == EXIT_OK
    assert runner.asked and all(argv[:3] == ("scontrol", "show", "node") for argv in runner.asked)
    assert len(errors) == len(runner.asked) >= 2
    assert capsys.readouterr().err == (
        "hotspare: warning: cannot ask the scheduler (scontrol show node n1,n2,n3: scontrol: error: "
        "resolve_ctls_from_dns_srv: res_nsearch error: Unknown host); the scheduler watch is off until it answers\n")


#: srun's own words when it cannot launch on a node (SLURM 22.05): n2 is named, but only as a suspect.
LAUNCH_FAILED = (b"step=4 loss=1.0\nsrun: error: Task launch for StepId=7.0 failed on node n2: "
                 b"Communication connection failure\nsrun: error: Application launch failed: Communication "
                 b"connection failure\n")


def test_a_suspect_that_fails_its_probe_is_swapped_with_both_signals_recorded(tmp_path: Path) -> None:
    """The log names n2 only as a suspect: n2 (and one control host) are probed at once, n2 does not answer:
    n2 out (probed); the lead stays in the evidence and the probe answer in the observations."""
    runner = FakeRunner([Script(LAUNCH_FAILED, 1), Script(b"step=9\n", 0)], dead=frozenset({"n2"}))
    code, ledger = supervise(tmp_path, runner)
    decisions, evidence = ledger.decisions(), ledger.evidence(1)
    probes = [o for o in ledger.observations(1) if o.kind == "probe"]
    ledger.close()
    assert code == EXIT_OK
    # the suspect and a control, twice (1 s apart, overlapping), not the whole allocation; then the spare
    assert runner.probed == [("n2", "n1"), ("n2", "n1"), ("n4", "n1")]
    assert (decisions[0].action, decisions[0].hosts, decisions[0].quarantine_reason) == ("swap", ("n2",), "probed")
    assert any(e.host == "n2" for e in evidence)
    assert sorted((o.host, o.detail.split(":")[0]) for o in probes) == [
        ("n1", "named as a suspect by the log (control), first probe"),
        ("n1", "named as a suspect by the log (control), second probe"),
        ("n2", "named as a suspect by the log, first probe"), ("n2", "named as a suspect by the log, second probe")]


def test_a_slow_suspect_that_answers_the_second_probe_is_untouched(tmp_path: Path) -> None:
    """The suspect misses the first quick probe (a loaded node) and answers the second: one miss is not a failed
    probe, so nobody is swapped; both answers are recorded."""
    runner = FakeRunner([Script(LAUNCH_FAILED, 1), Script(b"step=9\n", 0)], flaky={"n2": 1})
    code, ledger = supervise(tmp_path, runner)
    decisions = ledger.decisions()
    probes = [o.detail for o in ledger.observations(1) if o.kind == "probe" and o.host == "n2"]
    entries = Quarantine.attach(ledger.connection).entries()
    ledger.close()
    assert code == EXIT_OK and entries == []
    assert decisions[0].action == "retry" and decisions[0].hosts == ()
    assert ["first probe: no answer" in probes[0], "second probe: answered" in probes[1]] == [True, True], probes


def test_suspects_that_answer_are_untouched_network_in_place_then_93(tmp_path: Path) -> None:
    """Every suspect answers: launch or control-plane trouble, not a node. No swap, no quarantine; retried in place
    within the network budget, then exit 93 with the reason."""
    runner = FakeRunner([Script(LAUNCH_FAILED, 1)] * 3)
    code, ledger = supervise(tmp_path, runner)
    attempts, decisions = ledger.attempts(), ledger.decisions()
    entries = Quarantine.attach(ledger.connection).entries()
    ledger.close()
    assert code == EXIT_RETRY_ELSEWHERE
    assert {a.failure_class for a in attempts} == {"network"}
    assert [d.action for d in decisions] == ["retry", "retry", "stop"] and entries == []
    assert all(d.hosts == () for d in decisions) and "persisted" in decisions[-1].reason
    assert set(nodelists(runner)) == {"--nodelist=n1,n2,n3"}


def test_two_suspects_dead_together_are_both_swapped(tmp_path: Path) -> None:
    """Two nodes lost at once (a rack): both fail their probes and both go; the probe decides, not the count."""
    output = (b"step=4\nsrun: error: Task launch for StepId=7.0 failed on node n1: Socket timed out on send/recv "
              b"operation\nsrun: error: Task launch for StepId=7.0 failed on node n3: Socket timed out on send/recv "
              b"operation\n")
    runner = FakeRunner([Script(output, 1), Script(b"step=9\n", 0)], dead=frozenset({"n1", "n3"}))
    decisions = _supervise_on(tmp_path, runner, ("n1", "n2", "n3", "n4", "n5"), 3).decisions
    assert runner.probed == [("n1", "n3", "n2"), ("n1", "n3", "n2"), ("n4", "n5", "n2")]
    assert (decisions[0].hosts, decisions[0].quarantine_reason) == (("n1", "n3"), "probed")


def test_a_control_that_fails_beside_the_suspect_blames_nobody(tmp_path: Path) -> None:
    """The suspect and the host nothing accused both fail the probe: the probe path is in doubt (a saturated
    controller fails every launch), so no host is retired on it."""
    runner = FakeRunner([Script(LAUNCH_FAILED, 1), Script(b"step=9\n", 0)], dead=frozenset({"n2", "n1"}))
    code, ledger = supervise(tmp_path, runner)
    decisions = ledger.decisions()
    entries = Quarantine.attach(ledger.connection).entries()
    ledger.close()
    assert code == EXIT_OK and entries == []
    assert decisions[0].action == "retry" and decisions[0].hosts == ()


def test_every_active_host_a_suspect_and_dead_a_spare_is_the_control(tmp_path: Path) -> None:
    """A rack lost together: both active hosts are named and both fail; the spare, probed as the control, answers,
    so the probe path works and both are swapped (the probe decides, not the count)."""
    output = (b"step=4\nsrun: error: Task launch for StepId=7.0 failed on node n1: Communication connection "
              b"failure\nsrun: error: Task launch for StepId=7.0 failed on node n2: Communication connection failure\n")
    runner = FakeRunner([Script(output, 1), Script(b"step=9\n", 0)], dead=frozenset({"n1", "n2"}))
    decisions = _supervise_on(tmp_path, runner, ("n1", "n2", "n3", "n4"), 2).decisions
    assert runner.probed == [("n1", "n2", "n3"), ("n1", "n2", "n3"), ("n3", "n4")]  # the spare is the control
    assert (decisions[0].hosts, decisions[0].quarantine_reason) == (("n1", "n2"), "probed")
    assert nodelists(runner)[1] == "--nodelist=n3,n4"



#: Output stops after step 4; the launcher would only exit after 14 more seconds (a hung collective).
HUNG = Script(b"step=4 loss=1.0\n", 0, polls=15)

# (what, hosts whose probes fail [count, None: always], hosts the scheduler calls down, evicted, reason)
STALL_SIGNALS = [
    ("the scheduler's word alone", {}, {"n2"}, (), None),
    ("one failed probe, then answers", {"n2": 1}, set(), (), None),
    ("two failed probes", {"n2": None}, set(), ("n2",), "probed"),
    ("a failed probe and the scheduler", {"n2": 1}, {"n2"}, ("n2",), "scheduler"),
    ("every host fails the probe (the probe path is down)", {"n1": None, "n2": None, "n3": None}, set(), (), None),
]


@pytest.mark.parametrize("case", STALL_SIGNALS, ids=[c[0] for c in STALL_SIGNALS])
def test_a_stall_evicts_only_on_two_independent_signals(tmp_path: Path, case: tuple) -> None:  # type: ignore[type-arg]
    """Output stalls: the active hosts are probed and the scheduler asked at once, without waiting for the scheduler
    to notice. One signal never evicts; two do (two failed probes, or a failed probe and the scheduler's report),
    each recorded as an observation."""
    _, silent, sick, evicted, reason = case
    runner = FakeRunner([HUNG, Script(b"step=9\n", 0)], dead=frozenset(h for h, n in silent.items() if n is None),
                        flaky={h: n for h, n in silent.items() if n is not None})
    config = replace(CONFIG, stall_s=2.0)
    sup = Supervisor(config, tmp_path / "run", clock=runner.clock, sleep=lambda s: None, scheduler=fake_slurm(sick),
                     runner=runner)
    code = sup.run()
    ledger = Ledger.open(tmp_path / "run")
    attempts, entries, seen = ledger.attempts(), Quarantine.attach(ledger.connection).entries(), ledger.observations(1)
    ledger.close()
    assert code == EXIT_OK
    assert [(e.host.name, e.reason) for e in entries] == [(h, reason) for h in evicted]
    assert (attempts[0].stopped_by == "scheduler") == bool(evicted)
    assert runner.probed and all(p == ("n1", "n2", "n3") for p in runner.probed[:2])  # every active host, at once
    if evicted:
        assert any(o.kind == "probe" and o.host == "n2" and "output stalled" in o.detail for o in seen)
        assert "n2" not in attempts[1].hosts
    else:
        assert len(attempts) == 1


def test_the_stall_threshold_is_learned_from_the_step_cadence() -> None:
    """5x the median gap between progress lines, at least 2 s; 10 s until three gaps are known; a fixed --stall
    wins; a new progress line clears the signals gathered during a stall."""
    watch = Watch(Scanner(load_patterns()), 0.0)
    assert watch.stall_s(None) == 10.0 and watch.stall_s(7.0) == 7.0
    for i in range(1, 6):
        watch.seen(f"step={i}\n".encode(), now_s=0.1 * i, wall_s=100.0 + 0.1 * i)
    assert watch.stall_s(None) == 2.0  # 5 x 0.1 s is below the floor
    for i in range(6, 40):
        watch.seen(f"step={i}\n".encode(), now_s=0.5 + 3.0 * (i - 5), wall_s=200.0 + 3.0 * i)
    assert watch.stall_s(None) == pytest.approx(15.0)
    watch.stall_signals[Host("n2")] = ["probe"]
    watch.seen(b"step=40\n", now_s=500.0, wall_s=600.0)
    assert watch.stall_signals == {}


def test_a_dead_spare_is_retired_before_it_is_launched_on(tmp_path: Path) -> None:
    """n2 dies and the spare n4 died with it (one PSU): n4 fails its check before use twice, is quarantined
    (probed) and replaced by n5 without a wasted launch; one launch after the swap, on n1, n5, n3."""
    runner = FakeRunner([Script(b"step=4\nsrun: error: n2: task 1: Killed\n", 1), Script(b"step=9\n", 0)],
                        dead=frozenset({"n4"}))
    _, decisions, entries, _ = _supervise_on(tmp_path, runner, ("n1", "n2", "n3", "n4", "n5"), 3)
    assert [(d.action, d.hosts, d.quarantine_reason) for d in decisions[:2]] == [
        ("swap", ("n2",), "scraped"), ("swap", ("n4",), "probed")]
    assert sorted((e.host.name, e.reason) for e in entries) == [("n2", "scraped"), ("n4", "probed")]
    assert runner.probed == [("n4", "n1"), ("n4",), ("n5", "n1")]
    assert nodelists(runner) == ["--nodelist=n1,n2,n3", "--nodelist=n1,n5,n3"]


def test_a_big_job_probes_only_the_hosts_the_scheduler_doubts() -> None:
    """Above 64 active hosts a stall look does not probe everyone twice (minutes through the launcher): it probes
    the hosts the scheduler calls unhealthy, and still needs two signals."""
    hosts = tuple(Host(f"x{i:03d}") for i in range(100))
    runner = FakeRunner([], dead=frozenset({"x007"}))
    notes: list[tuple[str, str | None]] = []
    observer = Observer(runner, fake_slurm({"x007", "x042"}), ProbeHow("srun", Path("/nonexistent"), 5.0),
                        lambda n, kind, host, detail: notes.append((kind, host)), sleep=lambda s: None)
    signals: dict[Host, list[str]] = {}
    dead = observer.stalled(1, Pool(hosts, ()), signals)
    assert dead == (Host("x007"),)  # x042: the scheduler's word, then a probe it answered
    assert runner.probed == [("x007", "x042"), ("x007", "x042")]
    assert signals[Host("x042")] == ["scheduler"]
