"""``FailoverSLURMCluster`` and ``FailoverPBSCluster``: dask-jobqueue's clusters, kept off dead nodes.

One line changes in a user's script::

    cluster = FailoverSLURMCluster(cores=8, memory="16GB", run_dir="wf-run")   # was SLURMCluster(...)

What the failover clusters add to dask-jobqueue's:

* **placement per job**: each job's spec is built fresh (never a shared dict) with a
  :class:`~hotspare_dask.placement.Placement` from the workflow's quarantine at that moment: SLURM
  ``#SBATCH --exclude=``; PBS Pro, which cannot exclude, pins the job to a host known good;
* **processes always explicit**: dask-jobqueue gives a job's spec its worker-name group only when
  ``processes`` was passed, so a job whose default split into several workers was lost was never
  replaced (dask-jobqueue #691); the default is computed as dask-jobqueue would and passed;
* **which node**: a worker preload (:mod:`hotspare_dask.preload`) reports each worker's node and batch job;
* **dead nodes found in seconds** (:mod:`hotspare_dask.silence`, :mod:`hotspare_dask.watch`): a worker silent
  past a threshold learned from its heartbeats, a worker whose connection closed, or a node the scheduler calls
  unhealthy is a lead; its node is probed twice inside its job and the scheduler asked, at once; two signals (two
  missed probes, or one and the scheduler's NOT_RESPONDING/DOWN) make a node fault: its workers are removed from
  the scheduler without counting against their tasks, and its jobs are judged lost at once, without waiting for
  the scheduler to mark the node down. One signal never evicts;
* **lost jobs judged and replaced**: when a job's workers leave and do not come back (a nanny restart
  brings the same name back), the cluster asks the scheduler about the job and its node, reads the job's
  log files, and judges the end with the core's job judging; a node fault quarantines the blamed hosts
  with the evidence, and the job is resubmitted under its own name with a fresh placement; a user error
  is not resubmitted; at most ``max_submits`` replacements per ``window_s`` seconds.

**One writer per shared file** (:mod:`hotspare.record.quarantine`): the cluster, in the client process,
owns ``run_dir/ledger.sqlite`` (the quarantine and each job's record) and publishes
``run_dir/quarantine.json`` after every change; anything on the compute nodes only reads that snapshot.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import dask.config
from dask_jobqueue.pbs import PBSCluster
from dask_jobqueue.slurm import SLURMCluster
from distributed.deploy.cluster import Cluster
from tornado.ioloop import PeriodicCallback

from hotspare import (
    DEFAULT_QUARANTINE_TTL_S,
    LOOK_EVERY_S,
    SNAPSHOT_NAME,
    Entry,
    Host,
    Ledger,
    PatternSet,
    Quarantine,
    QuarantineLife,
    QueryFailure,
    SchedulerKind,
    SchedulerQuery,
    WorkflowRecord,
    changed_snapshots,
    load_patterns,
)
from hotspare_dask.blame import PLUGIN_NAME, Settled, TaskBlame
from hotspare_dask.jobs import FailoverPBSJob, FailoverSLURMJob, run_dir_on_worker
from hotspare_dask.judging import LostJobs
from hotspare_dask.loss import (
    Replacement,
    identity_host,
    spares_tasks,
)
from hotspare_dask.mpi import TASKS_DIR
from hotspare_dask.placement import Placement, choose_pin
from hotspare_dask.preload import HOSTNAME_KEY
from hotspare_dask.settings import (
    VERDICT_MARGIN_S,
    explicit_job_kwargs,
    failover_settings,
    silence_settings,
)
from hotspare_dask.silence import SILENCE_FLOOR_S
from hotspare_dask.spares import SparePool
from hotspare_dask.watch import SilenceWatch

log = logging.getLogger(__name__)

class _Failover(LostJobs, SparePool, SilenceWatch):
    """What both failover clusters add; mixed in before dask-jobqueue's cluster class."""

    #: Set by the concrete classes.
    scheduler_kind: SchedulerKind
    # dask-jobqueue's and SpecCluster's own (untyped there): declared so the overrides below are checked.
    job_cls: Any
    scheduler: Any
    scheduler_info: dict[str, Any]
    worker_spec: dict[str, dict[str, Any]]
    workers: dict[str, Any]
    new_spec: dict[str, Any]
    _job_kwargs: dict[str, Any]
    _futures: set[Any]
    _dummy_job: Any
    _lock: asyncio.Lock
    _correct_state: Callable[[], Any]

    def __init__(self, *args: Any, run_dir: str | Path = "hotspare-dask",
                 quarantine_ttl_s: float | None = DEFAULT_QUARANTINE_TTL_S,
                 max_submits: int = 20, window_s: float = 600.0, judge_wait_s: float = 60.0,
                 probe_timeout_s: float = 30.0, silence_s: float | None = None,
                 silence_floor_s: float = SILENCE_FLOOR_S, spare_jobs: int = 0, query: SchedulerQuery | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 **kwargs: Any) -> None:
        # Everything the overrides use is set before dask-jobqueue's constructor, which in synchronous mode
        # starts the scheduler, corrects state and scales inside itself.
        self.run_dir, self.quarantine_ttl_s, self.max_submits, self.window_s, self.judge_wait_s = (
            failover_settings(run_dir, quarantine_ttl_s, max_submits, window_s, judge_wait_s))
        self._clock, self._sleep = clock, sleep
        if not probe_timeout_s > 0:
            raise ValueError(f"probe_timeout_s={probe_timeout_s!r}: give a positive number of seconds")
        self.probe_timeout_s = float(probe_timeout_s)
        self._init_watch(*silence_settings(silence_s, silence_floor_s))
        self._init_spares(spare_jobs)
        #: Set when close() starts: a lost job's judging stops waiting for the scheduler (close awaits it).
        self._closing = False
        #: Scheduler commands that did not answer since the last act step (recorded there, said once).
        self._query_failures: list[QueryFailure] = []
        self._query = replace(query or SchedulerQuery(self.scheduler_kind, None),
                              on_failure=self._query_failures.append)
        self._warned = False
        self._patterns: PatternSet = load_patterns()
        self._db_lock = threading.Lock()  # scale() calls in from the user's thread, losses from the loop's
        self._ledger = Ledger.open(self.run_dir)
        self.record = WorkflowRecord(self._ledger)
        self.quarantine = Quarantine.attach(self._ledger.connection, snapshot=self.run_dir / SNAPSHOT_NAME)
        self.quarantine.publish()
        #: Readmits quarantined nodes that came back, says when the quarantine leaves a job no room (SLURM).
        self._life = QuarantineLife(self.quarantine, self._ledger, self._query, self.run_dir / "probes",
                                    probe_timeout_s=self.probe_timeout_s, lock=self._db_lock, retry_s=self.window_s,
                                    warn=log.warning, clock=clock)
        self._recorded: set[str] = set()
        self._handled: set[str] = set()
        self._replacements: deque[float] = deque(maxlen=max_submits)
        self._hosts_seen: dict[str, Host] = {}
        self._task_snapshots: dict[Path, int] = {}  # {a task's quarantine.json: mtime folded}
        #: On the scheduler: a worker death counts toward its tasks' allowed-failures only once judged no node
        #: fault. A death with no verdict by dask's lost-worker timeout + judging + a margin counts as before.
        lost_s = dask.utils.parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout"))
        self.task_blame = TaskBlame(verdict_timeout_s=lost_s + self.judge_wait_s + VERDICT_MARGIN_S,
                                    on_settled=self._record_settled)
        config_name = kwargs.get("config_name") or self._job_class().default_config_name()
        try:
            super().__init__(*args, **run_dir_on_worker(explicit_job_kwargs(kwargs, config_name), config_name,
                                                     self.run_dir))
        except BaseException:
            self._ledger.close()  # a refused keyword must not leave the workflow's ledger open
            raise

    async def _start(self) -> None:
        await super()._start()  # type: ignore[misc]
        # dask-jobqueue's scheduler runs in this process: the plugin goes straight onto it.
        self.scheduler.add_plugin(self.task_blame, name=PLUGIN_NAME)
        await self.task_blame.start(self.scheduler)
        self._spares_plugin().attach(self.scheduler)
        self._start_watch()
        # Between placements (adapt may be off: then nothing else corrects state), the quarantine's look.
        life = PeriodicCallback(self._life_tick, LOOK_EVERY_S * 1000 / 2)
        self.periodic_callbacks["hotspare-quarantine"] = life
        life.start()

    def _job_class(self) -> Any:
        return getattr(type(self), "job_cls")  # noqa: B009 -- the class attribute, before __init__ sets one

    # -- placement: a fresh spec per job --------------------------------------------------------------
    def placement(self, avoid: Host | None = None) -> Placement:
        """Where the next job may run (SLURM: off the quarantined hosts, those the MPI tasks found included, and off
        ``avoid``: a node under judgement)."""
        self.fold_task_findings()
        with self._db_lock:
            return Placement.of(exclude=[*self.quarantine.hosts(), *([avoid] if avoid is not None else [])])

    def fresh_spec(self, avoid: Host | None = None) -> dict[str, Any]:
        """A new spec dict for one job: dask-jobqueue's template copied, with this job's placement (kept off
        ``avoid`` too, when given)."""
        template = self.new_spec
        spec = {"cls": template["cls"], "options": {**template["options"], "placement": self.placement(avoid)}}
        if "group" in template:
            spec["group"] = list(template["group"])
        return spec

    def _next_job(self) -> Any:
        """A job like the next one (dask-jobqueue's ``_dummy_job``) with the placement it would get now."""
        address = getattr(getattr(self, "scheduler", None), "address", None)
        return self.job_cls(address or "tcp://<insert-scheduler-address-here>:8786", name="dummy-name",
                            placement=self.placement(), **self._job_kwargs)

    def job_script(self) -> str:
        """The script the next job would be submitted with: dask-jobqueue's, and the placement it would get now."""
        return str(self._next_job().job_script())

    @property
    def job_header(self) -> str:
        """The next job's header, its placement included."""
        return str(self._next_job().job_header)

    def new_worker_spec(self) -> dict[str, dict[str, Any]]:
        """The next job's name (dask's choice) with a spec of its own (dask's are one shared dict)."""
        name = next(iter(super().new_worker_spec()))  # type: ignore[misc]
        return {name: self.fresh_spec()}

    async def _correct_state_internal(self) -> None:
        # Probes and scheduler commands are subprocesses: off the event loop.
        await asyncio.to_thread(self._readmit_due, placing=any(n not in self.workers for n in self.worker_spec),
                                pending=self._unstarted_jobs())
        self.fold_task_findings()
        self._keep_spares()
        self._place_pending()
        await self._cancel_retired()
        await super()._correct_state_internal()  # type: ignore[misc]
        self._record_submitted()

    async def _cancel_retired(self) -> None:
        """Cancel the jobs scale() or adapt() no longer wants, each taken out of ``workers`` before its cancel starts.

        SpecCluster takes a retired job out only once its cancel command has returned, and its workers die of that
        cancel: the scheduler could see them gone while the cluster still listed the job (dask-jobqueue's own
        ``test_basic`` asserts both empty at once; on the PBS bed ``qdel`` was slow enough to fail it). Its retire
        call, given job names where it wants addresses, retires nobody; none is made here either. A retired job's
        workers, gone, are then no loss to judge (no planned job owns them)."""
        async with self._lock:
            retired = [self.workers.pop(name) for name in list(self.workers) if name not in self.worker_spec]
            if retired:
                await asyncio.gather(*(job.close() for job in retired))

    def _place_pending(self) -> None:
        """Jobs planned but not yet submitted get their placement from the quarantine as it is now: their spec
        was built when scale() or adapt() asked for them, before this step readmitted or added hosts."""
        for name in [n for n in self.worker_spec if n not in self.workers]:
            self.worker_spec[name] = self.spare_spec(name) if name in self.spares else self.fresh_spec()

    def _record_submitted(self) -> None:
        """Each newly submitted job in the workflow's record, with the hosts its placement kept out."""
        for job in list(self.workers.values()):
            job_id = getattr(job, "job_id", None)
            if job_id is None or job_id in self._recorded:
                continue
            self._recorded.add(job_id)
            placement = getattr(job, "placement", None)
            excluded = list(placement.exclude) if placement is not None else []
            with self._db_lock:
                self.record.submitted(str(job_id), str(job.name), time.time(), excluded)

    # -- what the MPI tasks' supervisors found (hotspare_dask.mpi) ----------------------------------------
    def fold_task_findings(self) -> list[Entry]:
        """Take into the workflow's quarantine what each MPI task's supervisor published in its own run directory
        (``run_dir/tasks/*/quarantine.json``), so later jobs are placed off those hosts; the entries added.

        Called before each job's placement and at each state correction; a snapshot is read again only when it
        changed, and an entry is folded once (a host readmitted here stays readmitted)."""
        with self._db_lock:
            changed = changed_snapshots(self.run_dir / TASKS_DIR, self._task_snapshots)
            added, problems = self.quarantine.fold(changed) if changed else ([], [])
        for entry in added:
            log.warning("hotspare: %s quarantined by an MPI task (%s): %s", entry.host.name, entry.reason,
                        entry.detail)
        for problem in problems:
            log.warning("hotspare: an MPI task's findings could not be read: %s", problem)
        return added

    # -- losses: read, decide, act --------------------------------------------------------------------
    def _update_worker_status(self, op: str, msg: Any) -> None:
        workers = self.scheduler_info.get("workers", {})
        if op == "add":
            self._learn_hosts(msg.get("workers", {}))
        if op != "remove":
            super()._update_worker_status(op, msg)  # type: ignore[misc]
            return
        if msg not in workers:
            return  # distributed #5407: a second remove of an address already gone would raise KeyError
        lost = self._lost_worker(msg, workers[msg])
        # SpecCluster's own step is skipped: it cancels the job by worker name after the timeout, which misses
        # grouped names (#691), and its cancel lets adapt() resubmit the old spec before the job is judged. The
        # job stays in `workers` until _act cancels it and resubmits it placed. Retired jobs (no longer in
        # worker_spec) are cancelled by _correct_state as before.
        Cluster._update_worker_status(self, op, msg)  # type: ignore[arg-type,no-untyped-call]
        self._swap_for_lost(lost)  # a ready spare takes its place now; judged below as before
        self._look_at_lost(lost)  # its node probed now; the judging below waits for that look
        if lost.job is not None:
            delay_s = dask.utils.parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout"))
            asyncio.get_running_loop().call_later(delay_s, self._check_lost, lost)

    def _learn_hosts(self, identities: dict[str, Any]) -> None:
        for identity in identities.values():
            host = identity_host(identity, HOSTNAME_KEY)
            job = self._job_of(str(identity.get("name", "")))
            job_id = self._job_id(job, identity)
            if host is not None and job_id is not None and self._hosts_seen.get(job_id) != host:
                self._hosts_seen[job_id] = host
                with self._db_lock:
                    self.record.hosts_learned(job_id, [host])

    def _act(self, step: Replacement) -> None:
        """Carry out one decision: quarantine with the evidence, record, and resubmit (or drop) the job."""
        judgement = step.judgement
        detail = f"dask job {step.job} (batch job {judgement.job_id}): {judgement.verdict.reason}"
        with self._db_lock:
            for host, reason in judgement.keep_out:
                self.quarantine.add(host, reason, ttl_s=self.quarantine_ttl_s, detail=detail)
            self.record.ended(judgement, time.time())
            self._record_query_failures()
        log.warning("hotspare: %s; %s", detail, step.why)
        self.task_blame.settle(self._worker_names(step.job), forgive=spares_tasks(judgement),
                               why=f"batch job {judgement.job_id}: {judgement.verdict.reason}")
        job = self.workers.pop(step.job, None)
        if job is not None and getattr(job, "job_id", None) == judgement.job_id:
            self._futures.add(asyncio.ensure_future(job.close()))
        elif job is not None:
            self.workers[step.job] = job  # already replaced by another job: leave it
            return
        if step.resubmit and step.job in self.worker_spec:
            self._replacements.append(time.monotonic())
            # A lost spare comes back a spare; a new dict: the old one may be dask's shared template.
            if step.job in self.spares or not self._promote_for(step.job, judgement.job_id,
                                                                self._hosts_seen.get(judgement.job_id)):
                self.worker_spec[step.job] = self.spare_spec(step.job) if step.job in self.spares else self.fresh_spec()
        else:
            self.worker_spec.pop(step.job, None)
            self._drop_standby_for(step.job, f"batch job {judgement.job_id} is not replaced ({step.why})")
        self._correct_state()

    def _readmit_due(self, *, placing: bool = False, pending: Sequence[str] = ()) -> None:
        """The quarantine's look at its nodes (:class:`hotspare.QuarantineLife`): a node back in service since it
        was quarantined (SLURM: restarted, or seen down and now up; PBS: seen down and now up) or whose
        ``quarantine_ttl_s`` passed comes back after a passing probe (SLURM: a one-task ``srun --immediate``; PBS:
        a tiny job pinned to it, :mod:`hotspare.act.pbs_probe`), through the cluster's scheduler runner; one that
        does not answer stays out and is not probed again for ``window_s``. Each probe is in the ledger. SLURM
        only: a job of ``pending`` held back while every free node is quarantined is said once (log and ledger).
        Looks at once when a job is being placed (``placing``), else at most every 10 s (adapt corrects state
        every second)."""
        if self._closing:
            return
        self._life.tick(placing=placing, pending=pending)

    async def _life_tick(self) -> None:
        if not self._closing:
            await asyncio.to_thread(self._readmit_due, pending=self._unstarted_jobs())

    def _unstarted_jobs(self) -> list[str]:
        """Batch job ids submitted whose workers have not yet come (the ones SLURM may hold back)."""
        ids = [getattr(job, "job_id", None) for job in self.workers.values()]
        return [str(i) for i in ids if i is not None and str(i) not in self._hosts_seen]

    def _worker_names(self, job: str) -> list[str]:
        """The names a job's workers register under (``X-0``, or ``X-0-0``, ``X-0-1`` with several processes)."""
        group = self.worker_spec.get(job, {}).get("group")
        return [job + suffix for suffix in group] if group else [job]

    def _record_settled(self, settled: Settled) -> None:
        """A worker death counted toward its tasks' allowed-failures or forgiven, in the workflow's ledger."""
        if self._closing:
            return
        with self._db_lock:
            self._ledger.observe(0, time.time(), "task-blame", None, settled.describe())

    def _record_query_failures(self) -> None:
        """A scheduler that cannot be asked is recorded each time and said once: jobs are then judged from their
        logs alone, and someone should know why."""
        failures, self._query_failures[:] = list(self._query_failures), []
        for failure in failures:
            self._ledger.observe(0, time.time(), "scheduler-error", None, str(failure))
        if failures and not self._warned:
            self._warned = True
            log.warning("hotspare: cannot ask the scheduler (%s); lost jobs are judged from their logs alone until "
                        "it answers", failures[0])

    async def _close(self) -> None:
        self._closing = True
        await super()._close()  # type: ignore[misc]
        with self._db_lock:
            self._ledger.close()


