"""The failover clusters' own keywords checked, and dask-jobqueue's job keywords made explicit (pure)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import dask.config
from distributed.deploy.utils import nprocesses_nthreads

#: dask-jobqueue's own default split of a job's cores into worker processes (distributed leaves it untyped).
_nprocesses_nthreads = cast(Callable[[int], tuple[int, int]], nprocesses_nthreads)

#: Seconds between questions to the scheduler while a lost job's end is not yet settled.
JUDGE_POLL_S = 2.0
#: Beyond dask's lost-worker timeout and the judging wait: how long a worker death may wait for its verdict before
#: it counts toward its tasks' allowed-failures anyway (the scheduler commands and log reads take this long at most).
VERDICT_MARGIN_S = 60.0

#: The worker option that loads :mod:`hotspare_dask.preload` in every worker.
PRELOAD = ("--preload", "hotspare_dask.preload")


def failover_settings(run_dir: str | Path, quarantine_ttl_s: float | None, max_submits: int, window_s: float,
                      judge_wait_s: float) -> tuple[Path, float | None, int, float, float]:
    """The failover keywords checked (ValueError naming the fix), ``run_dir`` made absolute."""
    if not judge_wait_s >= 0:
        raise ValueError(f"judge_wait_s={judge_wait_s!r}: give seconds >= 0 (how long a lost job's judging waits "
                         "for the scheduler to conclude)")
    if not str(run_dir).strip():
        raise ValueError("run_dir='': give the workflow directory that holds the ledger and quarantine.json")
    if quarantine_ttl_s is not None and quarantine_ttl_s <= 0:
        raise ValueError(f"quarantine_ttl_s={quarantine_ttl_s!r}: give seconds > 0, or None to keep hosts out "
                         "until readmitted by hand")
    if isinstance(max_submits, bool) or not isinstance(max_submits, int) or max_submits < 1:
        raise ValueError(f"max_submits={max_submits!r}: give a whole number >= 1 (replacements per window_s)")
    if not window_s > 0:
        raise ValueError(f"window_s={window_s!r}: give seconds > 0 (the window max_submits counts in)")
    return Path(run_dir).resolve(), quarantine_ttl_s, max_submits, window_s, judge_wait_s


def silence_settings(silence_s: float | None, silence_floor_s: float) -> tuple[float | None, float]:
    """The silence keywords checked (ValueError naming the fix): a fixed threshold or None, and the floor."""
    if silence_s is not None and not silence_s > 0:
        raise ValueError(f"silence_s={silence_s!r}: give seconds > 0 (how long a worker may miss its heartbeats "
                         "before its node is probed), or None to learn it from the heartbeats")
    if not silence_floor_s > 0:
        raise ValueError(f"silence_floor_s={silence_floor_s!r}: give seconds > 0 (the least silence that has a "
                         "worker's node probed)")
    return (None if silence_s is None else float(silence_s)), float(silence_floor_s)


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
