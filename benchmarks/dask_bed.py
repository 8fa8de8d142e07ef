"""Shared by the Dask benchmarks (dask_overhead.py, dask_recovery.py): the SLURM test bed, a plain dask-jobqueue
``SLURMCluster`` or our ``FailoverSLURMCluster`` on it with the same job shape, and what the figures are recorded
with (the code measured, the JSON file).

Not a benchmark itself. The bed uses fixed ports and is shared: run the benchmarks under
``flock /tmp/hotspare-bed.lock``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dask_jobqueue.slurm import SLURMCluster

import hotspare_dask
from hotspare_dask import FailoverSLURMCluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from testbed.cluster import Bed  # the test bed lives beside the tests

__all__ = ["KINDS", "LOOPBACK", "Bed", "bed_root", "code_measured", "job_node", "make_cluster", "remove_bed",
           "run_in_tmp", "write_json"]

REPO = Path(__file__).resolve().parent.parent
#: The two sides of every comparison, in the order runs alternate.
KINDS = ("plain", "failover")
#: The scheduler and its dashboard on loopback: the bed's nodes share this host's network.
LOOPBACK = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}


def bed_root(tag: str) -> Path:
    """Where a benchmark's bed lives: not under a 0700 dir (munged needs every dir above its socket traversable)."""
    return Path(tempfile.gettempdir()) / f"hotspare-{tag}-bed-{os.getpid()}"


@contextlib.contextmanager
def run_in_tmp(prefix: str) -> Iterator[Path]:
    """A temporary working directory, made the cwd while the runs go (sbatch and dask write stray files there,
    never into the checkout); removed afterwards."""
    back = Path.cwd()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(back)


def make_cluster(kind: str, bed: Bed, work: Path, *, cores: int, processes: int, exclusive: bool,
                 spare_jobs: int = 0) -> Any:
    """A plain ``SLURMCluster`` or a ``FailoverSLURMCluster`` with the same job shape, on ``bed``, no jobs yet; the
    failover one keeps ``spare_jobs`` spares (plain dask-jobqueue has none)."""
    # dask-jobqueue runs sbatch/squeue/scancel with this process's environment.
    os.environ["SLURM_CONF"] = bed.env["SLURM_CONF"]
    shape: dict[str, Any] = {
        "cores": cores, "processes": processes, "memory": "500MB", "walltime": "00:30:00",
        "job_extra_directives": ["--exclusive"] if exclusive else [], "log_directory": str(work / "logs"),
        "scheduler_options": dict(LOOPBACK),
    }
    if kind == "plain":
        return SLURMCluster(**shape)
    if kind == "failover":
        return FailoverSLURMCluster(run_dir=work / "wf", spare_jobs=spare_jobs, **shape)
    raise ValueError(f"kind={kind!r}: give one of {', '.join(KINDS)}")


def job_node(bed: Bed, job_id: str) -> dict[str, str]:
    """SLURM's view of a batch job: its NodeList, state and how often it was requeued (Restarts)."""
    done = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)], capture_output=True, text=True,
                          env=bed.env, timeout=30, check=False)
    fields = dict(f.split("=", 1) for f in done.stdout.split() if "=" in f)
    return {k: fields.get(k, "") for k in ("NodeList", "JobState", "Restarts")}


def code_measured() -> dict[str, Any]:
    """Which hotspare_dask was imported (the checkout, or an export of a commit on PYTHONPATH), the checkout's
    HEAD and its uncommitted changes under src/ and adapters/: the figures belong to that code."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=60,
                              check=False)
        return done.stdout.strip()

    return {"hotspare_dask": str(Path(hotspare_dask.__file__).parent), "head": git("rev-parse", "--short", "HEAD"),
            "uncommitted": git("status", "--porcelain", "--", "src", "adapters").splitlines(),
            "pythonpath": os.environ.get("PYTHONPATH", "")}


def remove_bed(bed: Bed | None, root: Path) -> None:
    """Stop ``bed`` (its own PIDs only) and delete its directory."""
    if bed is not None:
        bed.down()
    shutil.rmtree(root, ignore_errors=True)


def write_json(path: Path | None, data: dict[str, Any]) -> None:
    """The raw figures to ``path`` (temp file + rename), when a path was given."""
    if path is None:
        return
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(path)
