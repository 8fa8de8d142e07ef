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
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import dask.config
from dask_jobqueue.pbs import PBSCluster
from dask_jobqueue.slurm import SLURMCluster
from distributed.deploy.cluster import Cluster
from distributed.deploy.utils import nprocesses_nthreads

from hotspare import (
    SNAPSHOT_NAME,
    Host,
    JobEnd,
    Ledger,
    PatternSet,
    Quarantine,
    QueryFailure,
    SchedulerKind,
    SchedulerQuery,
    WorkflowRecord,
    load_patterns,
    read_outputs,
)
from hotspare_dask.jobs import FailoverPBSJob, FailoverSLURMJob
from hotspare_dask.loss import (
    LostWorker,
    Replacement,
    decide_replacement,
    identity_host,
    judge_lost,
    still_lost,
    within_budget,
)
from hotspare_dask.placement import Placement, choose_pin, job_log_files, job_of
from hotspare_dask.preload import HOSTNAME_KEY, JOB_ID_KEY

log = logging.getLogger(__name__)

#: dask-jobqueue's own default split of a job's cores into worker processes (distributed leaves it untyped).
_nprocesses_nthreads = cast(Callable[[int], tuple[int, int]], nprocesses_nthreads)

#: The worker option that loads :mod:`hotspare_dask.preload` in every worker.
PRELOAD = ("--preload", "hotspare_dask.preload")


def failover_settings(run_dir: str | Path, quarantine_ttl_s: float | None, max_submits: int,
                      window_s: float) -> tuple[Path, float | None, int, float]:
    """The failover keywords checked (ValueError naming the fix), ``run_dir`` made absolute."""
    if not str(run_dir).strip():
        raise ValueError("run_dir='': give the workflow directory that holds the ledger and quarantine.json")
    if quarantine_ttl_s is not None and quarantine_ttl_s <= 0:
        raise ValueError(f"quarantine_ttl_s={quarantine_ttl_s!r}: give seconds > 0, or None to keep hosts out "
                         "until readmitted by hand")
    if isinstance(max_submits, bool) or not isinstance(max_submits, int) or max_submits < 1:
        raise ValueError(f"max_submits={max_submits!r}: give a whole number >= 1 (replacements per window_s)")
    if not window_s > 0:
        raise ValueError(f"window_s={window_s!r}: give seconds > 0 (the window max_submits counts in)")
    return Path(run_dir).resolve(), quarantine_ttl_s, max_submits, window_s


def explicit_job_kwargs(kwargs: dict[str, Any], config_name: str) -> dict[str, Any]:
    """The job keywords with ``processes`` explicit and the preload in ``worker_extra_args`` (a new dict).

    ``processes`` left out makes dask-jobqueue split the job into several workers without giving the spec
    their names (#691); it is computed here as dask-jobqueue would (config, else from ``cores``). Without
    ``cores`` anywhere it is left out, and dask-jobqueue raises its own error naming both.
    """
    out = dict(kwargs)
    if out.get("processes") is None:
        processes = dask.config.get(f"jobqueue.{config_name}.processes", None)
        cores = out.get("cores") or dask.config.get(f"jobqueue.{config_name}.cores", None)
        if processes is None and cores is not None:
            processes = _nprocesses_nthreads(cores)[0]
        if processes is not None:
            out["processes"] = processes
    given = out.get("worker_extra_args")
    if given is None:
        given = dask.config.get(f"jobqueue.{config_name}.worker-extra-args", None) or out.get("extra") or []
    args = list(given)
    if "hotspare_dask.preload" not in args:
        args += list(PRELOAD)
    out["worker_extra_args"] = args
    return out


