"""The Dask examples run as a user runs them, on the real SLURM bed (sbatch; slurm-wlm-torque's qsub for PBS), with
tiny sizes: they exit 0 and print where each batch job ran, where the tasks ran and the (empty) quarantine."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TASKS = 10


@pytest.mark.parametrize("argv", [["dask_slurm.py"], ["dask_pbs.py", "--torque"]], ids=["slurm", "pbs-torque"])
def test_the_example_runs_its_tasks_on_the_bed(slurm_bed, tmp_path: Path, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    """2 jobs of one core, 10 tasks, scheduler on loopback: every task done on a bed node, each job's node
    reported, nothing quarantined."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / argv[0]), *argv[1:], "--jobs", "2", "--tasks", str(TASKS), "--task-s", "0.05",
         "--cores", "1", "--memory", "200MB", "--walltime", "00:05:00", "--run-dir", str(tmp_path / "wf"),
         "--host", "127.0.0.1", "--timeout", "60"],
        cwd=tmp_path, env=slurm_bed.env, capture_output=True, text=True, timeout=120, check=False)
    out = done.stdout
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = re.findall(r"^job \S+ \(batch job \d+\): (n\d)$", out, re.MULTILINE)
    assert len(jobs) == 2 and set(jobs) <= set(slurm_bed.nodes), out
    counts = re.search(r"^tasks: (\d+) done on (.*)$", out, re.MULTILINE)
    assert counts is not None and int(counts.group(1)) == TASKS, out
    assert {n.split()[0] for n in counts.group(2).split(", ")} <= set(jobs), out
    assert "quarantine: empty" in out
