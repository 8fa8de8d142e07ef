"""Parsl retry policy and block error handler that know a lost node from a broken program.

``Config(retries=3, retry_handler=hotspare_parsl.retry_handler)``, and on the executor
``HighThroughputExecutor(..., block_error_handler=hotspare_parsl.block_error_handler)``.

Costs returned by :class:`RetryHandler` (Parsl retries while the summed cost is <= ``retries``):

* a node failure (``ManagerLost``, ``WorkerLost``, or a bash app whose output the classifier reads
  as a node fault) costs 0, up to ``node_failures`` of them per task (counted by the handler itself:
  Parsl resets ``fail_history`` every try); beyond that it costs like any failure. A host is
  quarantined only on evidence: hosts the classifier names, or a lost manager's host that the
  scheduler reports down/not responding;
* a user error (the classifier's ``user_error``: an import error, a missing file before any
  progress, ...) costs ``retries + 1``: it would fail the same way again; so does exit 3 from a task run
  under :func:`mpi_launch` (the task's own supervisor already judged it not worth retrying);
* storage trouble (``transient_io``) and everything else cost 1, as Parsl's default does.

Bash apps append each try's output to the same ``stdout``/``stderr`` files; the handler reads only
what was written since the previous failure it looked at.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from parsl.executors.high_throughput.errors import ManagerLost, WorkerLost
from parsl.jobs.error_handlers import simple_error_handler
from parsl.jobs.states import JobStatus

from hotspare import FailureClass, Host, classify, load_patterns, scan
from hotspare.errors import EXIT_NO_RETRY, EXIT_RETRY_ELSEWHERE, HotspareError
from hotspare_parsl.provider import FailoverProvider

log = logging.getLogger(__name__)

_MAX_READ = 8 << 20


#: What a task run under `hotspare launch` (see :func:`mpi_launch`) already decided, by its exit code.
_SUPERVISOR_SAYS: dict[int, tuple[str, str]] = {
    # It judged the failure itself (user error, OOM, its budgets spent): trust it.
    EXIT_NO_RETRY: ("user", "the task's supervisor stopped with 'do not retry' (exit 3)"),
    # It spent the block's spares; the hosts are already in the shared quarantine.
    EXIT_RETRY_ELSEWHERE: ("node", "the task's supervisor asked to be retried on other nodes (exit 93)"),
}


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
        retries = _retries(task_record)
        with self._lock:
            key = (getattr(task_record.get("dfk"), "run_id", None), int(task_record.get("id", -1)))
            state = self._seen.setdefault(key, {"node": 0, "offsets": {}})
        provider = _provider(task_record)
        kind, hosts, why = self._judge(exception, task_record, state, provider)
        cost = 1.0
        if kind == "node":
            state["node"] += 1
            if provider is not None:
                for host in hosts:
                    reason = "scheduler" if isinstance(exception, ManagerLost) else "scraped"
                    provider.quarantine.add(host, reason, ttl_s=provider.quarantine_ttl_s,
                                            detail=f"task {task_record.get('id')}: {why}")
            cost = 0.0 if state["node"] <= self.node_failures else 1.0
        elif kind == "user":
            cost = float(retries + 1)
        if provider is not None:
            # A lost manager means the task's whole block is gone: the rerun waits for a new block (a
            # whole-job retry); anything else reruns in a live block (a task retry).
            scope = "whole_job" if isinstance(exception, ManagerLost) else "task"
            provider.record_retry(task_record, scope=scope, kind=kind, cost=cost, reason=why)
        return cost

    def _judge(self, exc: BaseException, task_record: Mapping[str, Any], state: dict[str, Any],
               provider: FailoverProvider | None) -> tuple[str, tuple[Host, ...], str]:
        if isinstance(exc, ManagerLost | WorkerLost):
            host = _host(getattr(exc, "hostname", None))
            confirmed: tuple[Host, ...] = ()
            if host is not None and provider is not None and isinstance(exc, ManagerLost):
                confirmed = provider.unhealthy([host])
            return "node", confirmed, str(exc)
        text = self._new_output(task_record, state)
        said = _SUPERVISOR_SAYS.get(getattr(exc, "exitcode", None))  # type: ignore[arg-type]
        if said is not None:
            return said[0], (), said[1]
        if not text:
            return "other", (), type(exc).__name__
        verdict = classify(scan(text, self._patterns), rc=getattr(exc, "exitcode", None))
        if verdict.exclude_hosts or verdict.failure_class in (FailureClass.NODE_LOSS, FailureClass.RANK_KILLED,
                                                              FailureClass.GPU_HW):
            return "node", verdict.exclude_hosts, verdict.reason
        if verdict.failure_class is FailureClass.USER_ERROR:
            return "user", (), verdict.reason
        return "other", (), verdict.reason

    def _new_output(self, task_record: Mapping[str, Any], state: dict[str, Any]) -> bytes:
        kwargs = task_record.get("kwargs") or {}
        data = b""
        for key in ("stdout", "stderr"):
            path = _std_path(kwargs.get(key))
            if path is None:
                continue
            start = state["offsets"].get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(0, os.SEEK_END)
                    end = f.tell()
                    f.seek(max(start, end - _MAX_READ))
                    data += f.read(end - start) + b"\n"
            except OSError as exc:
                log.warning("hotspare: task %s: cannot read %s (%s); judged without it",
                            task_record.get("id"), path, exc)
                continue
            state["offsets"][path] = end
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
    except HotspareError:
        return None


def _retries(task_record: Mapping[str, Any]) -> int:
    with contextlib.suppress(AttributeError, KeyError, TypeError):
        return int(task_record["dfk"].config.retries)
    return 0


def _provider(task_record: Mapping[str, Any]) -> FailoverProvider | None:
    with contextlib.suppress(AttributeError, KeyError, TypeError):
        provider = task_record["dfk"].executors[task_record["executor"]].provider
        if isinstance(provider, FailoverProvider):
            return provider
    return None


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