class _Failover:
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
    _correct_state: Callable[[], Any]

    def __init__(self, *args: Any, run_dir: str | Path = "hotspare-dask", quarantine_ttl_s: float | None = None,
                 max_submits: int = 20, window_s: float = 600.0, query: SchedulerQuery | None = None,
                 **kwargs: Any) -> None:
        # Everything the overrides use is set before dask-jobqueue's constructor, which in synchronous mode
        # starts the scheduler, corrects state and scales inside itself.
        self.run_dir, self.quarantine_ttl_s, self.max_submits, self.window_s = failover_settings(
            run_dir, quarantine_ttl_s, max_submits, window_s)
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
        self._recorded: set[str] = set()
        self._handled: set[str] = set()
        self._replacements: deque[float] = deque(maxlen=max_submits)
        self._hosts_seen: dict[str, Host] = {}
        config_name = kwargs.get("config_name") or self._job_class().default_config_name()
        try:
            super().__init__(*args, **explicit_job_kwargs(kwargs, config_name))
        except BaseException:
            self._ledger.close()  # a refused keyword must not leave the workflow's ledger open
            raise

    def _job_class(self) -> Any:
        return getattr(type(self), "job_cls")  # noqa: B009 -- the class attribute, before __init__ sets one

    # -- placement: a fresh spec per job --------------------------------------------------------------
    def placement(self) -> Placement:
        """Where the next job may run (SLURM: off the quarantined hosts)."""
        with self._db_lock:
            return Placement.of(exclude=self.quarantine.hosts())

    def fresh_spec(self) -> dict[str, Any]:
        """A new spec dict for one job: dask-jobqueue's template copied, with this job's placement."""
        template = self.new_spec
        spec = {"cls": template["cls"], "options": {**template["options"], "placement": self.placement()}}
        if "group" in template:
            spec["group"] = list(template["group"])
        return spec

    def job_script(self) -> str:
        """The script the next job would be submitted with: dask-jobqueue's, and the placement it would get now."""
        scheduler = getattr(self, "scheduler", None)
        address = getattr(scheduler, "address", None) or "tcp://<insert-scheduler-address-here>:8786"
        job_cls = self.job_cls
        job = job_cls(address, name="dummy-name", placement=self.placement(), **self._job_kwargs)
        return str(job.job_script())

    def new_worker_spec(self) -> dict[str, dict[str, Any]]:
        """The next job's name (dask's choice) with a spec of its own (dask's are one shared dict)."""
        name = next(iter(super().new_worker_spec()))  # type: ignore[misc]
        return {name: self.fresh_spec()}

    async def _correct_state_internal(self) -> None:
        await super()._correct_state_internal()  # type: ignore[misc]
        self._record_submitted()

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

    def _job_of(self, worker_name: str) -> str | None:
        return job_of(worker_name, {name: s.get("group", ()) for name, s in self.worker_spec.items()})

    def _job_id(self, job: str | None, identity: dict[str, Any]) -> str | None:
        known = getattr(self.workers.get(job), "job_id", None) if job is not None else None
        given = identity.get(JOB_ID_KEY)
        return str(known) if known is not None else (str(given) if given else None)

    def _lost_worker(self, address: str, identity: dict[str, Any]) -> LostWorker:
        name = str(identity.get("name", ""))
        job = self._job_of(name)
        return LostWorker(address, name, job, self._job_id(job, identity), identity_host(identity, HOSTNAME_KEY))

    def _check_lost(self, lost: LostWorker) -> None:
        present = [str(w.get("name")) for w in self.scheduler_info.get("workers", {}).values()]
        planned = list(self.worker_spec)
        if not still_lost(lost, planned, present, self._handled) or lost.job_id is None:
            return
        self._handled.add(lost.job_id)
        futures: set[Any] = self._futures
        futures.add(asyncio.ensure_future(self._judge_and_replace(lost)))

    async def _judge_and_replace(self, lost: LostWorker) -> None:
        end = await asyncio.to_thread(self._read_end, lost)  # scheduler commands and files: off the loop
        judgement = judge_lost(end, self._patterns)
        budget = within_budget(self._replacements, time.monotonic(), self.max_submits, self.window_s)
        self._act(decide_replacement(str(lost.job), judgement, budget_left=budget))

    def _read_end(self, lost: LostWorker) -> JobEnd:
        """What the scheduler and the job's log files say about the lost job (reads only)."""
        job_id = str(lost.job_id)
        facts = self._query.job_facts(job_id)
        hosts = (lost.host,) if lost.host is not None else (facts.hosts if facts is not None else ())
        states = self._query.node_states(hosts) if hosts else {}
        output, unread = read_outputs(self._log_files(job_id))
        return JobEnd(job_id, tuple(hosts), facts, states, output, None, unread)

    def _log_files(self, job_id: str) -> list[Path]:
        directory = self._dummy_job.log_directory
        if directory is None:
            return []
        try:
            names = os.listdir(directory)
        except OSError:
            return []
        # PBS names a job's files by its sequence number (dask-worker.o4711 for job 4711.pbs01).
        return [Path(directory) / n for n in job_log_files(names, job_id.split(".", 1)[0])]

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
        job = self.workers.pop(step.job, None)
        if job is not None and getattr(job, "job_id", None) == judgement.job_id:
            self._futures.add(asyncio.ensure_future(job.close()))
        elif job is not None:
            self.workers[step.job] = job  # already replaced by another job: leave it
            return
        if step.resubmit and step.job in self.worker_spec:
            self._replacements.append(time.monotonic())
            self.worker_spec[step.job] = self.fresh_spec()  # a new dict: the old one may be dask's shared template
        else:
            self.worker_spec.pop(step.job, None)
        self._correct_state()

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
        await super()._close()  # type: ignore[misc]
        with self._db_lock:
            self._ledger.close()


