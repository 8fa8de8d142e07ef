"""The decide-then-act loop: launch and watch, observe, judge, act.

:class:`Supervisor` is the library face the Parsl and Dask adapters drive;
``hotspare launch`` is a thin CLI over it. Each attempt's output is teed to
``attempt-N.log`` in the run directory and scanned as it arrives. Then, per attempt:

* observe (:mod:`hotspare.act.observe`): what the launcher, the log, probes and the scheduler say;
* judge (:mod:`hotspare.decide.judge`): a pure function of those observations, which may ask for one more
  (probe the hosts, ask the walltime) before its verdict and decision stand;
* act (:mod:`hotspare.act.actor`): record the verdict, the decision and its reason, then carry it out.

Every process (the attempt, probes, scheduler queries) starts through the :class:`~hotspare.act.gateway.Runner`
the supervisor is given, so the whole loop runs in tests with a fake one.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hotspare.act.actor import Actor, history_from_json
from hotspare.act.checkpoint import Checkpoint, find_latest, written_since
from hotspare.act.claims import SpareClaims
from hotspare.act.gateway import ProbeHow, ProcessRunner, Runner, Running
from hotspare.act.launchers import (
    HYDRA_RSH_NAME,
    LauncherKind,
    LaunchSpec,
    build_argv,
    hydra_rsh_args,
    launcher_kind,
    render_hostfile,
    write_hostfile,
    write_hydra_rsh,
)
from hotspare.act.observe import CHECKPOINT_POLL_S, Observer, Watch, stall_why
from hotspare.act.runner import StopCause
from hotspare.act.scheduler import SchedulerQuery, check_scheduler_choice
from hotspare.decide.judge import SIGNAL_SCHEDULER, Ask, Judgement, Observations, judge, question
from hotspare.decide.life import DEFAULT_QUARANTINE_TTL_S
from hotspare.decide.policy import Action, Budgets, History
from hotspare.decide.pool import Pool
from hotspare.errors import EXIT_INTERRUPTED, InputError
from hotspare.evidence.patterns import PatternSet, load_patterns
from hotspare.evidence.records import ScanResult
from hotspare.evidence.scan import Scanner
from hotspare.evidence.signature import TAIL_BYTES, last_unclaimed
from hotspare.failures import QuarantineReason
from hotspare.hosts import Host
from hotspare.record.files import read_tail
from hotspare.record.ledger import CHECKPOINT, PROGRESS, Ledger
from hotspare.record.quarantine import SNAPSHOT_NAME, Quarantine

#: The grace (SIGTERM to SIGKILL) when an attempt is ended because a node gave two signals of death: on PBS,
#: Hydra waited out the whole default grace (10 s) on its proxy on a frozen node.
DEAD_NODE_GRACE_S = 2.0


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything that defines a run; stored in the ledger so ``--resume`` needs only the directory."""

    command: tuple[str, ...]
    allocation: tuple[str, ...]
    nhosts: int
    #: Stored as a :class:`~hotspare.act.launchers.LauncherKind`; its plain name is accepted.
    launcher: LauncherKind | str = LauncherKind.LOCAL
    #: Extra launcher options, placed before the command (e.g. ``-launcher fork``, ``--cpu-bind``).
    launcher_args: tuple[str, ...] = ()
    #: The launcher's executable when it is not the launcher's name (``mpiexec.mpich``, a PALS path).
    launcher_cmd: str | None = None
    #: MPICH Hydra only: the remote shell its proxies start with (``pbs_tmrsh`` in a PBS job without PALS), an
    #: absolute path; the run writes a wrapper for it (:func:`~hotspare.act.launchers.render_hydra_rsh`).
    launcher_rsh: str | None = None
    ppn: int = 1
    checkpoint_dir: str | None = None
    idle_timeout_s: float = 600.0
    #: SIGTERM to SIGKILL when an attempt is ended (at most :data:`DEAD_NODE_GRACE_S` when a node is dead).
    grace_s: float = 10.0
    probe_timeout_s: float = 30.0
    #: How often the scheduler is asked about the active nodes while output has stalled (the first time at
    #: once). Each ask is one ``scontrol show node``/``pbsnodes`` call for the active nodes.
    scheduler_poll_s: float = 5.0
    #: Silence after which the active hosts are probed and the scheduler asked about them, both at once (None:
    #: learned per attempt, 5x the median gap between progress lines, at least 2 s; 10 s until a few progress
    #: lines came). Nothing is ended on silence, one probe or the scheduler's word alone: it takes two signals.
    stall_s: float | None = None
    #: How long a host this run quarantined stays out before a probe may readmit it (seconds; None: for the whole
    #: run). The workflow adapters' default, 4 hours (:data:`~hotspare.decide.life.DEFAULT_QUARANTINE_TTL_S`): a
    #: run resumed the next day in the same directory should not inherit a quarantine of nodes since repaired.
    quarantine_ttl_s: float | None = DEFAULT_QUARANTINE_TTL_S
    #: A directory shared with other runs holding the same spares (see :mod:`hotspare.act.claims`).
    spare_claims: str | None = None
    #: A quarantine snapshot another process owns (a workflow's ``quarantine.json``): its hosts are kept out
    #: too; it is only ever read. What this run finds goes to its own ``quarantine.json``.
    shared_quarantine: str | None = None
    budgets: Budgets = field(default_factory=Budgets)
    #: Which scheduler is asked about the nodes: ``auto`` (SLURM inside a SLURM job, else PBS inside a PBS job),
    #: ``slurm``, ``pbs`` or ``none`` (probes alone judge the hosts).
    scheduler: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "launcher", launcher_kind(self.launcher))
        check_scheduler_choice(self.scheduler)
        if not self.command:
            raise ValueError("no command to launch")
        if self.idle_timeout_s <= 0 or self.grace_s < 0 or self.probe_timeout_s <= 0:
            raise ValueError("idle_timeout_s and probe_timeout_s must be > 0, grace_s >= 0")
        if (self.stall_s is not None and self.stall_s <= 0) or self.scheduler_poll_s <= 0:
            raise ValueError("stall_s and scheduler_poll_s must be > 0")
        if self.launcher_cmd is not None and (not self.launcher_cmd or self.launcher_cmd != self.launcher_cmd.strip()):
            raise ValueError(f"launcher_cmd {self.launcher_cmd!r} is empty or padded: give a command name or path")
        if self.launcher_rsh is not None and self.launcher is not LauncherKind.MPIEXEC:
            raise ValueError(f"launcher_rsh is for MPICH Hydra (launcher mpiexec), not {self.launcher}")

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