class FailoverSLURMCluster(_Failover, SLURMCluster):
    """``SLURMCluster`` whose jobs are kept off quarantined hosts and replaced when their node dies.

    Every ``SLURMCluster`` argument, plus ``run_dir`` (the workflow directory: ledger and
    ``quarantine.json``), ``quarantine_ttl_s`` (how long a quarantined host stays out before its probe:
    4 hours by default, :data:`hotspare.DEFAULT_QUARANTINE_TTL_S`; None: until readmitted by hand), ``max_submits`` and
    ``window_s`` (at most that many replacements of lost jobs per window), ``spare_jobs`` (jobs kept running idle
    beside the others, each ready to take a lost job's place at once: :mod:`hotspare_dask.spares`),
    ``judge_wait_s`` (how long a lost job's judging waits for the scheduler to end it or report its node down),
    ``silence_floor_s`` (a worker silent this long at least, 3 s by default, and five of its heartbeat gaps, has
    its node probed; ``silence_s`` fixes that threshold instead), ``job_nodes`` (nodes per job, for an MPI job run
    from a task: :mod:`hotspare_dask.mpi`) and ``query``, ``clock``, ``sleep`` (tests).
    """

    job_cls = FailoverSLURMJob
    scheduler_kind = SchedulerKind.SLURM


