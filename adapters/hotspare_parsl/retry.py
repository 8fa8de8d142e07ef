"""Parsl retry policy and block error handler that know a lost node from a broken program.

``Config(retries=3, retry_handler=hotspare_parsl.retry_handler)``, and on the executor
``HighThroughputExecutor(..., block_error_handler=hotspare_parsl.block_error_handler)``.

Costs returned by :class:`RetryHandler` (Parsl retries while the summed cost is <= ``retries``):

* a node failure (``ManagerLost``, ``WorkerLost``, a bash app whose output the classifier reads as a
  node fault, or exit 93 from a task run under :func:`mpi_launch`: its supervisor spent the block's
  spares) costs 0, up to ``node_failures`` of them per task (counted by the handler itself: Parsl
  resets ``fail_history`` every try); beyond that it costs like any failure. A host is quarantined
  only on evidence: hosts the classifier names, or a lost manager's host that the scheduler reports
  down/not responding;
* a bash app's own output read as a user error (the classifier's ``user_error``: a traceback ending in
  a programming error, an import error, a usage error, the program's own ``MPI_Abort``) costs
  ``retries + 1``: it would fail the same way again;
* exit 3 from a task run under :func:`mpi_launch` costs 1, an ordinary retry, never free: its
  supervisor stops with 3 for a user error, but also for the same failure twice on healthy hosts or a
  time/attempt limit, and the exit code does not say which, so Parsl's ``retries`` decide. Each try is
  one short supervisor run (it stops a user error at its first attempt), not a round of retries;
* a rank's own crash (a segfault before the teardown), storage trouble (``transient_io``) and everything
  else cost 1, as Parsl's default does; a crash keeps no host out.

Bash apps append each try's output to the same ``stdout``/``stderr`` files; the handler reads only
what was written since the previous failure it looked at.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from parsl.executors.high_throughput.errors import ManagerLost, WorkerLost
from parsl.jobs.error_handlers import simple_error_handler
from parsl.jobs.states import JobStatus

from hotspare import (
    Fault,
    Host,
    HostError,
    QuarantineReason,
    RetryRow,
    RetryScope,
    TaskJudgement,
    judge_task,
    load_patterns,
    read_tail,
)
from hotspare_parsl.provider import FailoverProvider

log = logging.getLogger(__name__)


class RetryHandler:
    """A ``retry_handler`` for Parsl's ``Config``; see the module docstring."""

    def __init__(self, *, node_failures: int = 3) -> None:
        if node_failures < 0:
            raise ValueError(f"node_failures={node_failures}: give 0 or more")
        self.node_failures = node_failures
        self._lock = threading.Lock()
        #: Per (workflow run, task id): node failures so far, and how far each output file has been read.
        #: Keyed by the DFK's run id too: task ids restart at 0 in every workflow a process runs.
        self._seen: dict[tuple[str | None, int], dict[str, Any]] = {}
        self._patterns = load_patterns()

    def __call__(self, exception: BaseException, task_record: Mapping[str, Any]) -> float:
        dfk = task_record.get("dfk")
        retries = int(dfk.config.retries) if dfk is not None else 0
        with self._lock:
            key = (getattr(dfk, "run_id", None), int(task_record["id"]))
            state = self._seen.setdefault(key, {"node": 0, "offsets": {}})
        provider = _provider(dfk, task_record)
        judged = self._judge(exception, task_record, state, provider)
        cost = 1.0
        if judged.fault is Fault.NODE:
            state["node"] += 1
            cost = 0.0 if state["node"] <= self.node_failures else 1.0
        elif judged.fault is Fault.USER:
            # Only a bash app's own output reads as USER: a supervisor's exit 3 comes back OTHER (see judge_task).
            cost = float(retries + 1)
        if provider is not None:
            self._record(provider, exception, task_record, judged, cost)
        return cost

    def _record(self, provider: FailoverProvider, exc: BaseException, task_record: Mapping[str, Any],
                judged: TaskJudgement, cost: float) -> None:
        provider.keep_out(judged.keep_out, f"task {task_record['id']}: {judged.reason}")
        provider.fold_findings()  # a task's supervisor that gave up (93) published what it found
        launched = task_record.get("try_time_launched")
        now = time.time()
        # A lost manager means the task's whole block is gone: the rerun waits for a new block (a whole-job
        # retry); anything else reruns in a live block (a task retry).
        scope = RetryScope.WHOLE_JOB if isinstance(exc, ManagerLost) else RetryScope.TASK
        provider.record_retry(RetryRow(task_record["id"], task_record.get("try_id"), now, scope, judged.fault, cost,
                                       now - launched.timestamp() if launched is not None else None, judged.reason))

    def _judge(self, exc: BaseException, task_record: Mapping[str, Any], state: dict[str, Any],
               provider: FailoverProvider | None) -> TaskJudgement:
        if isinstance(exc, ManagerLost | WorkerLost):
            # The scheduler's word is the second signal: a lost manager's host is kept out only if it is down.
            host = _host(getattr(exc, "hostname", None))
            confirmed: tuple[Host, ...] = ()
            if host is not None and provider is not None and isinstance(exc, ManagerLost):
                confirmed = provider.unhealthy([host])
            return TaskJudgement(Fault.NODE, tuple((h, QuarantineReason.SCHEDULER) for h in confirmed), str(exc))
        rc = getattr(exc, "exitcode", None)
        return judge_task(self._new_output(task_record, state), rc if isinstance(rc, int) else None, self._patterns)

    def _new_output(self, task_record: Mapping[str, Any], state: dict[str, Any]) -> bytes:
        kwargs = task_record.get("kwargs") or {}
        data = b""
        for key in ("stdout", "stderr"):
            path = _std_path(kwargs.get(key))
            if path is None:
                continue
            try:
                text, state["offsets"][path] = read_tail(path, start=state["offsets"].get(path, 0))
            except OSError as exc:
                log.warning("hotspare: task %s: cannot read %s (%s); judged without it",
                            task_record.get("id"), path, exc)
                continue
            data += text + b"\n"
        return data


