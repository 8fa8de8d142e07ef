"""The decide-then-act loop: launch, watch, classify, decide, record, act.

:class:`Supervisor` is the library face the Parsl and Dask adapters drive;
``hotspare launch`` is a thin CLI over it. Each attempt's output is teed to
``attempt-N.log`` in the run directory and scanned as it arrives; the verdict,
the decision and its reason go into the ledger before anything is acted on.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hotspare.checkpoint import Checkpoint, find_latest, parse_step
from hotspare.claims import SpareClaims
from hotspare.classify import Blame, Verdict, classify
from hotspare.errors import EXIT_INTERRUPTED, InputError
from hotspare.evidence import ScanResult
from hotspare.failures import FailureClass
from hotspare.hosts import Host
from hotspare.launchers import LaunchSpec, build_argv, render_hostfile, write_hostfile
from hotspare.ledger import Ledger
from hotspare.patterns import PatternSet, load_patterns
from hotspare.policy import Action, Budgets, Decision, History, decide
from hotspare.pool import Pool
from hotspare.probe import ProbeResult, probe_hosts
from hotspare.quarantine import SNAPSHOT_NAME, Quarantine
from hotspare.runner import Launch, Outcome, kill_group
from hotspare.scan import Scanner, scan
from hotspare.scheduler import SchedulerQuery, unhealthy


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything that defines a run; stored in the ledger so ``--resume`` needs only the directory."""

    command: tuple[str, ...]
    allocation: tuple[str, ...]
    nhosts: int
    launcher: str = "local"
    #: Extra launcher options, placed before the command (e.g. ``-launcher fork``, ``--cpu-bind``).
    launcher_args: tuple[str, ...] = ()
    #: The launcher's executable when it is not the launcher's name (``mpiexec.mpich``, a PALS path).
    launcher_cmd: str | None = None
    ppn: int = 1
    checkpoint_dir: str | None = None
    idle_timeout_s: float = 600.0
    grace_s: float = 10.0
    probe_timeout_s: float = 30.0
    #: How often the scheduler is asked about the active nodes while output has stalled (the first time at
    #: once). Each ask is one ``scontrol show node``/``pbsnodes`` call for the active nodes.
    scheduler_poll_s: float = 5.0
    #: Silence after which the scheduler is asked about the active nodes; a node it calls unhealthy is then
    #: probed. Low is cheap: nothing is ended on the scheduler's word or on silence alone.
    stall_s: float = 3.0
    quarantine_ttl_s: float | None = None
    #: A directory shared with other runs holding the same spares (see :mod:`hotspare.claims`).
    spare_claims: str | None = None
    #: A quarantine snapshot another process owns (a workflow's ``quarantine.json``): its hosts are kept out
    #: too; it is only ever read. What this run finds goes to its own ``quarantine.json``.
    shared_quarantine: str | None = None
    budgets: Budgets = field(default_factory=Budgets)

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("no command to launch")
        if self.idle_timeout_s <= 0 or self.grace_s < 0 or self.probe_timeout_s <= 0:
            raise ValueError("idle_timeout_s and probe_timeout_s must be > 0, grace_s >= 0")
        if self.stall_s <= 0 or self.scheduler_poll_s <= 0:
            raise ValueError("stall_s and scheduler_poll_s must be > 0")
        if self.launcher_cmd is not None and (not self.launcher_cmd or self.launcher_cmd != self.launcher_cmd.strip()):
            raise ValueError(f"launcher_cmd {self.launcher_cmd!r} is empty or padded: give a command name or path")

    def to_json(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "budgets"}
        data["budgets"] = {k: getattr(self.budgets, k) for k in self.budgets.__dataclass_fields__}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        values = dict(data)
        values["command"] = tuple(values["command"])
        values["allocation"] = tuple(values["allocation"])
        values["launcher_args"] = tuple(values.get("launcher_args", ()))
        values["budgets"] = Budgets(**values.get("budgets", {}))
        return cls(**values)