class FailoverSLURMCluster(_Failover, SLURMCluster):
    """``SLURMCluster`` whose jobs are kept off quarantined hosts and replaced when their node dies.

    Every ``SLURMCluster`` argument, plus ``run_dir`` (the workflow directory: ledger and
    ``quarantine.json``), ``quarantine_ttl_s`` (None: until readmitted by hand), ``max_submits`` and
    ``window_s`` (at most that many replacements of lost jobs per window) and ``query`` (tests).
    """

    job_cls = FailoverSLURMJob
    scheduler_kind = SchedulerKind.SLURM


class FailoverPBSCluster(_Failover, PBSCluster):
    """``PBSCluster`` whose jobs are pinned to hosts known good once any host is quarantined.

    PBS Pro cannot exclude a host, so after a node fault each new job names one host: among ``hosts``
    (given by the user) and the hosts earlier workers reported, the first not quarantined and not running
    another job of this cluster. With none known, jobs are placed by PBS as before. Other arguments: as
    :class:`FailoverSLURMCluster`.
    """

    job_cls = FailoverPBSJob
    scheduler_kind = SchedulerKind.PBS

    def __init__(self, *args: Any, hosts: Sequence[str] = (), **kwargs: Any) -> None:
        if isinstance(hosts, str):
            raise ValueError(f"hosts={hosts!r}: give a list of host names, e.g. hosts=[{hosts!r}]")
        self.pin_candidates = tuple(Host(h) for h in hosts)
        super().__init__(*args, **kwargs)

    def placement(self) -> Placement:
        """The next job's host: pinned only once a host is quarantined (PBS places freely until then)."""
        with self._db_lock:
            bad = self.quarantine.hosts()
        if not bad:
            return Placement()
        learned = tuple(h for h in self._hosts_seen.values() if h not in self.pin_candidates)
        return Placement(pin=choose_pin(self.pin_candidates + learned, bad, self._busy_hosts()))

    def _busy_hosts(self) -> set[Host]:
        live = {str(getattr(j, "job_id", None)) for j in self.workers.values()}
        return {h for job_id, h in self._hosts_seen.items() if job_id in live}