def _std_path(spec: Any) -> str | None:
    if spec is None:
        return None
    if isinstance(spec, tuple | list) and spec:
        spec = spec[0]
    path = getattr(spec, "filepath", spec)
    return str(path) if isinstance(path, str | os.PathLike) else None


def _host(name: Any) -> Host | None:
    if not isinstance(name, str):
        return None
    try:
        return Host(name)
    except HostError:
        return None


def _provider(dfk: Any, task_record: Mapping[str, Any]) -> FailoverProvider | None:
    """The task's executor's provider, if it is a FailoverProvider. No exception is swallowed here: a
    broken task record or DFK is a bug to see (Parsl fails the task with the handler's exception)."""
    if dfk is None:
        return None
    executor = dfk.executors[task_record["executor"]]
    provider = getattr(executor, "provider", None)
    return provider if isinstance(provider, FailoverProvider) else None


#: The ready-made handler: ``Config(retry_handler=hotspare_parsl.retry_handler)``.
retry_handler = RetryHandler()


def block_error_handler(executor: Any, status: dict[str, JobStatus]) -> None:
    """Parsl's own ``simple_error_handler``, minus the blocks a FailoverProvider lost to node faults.

    A block that died with its node is replaced on other nodes; counting it as a failed block would
    put the executor into a bad state after one node loss when ``init_blocks=1``.
    """
    provider = getattr(executor, "provider", None)
    if isinstance(provider, FailoverProvider):
        jobs = getattr(executor, "blocks_to_job_id", {})
        status = {b: s for b, s in status.items() if not provider.node_lost(jobs.get(b))}
    if status:
        simple_error_handler(executor, status)