class Supervisor:
    """Runs one job to success or to a reasoned stop. Construct, then :meth:`run`.

    ``runner`` starts every process of the run (default: :class:`~hotspare.act.gateway.ProcessRunner`, real
    processes); ``scheduler`` answers node-state and walltime questions (default: the scheduler this job
    runs under, asked through ``runner``). Its failures are recorded and said once on stderr.
    """

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
        runner: Runner | None = None,
    ) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.patterns = patterns
        self.clock = clock
        self.wall = wall
        self.sleep = sleep
        self.rng = rng or random.Random()  # noqa: S311 -- backoff jitter, not a secret
        self.on_attempt = on_attempt
        self.runner: Runner = runner if runner is not None else ProcessRunner(clock)
        self.scheduler = scheduler if scheduler is not None else replace(
            SchedulerQuery.detect(choice=config.scheduler), run=self.runner.capture)
        self._stop_requested = False

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
        if self.config.launcher_rsh is not None:
            write_hydra_rsh(self.run_dir / HYDRA_RSH_NAME, self.config.launcher_rsh)
        actor = self._actor(ledger, quarantine)
        observer = Observer(self.runner, self.scheduler, self._probe_how(), actor.note, sleep=self.sleep)
        pool, history = self._restore(actor, patterns)
        # Bounded: decide() stops once history.attempts (one more each pass) reaches max_attempts.
        for _ in range(self.config.budgets.max_attempts):
            number = ledger.next_attempt()
            pool = self._readmit(actor, observer, pool, number)
            obs = self._attempt(actor, observer, number, pool, patterns)
            pool_used = actor.unclaimed(number, pool)
            judgement, obs = self._judge(observer, number, obs, pool_used, history)
            pool, history = actor.carry_out(number, judgement, obs, pool_used, history)
            decision = judgement.decision
            if decision.action is Action.SWAP:
                pool = self._check_spares((actor, observer), number, pool, pool_used, history)
            if decision.action is Action.STOP:
                code = decision.exit_code or 0
                actor.end_run({0: "succeeded", EXIT_INTERRUPTED: "cancelled"}.get(code, "failed"), code)
                return code
            self.sleep(decision.delay_s)
        raise AssertionError("unreachable: decide() stops at the attempt limit")

    def _check_spares(self, steps: tuple[Actor, Observer], number: int, pool: Pool, before: Pool,
                      history: History) -> Pool:
        """The spares just swapped in are probed before the launch: one that is dead too (a rack, a PSU) is
        quarantined and replaced by the next, without a wasted launch. Bounded: each pass retires a spare. With
        too few spares left the launch goes ahead and its failure is judged as usual (then 93)."""
        actor, observer = steps
        for _ in range(len(pool.spare) + 1):
            incoming = [h for h in pool.active if h not in before.active]
            control = next((h for h in pool.active if h in before.active), None)
            dead = observer.spares_dead(number, incoming, control) if incoming else ()
            if not dead or len(dead) > len(pool.spare):
                return pool
            pool = actor.retire_spares(number, dead, pool, history)
        return pool

    def _actor(self, ledger: Ledger, quarantine: Quarantine) -> Actor:
        claims = SpareClaims(self.config.spare_claims, str(self.run_dir)) if self.config.spare_claims else None
        own = [Host(h) for h in self.config.allocation[: self.config.nhosts]]
        return Actor(ledger, quarantine, self.wall, claims=claims, own=own,
                     quarantine_ttl_s=self.config.quarantine_ttl_s)

    def _restore(self, actor: Actor, patterns: PatternSet) -> tuple[Pool, History]:
        actor.settle_lost(self.run_dir, patterns)
        saved = actor.ledger.load_progress()
        if saved is None:
            allocation = [Host(h) for h in self.config.allocation]
            taken = actor.taken(1, allocation[self.config.nhosts:])
            pool = Pool.split(allocation, self.config.nhosts, exclude=actor.quarantine.hosts() | taken)
            actor.claim(1, pool)
            return pool, History()
        pool = Pool(tuple(Host(h) for h in saved["active"]), tuple(Host(h) for h in saved["spare"]))
        return pool, history_from_json(saved["history"])

    def _readmit(self, actor: Actor, observer: Observer, pool: Pool, number: int) -> Pool:
        """Allocation hosts whose quarantine expired come back as spares, but only after a passing probe."""
        expired = actor.quarantine.due()
        if not expired:  # the common case: skip building the allocation's 10,000 Hosts
            return pool
        allocation = {Host(h) for h in self.config.allocation}
        due = [e.host for e in expired if e.host in allocation and e.host not in pool.hosts]
        return actor.readmit(number, observer.readmission(due), pool) if due else pool

    # -- one attempt: launch and watch ------------------------------------------
    def _attempt(self, actor: Actor, observer: Observer, number: int, pool: Pool,
                 patterns: PatternSet) -> Observations:
        ckpt = self._checkpoint()
        log_path = self.run_dir / f"attempt-{number}.log"
        argv = build_argv(self._spec(number, pool, ckpt))
        actor.begin_attempt(number, pool, log_path, ckpt)
        watch = Watch(Scanner(patterns), self.clock(), started_wall_s=self.wall())
        if self.on_attempt is not None:
            self.on_attempt(number, pool, log_path)
        running = self.runner.launch(argv, log_path, lambda chunk: watch.seen(chunk, self.clock(), self.wall()),
                                     env=self._env(number, ckpt))
        actor.started(number, running.pid)
        stall = ("learned from the step cadence" if self.config.stall_s is None else f"{self.config.stall_s:g} s")
        actor.note(number, "watch", None, f"scheduler asked: {self.scheduler.describe()}; stall threshold: {stall}")
        self._watch(running, watch, (actor, observer), number, pool)
        outcome = running.finish()
        ended = self.wall()
        return Observations(outcome.rc, outcome.stopped_by, _before(watch.scanner.close(), watch.stop_line),
                            scheduler_blamed=watch.scheduler_blamed, stall_why=watch.stall_why,
                            stall_reason=watch.stall_reason, checkpoint=_mark(self._checkpoint()), ended_s=ended,
                            last_line=None if outcome.rc == 0 else _last_line(log_path, patterns))

    def _spec(self, number: int, pool: Pool, ckpt: Checkpoint | None) -> LaunchSpec:
        hostfile = self.run_dir / f"attempt-{number}.hosts"
        # The local launcher reports each simulated host's process group, so demos and tests can crash one.
        extra = self._launcher_args()
        if self.config.launcher is LauncherKind.LOCAL:
            extra = (*extra, "--pids", str(self.run_dir / f"attempt-{number}.pids"))
        write_hostfile(hostfile, render_hostfile(pool.active, self.config.launcher, self.config.ppn))
        return LaunchSpec(launcher=self.config.launcher, hosts=pool.active, ppn=self.config.ppn,
                          command=_with_resume(self.config.command, ckpt), hostfile=hostfile, extra_args=extra,
                          program=self.config.launcher_cmd)

    def _watch(self, running: Running, watch: Watch, steps: tuple[Actor, Observer], number: int,
               pool: Pool) -> None:
        """Pass output on until the launcher exits, ending it on request, when it goes silent, or when a
        stalled node is reported unhealthy by the scheduler and fails a probe. Bounded: an attempt silent
        for idle_timeout_s is ended (SIGKILL after the grace)."""
        actor, observer = steps
        while running.poll(0.2) is None:
            self._record_progress(actor, number, watch)
            if watch.stop_line is not None:
                continue  # being stopped: no more looks (a probe now would only delay seeing the launcher exit)
            why = self._stop_cause(watch, observer, number, pool)
            if why is not None:
                watch.stop_line = watch.scanner.lines
                # A node with two signals of death holds up the launcher's exit (its proxy there never answers
                # SIGTERM): the healthy ranks get a short grace, and resume from the last complete checkpoint.
                dead_node = why is StopCause.SCHEDULER
                running.stop(why, min(self.config.grace_s, DEAD_NODE_GRACE_S) if dead_node else self.config.grace_s)
        self._record_progress(actor, number, watch, final=True)

    def _record_progress(self, actor: Actor, number: int, watch: Watch, *, final: bool = False) -> None:
        """Write what the attempt achieved so far: its first progress, progress samples, new checkpoints."""
        if watch.first_progress_s is not None:
            actor.progress(number, watch.first_progress_s)
        rows = [(at_s, PROGRESS, step) for at_s, step in watch.take_samples(final=final)]
        now = self.clock()
        if self.config.checkpoint_dir and (final or now - watch.checkpoint_polled_s >= CHECKPOINT_POLL_S):
            watch.checkpoint_polled_s = now
            # Only checkpoints this attempt wrote: the one it resumed from is an earlier attempt's.
            above = watch.checkpoint_seen[0] if watch.checkpoint_seen else None
            try:
                written = written_since(self.config.checkpoint_dir, above_step=above, since_s=watch.started_wall_s)
            except InputError as exc:  # the timeline misses checkpoints: say so once, in the ledger
                written = []
                if not watch.checkpoint_unlisted:
                    watch.checkpoint_unlisted = True
                    actor.note(number, "checkpoint", None, f"cannot list the checkpoint directory: {exc}")
            for step, at_s in written:
                watch.checkpoint_seen = (step, at_s)
                rows.append((at_s, CHECKPOINT, step))
        actor.timeline(number, rows)

    def _stop_cause(self, watch: Watch, observer: Observer, number: int, pool: Pool) -> StopCause | None:
        """Why the running attempt must be ended now, if it must. When output has stalled (the threshold is
        learned from the step cadence unless ``stall_s`` fixes it), the active hosts are probed and the scheduler
        asked at once, without waiting for the scheduler to notice: a host with two independent signals of
        death ends the attempt (see :meth:`Observer.stalled`)."""
        if self._stop_requested:
            return StopCause.INTERRUPTED
        now = self.clock()
        silent_s = now - watch.last_output_s
        if silent_s > self.config.idle_timeout_s:
            return StopCause.IDLE
        if silent_s <= watch.stall_s(self.config.stall_s) or not watch.due(now):
            return None
        dead = observer.stalled(number, pool, watch.stall_signals)
        watch.looked(self.clock(), self.config.scheduler_poll_s)
        if not dead:
            return None
        watch.scheduler_blamed = dead
        watch.stall_why = "; ".join(f"{h.name} {stall_why(watch.stall_signals[h])}" for h in dead)
        said = any(SIGNAL_SCHEDULER in watch.stall_signals[h] for h in dead)
        watch.stall_reason = QuarantineReason.SCHEDULER if said else QuarantineReason.PROBED
        return StopCause.SCHEDULER

    # -- judging -------------------------------------------------------------------
    def _judge(self, observer: Observer, number: int, obs: Observations, pool: Pool,
               history: History) -> tuple[Judgement, Observations]:
        """Judge; while the judgement asks for an observation (a probe, the walltime), make it and judge again."""
        unit = self.rng.uniform(-1.0, 1.0)
        for _ in range(len(Ask) + 1):  # each question is asked at most once
            judgement = judge(obs, pool, history, self.config.budgets, unit=unit)
            ask = question(judgement, obs)
            if ask is None:
                return judgement, obs
            obs = observer.answer(ask, number, obs, pool, self.config.checkpoint_dir, decision=judgement.decision)
        raise AssertionError("unreachable: every question is answered once")

    # -- what a launch and a probe start with ------------------------------------
    def _checkpoint(self) -> Checkpoint | None:
        return find_latest(self.config.checkpoint_dir) if self.config.checkpoint_dir else None

    def _probe_how(self) -> ProbeHow:
        return ProbeHow(self.config.launcher, self.run_dir / "probes", self.config.probe_timeout_s,
                        self.config.launcher_cmd, self._launcher_args(), self._base_env())

    def _launcher_args(self) -> tuple[str, ...]:
        """The run's launcher options, and Hydra's rsh options when it has a remote shell (probes carry them too)."""
        rsh = hydra_rsh_args(self.run_dir / HYDRA_RSH_NAME) if self.config.launcher_rsh is not None else ()
        return (*self.config.launcher_args, *rsh)

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