class FailoverPBSCluster(_Failover, PBSCluster):
    """``PBSCluster`` whose jobs are pinned to hosts known good once any host is quarantined.

    PBS Pro cannot exclude a host, so after a node fault each new job names one host: among ``hosts``
    (given by the user: the nodes the workflow may use) and the hosts earlier workers reported, the first not
    quarantined and not running another job of this cluster. With none, the job is placed by PBS as before.
    The pin is written into the one-chunk resource line: ``select=1:host=H:...`` (PBS Pro) or ``nodes=H:...``
    (Torque; slurm-wlm-torque's sbatch honours this form and ignores ``host=`` in a select). No probe can be run
    from here (``pbs_tmrsh`` works only inside the job), so a silent worker's node has only ``pbsnodes``'s word,
    one signal: it is recorded and never evicted. Other arguments: as :class:`FailoverSLURMCluster`.
    """

    job_cls = FailoverPBSJob
    scheduler_kind = SchedulerKind.PBS

    def __init__(self, *args: Any, hosts: Sequence[str] = (), **kwargs: Any) -> None:
        if isinstance(hosts, str):
            raise ValueError(f"hosts={hosts!r}: give a list of host names, e.g. hosts=[{hosts!r}]")
        self.pin_candidates = tuple(Host(h) for h in hosts)
        super().__init__(*args, **kwargs)

    def placement(self, avoid: Host | None = None) -> Placement:
        """The next job's host: pinned only once a host is quarantined or to be avoided (PBS places freely until
        then)."""
        self.fold_task_findings()
        with self._db_lock:
            bad = [*self.quarantine.hosts(), *([avoid] if avoid is not None else [])]
        if not bad:
            return Placement()
        return Placement(pin=choose_pin(self._known_hosts(), bad, self._busy_hosts()))

    def fresh_spec(self, avoid: Host | None = None) -> dict[str, Any]:
        """A new job's spec (see :class:`FailoverSLURMCluster`); a job with no host known good to pin it to is
        left to PBS, which is said once (:meth:`hotspare.QuarantineLife.unpinned`)."""
        spec = super().fresh_spec(avoid)
        if spec["options"]["placement"].pin is None:
            self._life.unpinned("a new batch job of this cluster", self._known_hosts(), self._busy_hosts())
        return spec

    def _known_hosts(self) -> tuple[Host, ...]:
        """The hosts a job may be pinned to: ``hosts=`` and those earlier workers reported."""
        return self.pin_candidates + tuple(h for h in self._hosts_seen.values() if h not in self.pin_candidates)

    def _busy_hosts(self) -> set[Host]:
        live = {str(getattr(j, "job_id", None)) for j in self.workers.values()}
        return {h for job_id, h in self._hosts_seen.items() if job_id in live}


# help() on a drop-in replacement should list the keywords it takes: dask-jobqueue's own, documented on its classes
# (its test_docstring_cluster checks "cores :" and the class's name), with the examples naming ours.
for _ours, _theirs in ((FailoverSLURMCluster, SLURMCluster), (FailoverPBSCluster, PBSCluster)):
    _doc = (_theirs.__doc__ or "").replace(f"from dask_jobqueue import {_theirs.__name__}",
                                           f"from hotspare_dask import {_ours.__name__}")
    _ours.__doc__ = (f"{inspect.cleandoc(_ours.__doc__ or '')}\n\n"
                     f"{inspect.cleandoc(_doc.replace(f'{_theirs.__name__}(', f'{_ours.__name__}('))}")