@dataclass(slots=True)
class _Watch:
    """What the output callback learns while an attempt runs."""

    scanner: Scanner
    last_output_s: float
    first_progress_s: float | None = None
    last_asked_s: float = 0.0
    #: Lines seen when the supervisor itself ended the attempt: what follows is teardown it caused.
    stop_line: int | None = None
    #: Hosts the scheduler called unhealthy during a stall and that then failed a probe.
    scheduler_blamed: tuple[Host, ...] = ()


class Supervisor:
    """Runs one job to success or to a reasoned stop. Construct, then :meth:`run`."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: str | Path,
        *,
        patterns: PatternSet | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        on_attempt: Callable[[int, Pool, Path], None] | None = None,
        scheduler: SchedulerQuery | None = None,
    ) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.patterns = patterns
        self.clock = clock
        self.wall = wall
        self.sleep = sleep
        self.rng = rng or random.Random()  # noqa: S311 -- backoff jitter, not a secret
        self.on_attempt = on_attempt
        self.scheduler = scheduler if scheduler is not None else SchedulerQuery.detect()
        self._stop_requested = False
        self._scheduler_blamed: tuple[Host, ...] = ()

    def request_stop(self) -> None:
        """Ask the run to end: the launcher gets SIGTERM (SIGKILL after the grace); recorded as cancelled."""
        self._stop_requested = True

    # -- the loop ------------------------------------------------------------
    def run(self) -> int:
        """Run (or resume) to the end; returns the exit code of the contract in :mod:`hotspare.errors`."""
        ledger = Ledger.open(self.run_dir)
        try:
            return self._run(ledger)
        finally:
            ledger.close()

    def _run(self, ledger: Ledger) -> int:
        patterns = self.patterns or load_patterns()
        # This run owns its quarantine (its ledger) and publishes it beside the ledger for a workflow to fold in.
        quarantine = Quarantine.attach(ledger.connection, snapshot=self.run_dir / SNAPSHOT_NAME,
                                       shared=self.config.shared_quarantine)
        if ledger.run_config() is None:
            ledger.start_run(self.config.to_json(), self.wall())
        pool, history = self._restore(ledger, quarantine, patterns)
        while True:
            number = ledger.next_attempt()
            pool = self._readmit(ledger, quarantine, pool, number)
            outcome, result, pool_used = self._attempt(ledger, number, pool, patterns)
            pool_used = self._unclaimed(ledger, number, pool_used)
            decision, verdict = self._judge(ledger, number, outcome=outcome, result=result, pool=pool_used,
                                            history=history)
            pool, history = self._act(ledger, quarantine, number, decision=decision, verdict=verdict,
                                      pool=pool_used, history=history)
            if decision.action is Action.STOP:
                state = {0: "succeeded", EXIT_INTERRUPTED: "cancelled"}.get(decision.exit_code or 0, "failed")
                ledger.end_run(state, decision.exit_code or 0, self.wall())
                return decision.exit_code or 0
            self.sleep(decision.delay_s)

    def _restore(self, ledger: Ledger, quarantine: Quarantine, patterns: PatternSet) -> tuple[Pool, History]:
        self._settle_lost_attempt(ledger, patterns)
        saved = ledger.load_progress()
        allocation = [Host(h) for h in self.config.allocation]
        if saved is None:
            taken = self._taken(ledger, 1, allocation[self.config.nhosts:])
            pool = Pool.split(allocation, self.config.nhosts, exclude=quarantine.hosts() | taken)
            self._claim(ledger, 1, pool)
            return pool, History()
        pool = Pool(tuple(Host(h) for h in saved["active"]), tuple(Host(h) for h in saved["spare"]))
        return pool, _history_from_json(saved["history"])

    def _readmit(self, ledger: Ledger, quarantine: Quarantine, pool: Pool, number: int) -> Pool:
        """Allocation hosts whose quarantine expired come back as spares, but only after a passing probe."""
        expired = quarantine.due()
        if not expired:  # the common case: skip building the allocation's 10,000 Hosts
            return pool
        allocation = {Host(h) for h in self.config.allocation}
        due = [e.host for e in expired if e.host in allocation and e.host not in pool.hosts]
        if not due:
            return pool
        results = self._probe_hosts(due)
        back = []
        for res in results:
            ledger.observe(number, self.wall(), "readmit", res.host.name, res.detail)
            if quarantine.readmit(res.host, probe_passed=res.ok):
                back.append(res.host)
        return Pool(pool.active, (*pool.spare, *back))

    def _settle_lost_attempt(self, ledger: Ledger, patterns: PatternSet) -> None:
        """An attempt the previous supervisor never finished (it was SIGKILLed): end it and record that."""
        for row in ledger.attempts():
            if row.ended_s is not None:
                continue
            if row.pgid is not None and _ours(row.pgid, self.run_dir):
                kill_group(row.pgid, signal.SIGKILL)
            elif row.pgid is not None:
                ledger.observe(row.number, self.wall(), "resume", None,
                               f"process group {row.pgid} is gone or no longer ours: not signalled")
            ledger.end_attempt(
                row.number, ended_s=self.wall(), rc=None, stopped_by="supervisor lost", failure_class="unknown",
                verdict="the supervisor was killed during this attempt"
                + ("" if Path(row.log_path).is_file() else f"; its log {row.log_path} is missing"),
                last_step=None, checkpoint_step=None,
                checkpoint_s=None, evidence=_scan_log(Path(row.log_path), patterns).evidence,
            )
            ledger.add_decision(row.number, self.wall(), Action.RETRY.value, hosts=[],
                                reason="the supervisor was killed during this attempt; resumed", delay_s=0.0)

    # -- one attempt -------------------------------------------------------
    def _attempt(
        self, ledger: Ledger, number: int, pool: Pool, patterns: PatternSet
    ) -> tuple[Outcome, ScanResult, Pool]:
        ckpt = self._checkpoint()
        hostfile = self.run_dir / f"attempt-{number}.hosts"
        # The local launcher reports each simulated host's process group, so demos and tests can crash one.
        extra = self.config.launcher_args
        if self.config.launcher == "local":
            extra = (*extra, "--pids", str(self.run_dir / f"attempt-{number}.pids"))
        spec = LaunchSpec(launcher=self.config.launcher, hosts=pool.active, ppn=self.config.ppn,
                          command=_with_resume(self.config.command, ckpt), hostfile=hostfile, extra_args=extra,
                          program=self.config.launcher_cmd)
        write_hostfile(hostfile, render_hostfile(pool.active, self.config.launcher, self.config.ppn))
        log_path = self.run_dir / f"attempt-{number}.log"
        ledger.begin_attempt(number, started_s=self.wall(), hosts=[h.raw for h in pool.active],
                             spares=[h.raw for h in pool.spare], log_path=str(log_path),
                             resumed_step=ckpt.step if ckpt else None, resumed_path=str(ckpt.path) if ckpt else None)
        watch = _Watch(Scanner(patterns), self.clock())
        launch = Launch(build_argv(spec), log_path, lambda chunk: self._seen(watch, chunk),
                        env=self._env(number, ckpt), clock=self.clock)
        if self.on_attempt is not None:
            self.on_attempt(number, pool, log_path)
        launch.start()
        ledger.set_pgid(number, launch.pid)
        self._watch(launch, watch, ledger, number, pool)
        outcome = launch.finish()
        self._scheduler_blamed = watch.scheduler_blamed
        return outcome, _before(watch.scanner.close(), watch.stop_line), pool

    def _seen(self, watch: _Watch, chunk: bytes) -> None:
        watch.scanner.feed(chunk)
        watch.last_output_s = self.clock()
        if watch.first_progress_s is None and watch.scanner.progress is not None:
            watch.first_progress_s = self.wall()

    def _watch(self, launch: Launch, watch: _Watch, ledger: Ledger, number: int, pool: Pool) -> None:
        """Poll until the launcher exits, ending it on request, when it goes silent, or when a stalled
        node is reported unhealthy by the scheduler and fails a probe."""
        recorded_progress = False
        while launch.poll(0.2) is None:
            if watch.first_progress_s is not None and not recorded_progress:
                ledger.set_first_progress(number, watch.first_progress_s)
                recorded_progress = True
            silent_s = self.clock() - watch.last_output_s
            why = None
            if self._stop_requested:
                why = "interrupted"
            elif silent_s > self.config.idle_timeout_s:
                why = "idle"
            elif silent_s > self.config.stall_s and self._scheduler_says_dead(watch, ledger, number, pool):
                why = "scheduler"
            if why is not None:
                watch.stop_line = watch.scanner.lines
                launch.stop(why, self.config.grace_s)
        if watch.first_progress_s is not None and not recorded_progress:
            ledger.set_first_progress(number, watch.first_progress_s)

    def _scheduler_says_dead(self, watch: _Watch, ledger: Ledger, number: int, pool: Pool) -> bool:
        """Ask the scheduler (at most every scheduler_poll_s) about stalled nodes; confirm with a probe.

        Never acts on the scheduler's word alone: an unhealthy report only counts for a node
        that then fails a probe (SLURM marks a node NOT_RESPONDING ~8 s before srun gives up).
        """
        if self.clock() - watch.last_asked_s < self.config.scheduler_poll_s:
            return False
        watch.last_asked_s = self.clock()
        sick = [h for h, state in self.scheduler.node_states(pool.active).items() if unhealthy(state)]
        for host in sick:
            ledger.observe(number, self.wall(), "scheduler", host.name, "reported unhealthy while output stalled")
        if not sick:
            return False
        watch.scheduler_blamed = self._dead(ledger, number, pool, [h for h in pool.active if h in sick],
                                            "scheduler report")
        return bool(watch.scheduler_blamed)

    def _claims(self) -> SpareClaims | None:
        return SpareClaims(self.config.spare_claims, str(self.run_dir)) if self.config.spare_claims else None

    def _taken(self, ledger: Ledger, number: int, spares: Sequence[Host]) -> set[Host]:
        """The ``spares`` another run sharing them has claimed (each noted in the ledger)."""
        claims = self._claims()
        taken = claims.taken(spares) if claims else set()
        for host in sorted(taken):
            ledger.observe(number, self.wall(), "claims", host.name, "spare claimed by another run")
        return taken

    def _unclaimed(self, ledger: Ledger, number: int, pool: Pool) -> Pool:
        """The pool without the spares another run sharing them has claimed meanwhile."""
        taken = self._taken(ledger, number, pool.spare)
        return Pool(pool.active, tuple(h for h in pool.spare if h not in taken)) if taken else pool

    def _claim(self, ledger: Ledger, number: int, pool: Pool) -> None:
        """Claim every active host that came from the shared spares."""
        claims = self._claims()
        if claims is None:
            return
        own = set(Host(h) for h in self.config.allocation[: self.config.nhosts])
        for host in pool.active:
            if host not in own and not claims.claim(host):
                ledger.observe(number, self.wall(), "claims", host.name,
                               "spare claimed by another run at the same moment; used anyway")

    def _checkpoint(self) -> Checkpoint | None:
        return find_latest(self.config.checkpoint_dir) if self.config.checkpoint_dir else None

    def _probe_hosts(self, hosts: Sequence[Host]) -> list[ProbeResult]:
        return probe_hosts(hosts, self.config.launcher, self.run_dir / "probes", timeout_s=self.config.probe_timeout_s,
                           program=self.config.launcher_cmd, extra_args=self.config.launcher_args,
                           env=self._base_env())

    def _base_env(self) -> dict[str, str]:
        """The environment every launch and probe starts with.

        ``SLURM_OVERLAP=1`` (srun's ``--overlap``) reaches the srun steps that
        mpiexec (Hydra) and mpirun (Open MPI) start inside a SLURM allocation:
        without it a probe waits behind the CPUs the job's own step holds and
        times out, which would blame a healthy node (seen on the test bed).
        A value the user set is kept.
        """
        env = dict(os.environ)
        env.setdefault("SLURM_OVERLAP", "1")
        return env

    def _env(self, number: int, ckpt: Checkpoint | None) -> dict[str, str]:
        env = dict(self._base_env(), HOTSPARE_ATTEMPT=str(number), HOTSPARE_RUN_DIR=str(self.run_dir))
        env.pop("HOTSPARE_RESUME_DIR", None)
        env.pop("HOTSPARE_RESUME_STEP", None)
        if ckpt is not None:
            env.update(HOTSPARE_RESUME_DIR=str(ckpt.path), HOTSPARE_RESUME_STEP=str(ckpt.step))
        return env

    # -- judging and acting --------------------------------------------------
    def _judge(self, ledger: Ledger, number: int, *, outcome: Outcome, result: ScanResult, pool: Pool,
               history: History) -> tuple[Decision, Verdict]:
        verdict = classify(result, rc=outcome.rc, allocation=pool.active)
        probed = False
        if outcome.stopped_by == "interrupted":
            verdict = replace(verdict, failure_class=FailureClass.CANCELLED, retryable=False, blamed=(),
                              exclude_hosts=(), reason="cancelled: the supervisor was asked to stop")
        elif outcome.stopped_by == "idle":
            verdict = self._probe(ledger, number, pool, verdict, why="idle")
            probed = True
        elif outcome.stopped_by == "scheduler":
            verdict = _blame(verdict, self._scheduler_blamed, "scheduler",
                             "reported unhealthy by the scheduler while stalled, and failed a probe")
        decision = self._decide(verdict, pool, replace(history, probed=probed),
                                self._walltime(ledger, number, verdict))
        if decision.action is Action.PROBE:
            verdict = self._probe(ledger, number, pool, verdict, why="failure with no host named")
            decision = self._decide(verdict, pool, replace(history, probed=True), (None, None))
        ckpt = self._checkpoint()
        ledger.end_attempt(
            number, ended_s=self.wall(), rc=outcome.rc, stopped_by=outcome.stopped_by,
            failure_class=verdict.failure_class.value, verdict=verdict.reason,
            last_step=result.progress.last_step if result.progress else None,
            checkpoint_step=ckpt.step if ckpt else None,
            checkpoint_s=ckpt.path.stat().st_mtime if ckpt else None, evidence=result.evidence,
        )
        return decision, verdict

    def _decide(self, verdict: Verdict, pool: Pool, history: History,
                walltime: tuple[float | None, float | None]) -> Decision:
        return decide(verdict, pool, history, self.config.budgets, unit=self.rng.uniform(-1.0, 1.0),
                      walltime_left_s=walltime[0], checkpoint_eta_s=walltime[1])

    def _walltime(self, ledger: Ledger, number: int, verdict: Verdict) -> tuple[float | None, float | None]:
        """For a walltime verdict: the scheduler's remaining time and the checkpoint interval."""
        if verdict.failure_class is not FailureClass.WALLTIME:
            return None, None
        left = self.scheduler.walltime_left_s()
        every = _checkpoint_interval_s(self.config.checkpoint_dir)
        ledger.observe(number, self.wall(), "walltime", None, f"left {left} s, checkpoint every {every} s")
        return left, every

    def _probe(self, ledger: Ledger, number: int, pool: Pool, verdict: Verdict, *, why: str) -> Verdict:
        """Ask every active host; the ones that do not answer are blamed (reason ``probed``).

        When several hosts are asked and none answers, the probe itself is suspect (a launcher option it
        lacks, a broken launcher, the controller gone), not every node at once: nobody is blamed, and the
        ledger says so. Retiring a whole allocation of healthy nodes on such evidence is the worst outcome.
        """
        dead = self._dead(ledger, number, pool, pool.active, why)
        return _blame(verdict, dead, "probed", f"did not answer a probe ({why})") if dead else verdict

    def _dead(self, ledger: Ledger, number: int, pool: Pool, hosts: Sequence[Host], why: str) -> tuple[Host, ...]:
        """Probe ``hosts``; the ones that did not answer, unless no active host at all did (see :meth:`_probe`)."""
        results = self._probe_hosts(hosts)
        for res in results:
            ledger.observe(number, self.wall(), "probe", res.host.name, f"{why}: {res.detail}")
        dead = tuple(r.host for r in results if not r.ok)
        if len(pool.active) > 1 and set(dead) >= set(pool.active):
            ledger.observe(number, self.wall(), "probe", None,
                           "no active host answered: the probe or launcher is suspect, so no host is blamed on it")
            return ()
        return dead

    def _act(self, ledger: Ledger, quarantine: Quarantine, number: int, *, decision: Decision, verdict: Verdict,
             pool: Pool, history: History) -> tuple[Pool, History]:
        ledger.add_decision(number, self.wall(), decision.action.value, hosts=[h.name for h in decision.swap_out],
                            reason=decision.reason, delay_s=decision.delay_s,
                            quarantine_reason=decision.quarantine_reason if decision.swap_out else None)
        for host in decision.swap_out:
            quarantine.add(host, decision.quarantine_reason or "scraped", attempt=number,
                           ttl_s=self.config.quarantine_ttl_s, detail=verdict.reason)
        new_pool = pool.swap(decision.swap_out) if decision.action is Action.SWAP else pool
        self._claim(ledger, number, new_pool)
        new_history = history.after(verdict, decision, pool)
        ledger.save_progress({"active": [h.raw for h in new_pool.active], "spare": [h.raw for h in new_pool.spare],
                              "history": _history_to_json(new_history)})
        return new_pool, new_history


def _blame(verdict: Verdict, hosts: tuple[Host, ...], reason: str, why: str) -> Verdict:
    """The verdict with ``hosts`` blamed for a node loss found outside the log (probe, scheduler)."""
    names = ", ".join(h.name for h in hosts)
    return replace(
        verdict, failure_class=FailureClass.NODE_LOSS, retryable=True, exclude_hosts=hosts,
        blamed=tuple(Blame(h, reason, ()) for h in hosts), reason=f"node_loss: {names} {why}",
    )


def _before(result: ScanResult, stop_line: int | None) -> ScanResult:
    """The evidence from before the supervisor stopped the attempt: the SIGTERM/SIGKILL teardown it
    caused (SLURM reports every surviving task 'Killed') must not read as node faults."""
    if stop_line is None:
        return result
    return replace(result, evidence=tuple(e for e in result.evidence if e.line <= stop_line))


def _checkpoint_interval_s(directory: str | None) -> float | None:
    """Seconds between the two newest checkpoint directories (how long the next one will take)."""
    if directory is None or not Path(directory).is_dir():
        return None
    dirs = [p for p in Path(directory).iterdir() if p.is_dir() and parse_step(p.name) is not None]
    times = sorted(p.stat().st_mtime for p in dirs)
    return times[-1] - times[-2] if len(times) >= 2 else None


def _with_resume(command: Sequence[str], ckpt: Checkpoint | None) -> tuple[str, ...]:
    """Fill an optional ``{resume}`` placeholder with the checkpoint path (empty on a first attempt)."""
    path = str(ckpt.path) if ckpt else ""
    return tuple(arg.replace("{resume}", path) for arg in command)


def _history_to_json(history: History) -> dict[str, Any]:
    return {
        "attempts": history.attempts, "unattributed": history.unattributed, "probed": history.probed,
        "in_place": {k.value: v for k, v in history.in_place.items()},
        "strikes": {h.raw: n for h, n in history.strikes.items()},
    }


def _history_from_json(data: Mapping[str, Any]) -> History:
    return History(
        attempts=int(data["attempts"]), unattributed=int(data["unattributed"]), probed=bool(data["probed"]),
        in_place={FailureClass(k): int(v) for k, v in data["in_place"].items()},
        strikes={Host(h): int(n) for h, n in data["strikes"].items()},
    )


def _ours(pgid: int, run_dir: Path) -> bool:
    """Whether ``pgid`` still leads a process this run started: the PID may have been reused since the
    supervisor died, and only our own launcher may be signalled."""
    try:
        environ = Path(f"/proc/{pgid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"HOTSPARE_RUN_DIR={run_dir}".encode() in environ


def _scan_log(path: Path, patterns: PatternSet) -> ScanResult:
    """The evidence in a log left by a lost attempt (none if the log is gone)."""
    try:
        return scan(path, patterns)
    except InputError:
        return ScanResult(evidence=(), lines=0, bytes_read=0)