def _before(result: ScanResult, stop_line: int | None) -> ScanResult:
    """The evidence from before the supervisor stopped the attempt: the SIGTERM/SIGKILL teardown it
    caused (SLURM reports every surviving task 'Killed') must not read as node faults."""
    if stop_line is None:
        return result
    return replace(result, evidence=tuple(e for e in result.evidence if e.line <= stop_line))


def _last_line(log_path: Path, patterns: PatternSet) -> str | None:
    """The last line of the attempt's log no pattern claimed (None if the log cannot be read: the signature then
    rests on the evidence and the exit status alone)."""
    try:
        tail, _ = read_tail(log_path, max_bytes=TAIL_BYTES)
    except OSError:
        return None
    return last_unclaimed(tail, patterns)


def _mark(ckpt: Checkpoint | None) -> tuple[int, float] | None:
    """The checkpoint's step and modification time, for the attempt's record."""
    return (ckpt.step, ckpt.path.stat().st_mtime) if ckpt else None


def _with_resume(command: Sequence[str], ckpt: Checkpoint | None) -> tuple[str, ...]:
    """Fill an optional ``{resume}`` placeholder with the checkpoint path (empty on a first attempt)."""
    path = str(ckpt.path) if ckpt else ""
    return tuple(arg.replace("{resume}", path) for arg in command)
