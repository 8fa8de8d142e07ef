"""The failover clusters' judgement of a lost job: once dask's lost-worker timeout has passed and the worker has
not come back, what the batch scheduler and the job's log files say is read (off the event loop, bounded by
``judge_wait_s``), judged (:func:`hotspare_dask.loss.judge_lost`), the suspects it names probed where a probe
can be run (SLURM), and the decision handed to the cluster's act step.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hotspare import (
    Host,
    JobEnd,
    JobJudgement,
    PatternSet,
    SchedulerKind,
    SchedulerQuery,
    confirm_by_probe,
    read_outputs,
)
from hotspare_dask.loss import (
    LostWorker,
    Replacement,
    decide_replacement,
    identity_host,
    judge_lost,
    settled,
    still_lost,
)
from hotspare_dask.placement import job_log_files, job_of
from hotspare_dask.preload import HOSTNAME_KEY, JOB_ID_KEY
from hotspare_dask.settings import JUDGE_POLL_S

log = logging.getLogger(__name__)


class LostJobs:
    """Mixed into the failover clusters (before dask-jobqueue's class): a lost worker's job read and judged."""

    # The cluster's own (set by _Failover, SilenceWatch or SpecCluster); declared so this mixin is checked.
    scheduler_kind: SchedulerKind
    scheduler_info: dict[str, Any]
    worker_spec: dict[str, dict[str, Any]]
    run_dir: Path
    probe_timeout_s: float
    judge_wait_s: float
    _closing: bool
    _looking: Any
    _handled: set[str]
    _futures: set[Any]
    _patterns: PatternSet
    _query: SchedulerQuery
    _dummy_job: Any
    _clock: Callable[[], float]
    _sleep: Callable[[float], None]
    _act: Callable[[Replacement], None]
    _within_budget: Callable[[], bool]
    workers: dict[str, Any]

    def _job_of(self, worker_name: str) -> str | None:
        return job_of(worker_name, {name: s.get("group", ()) for name, s in self.worker_spec.items()})

    def _job_id(self, job: str | None, identity: dict[str, Any]) -> str | None:
        known = getattr(self.workers.get(job), "job_id", None) if job is not None else None
        given = identity.get(JOB_ID_KEY)
        return str(known) if known is not None else (str(given) if given else None)

    def _lost_worker(self, address: str, identity: dict[str, Any]) -> LostWorker:
        name = str(identity.get("name", ""))
        job = self._job_of(name)
        nanny = identity.get("nanny")
        return LostWorker(address, name, job, self._job_id(job, identity), identity_host(identity, HOSTNAME_KEY),
                          str(nanny) if nanny else None)

    def _check_lost(self, lost: LostWorker) -> None:
        if lost.host is not None and lost.host in self._looking:
            # The look at its node decides first (bounded by its probes' and commands' timeouts): a node fault is
            # acted on there, at once; a node that answered leaves the job to be judged here, as before.
            asyncio.get_running_loop().call_later(JUDGE_POLL_S / 4, self._check_lost, lost)
            return
        present = [str(w.get("name")) for w in self.scheduler_info.get("workers", {}).values()]
        planned = list(self.worker_spec)
        if not still_lost(lost, planned, present, self._handled) or lost.job_id is None:
            return
        self._handled.add(lost.job_id)
        futures: set[Any] = self._futures
        futures.add(asyncio.ensure_future(self._judge_and_replace(lost)))

    async def _judge_and_replace(self, lost: LostWorker) -> None:
        end = await asyncio.to_thread(self._read_end, lost)  # scheduler commands and files: off the loop
        judgement = await asyncio.to_thread(self._confirm, judge_lost(end, self._patterns), end.hosts)
        self._act(decide_replacement(str(lost.job), judgement, budget_left=self._within_budget()))

    def _confirm(self, judged: JobJudgement, hosts: tuple[Host, ...]) -> JobJudgement:
        """Hosts the job's output named only as suspects are probed (SLURM), beside a control host: kept out only
        if they fail it. Elsewhere no probe can be run from here, so a suspect is never kept out."""
        if self.scheduler_kind is not SchedulerKind.SLURM or self._closing:
            return judged
        judged, notes = confirm_by_probe(judged, hosts, self.run_dir / "probes", timeout_s=self.probe_timeout_s)
        for note in notes:
            log.warning("hotspare: batch job %s: %s", judged.job_id, note)
        return judged

    def _read_end(self, lost: LostWorker) -> JobEnd:
        """What the scheduler and the job's log files say about the lost job, once the scheduler has concluded
        (:func:`settled`) or ``judge_wait_s`` has passed (reads only; runs off the event loop)."""
        deadline = self._clock() + self.judge_wait_s
        end = self._read_once(lost)
        for _ in range(int(self.judge_wait_s / JUDGE_POLL_S) + 1):  # bounded, whatever the clock does
            if settled(end) or self._clock() >= deadline or self._closing:
                break
            self._sleep(JUDGE_POLL_S)
            end = self._read_once(lost)
        return end

    def _read_once(self, lost: LostWorker) -> JobEnd:
        job_id = str(lost.job_id)
        facts = self._query.job_facts(job_id)
        hosts = (lost.host,) if lost.host is not None else (facts.hosts if facts is not None else ())
        states = self._query.node_states(hosts) if hosts else {}
        paths, unlisted = self._log_files(job_id)
        output, unread = read_outputs(paths)
        return JobEnd(job_id, tuple(hosts), facts, states, output, None, unread + unlisted)

    def _log_files(self, job_id: str) -> tuple[list[Path], tuple[str, ...]]:
        """The job's log files, and a note when the log directory cannot be listed (the judgement says so)."""
        directory = self._dummy_job.log_directory
        if directory is None:
            return [], ()
        try:
            names = os.listdir(directory)
        except OSError as exc:
            return [], (f"{directory} ({exc.strerror})",)
        # PBS names a job's files by its sequence number (dask-worker.o4711 for job 4711.pbs01).
        return [Path(directory) / n for n in job_log_files(names, job_id.split(".", 1)[0])], ()
