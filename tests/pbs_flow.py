"""Run a workflow script inside the PBS bed and crash the node it names: the harness of test_dask_pbs.py and
test_parsl_pbs.py.

Everything that talks to PBS, or that the bed's nodes call back to (a Dask scheduler, a Parsl interchange), runs
in the bed's network namespace, so the workflow is a subprocess there (``Bed.argv``), bound to the server host's
address. It and the test speak through files in its work directory: it writes ``victim.json`` once its workers
are busy, the test crashes that node (``Bed.crash``) and touches ``crashed``, and the workflow writes
``result.json`` before it exits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from testbed.pbs import Bed
from testbed.pbs_layout import HEAD

ROOT = Path(__file__).resolve().parent.parent


def _wait_for_file(path: Path, proc: subprocess.Popen[bytes], timeout_s: float) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            return path
        if proc.poll() is not None:
            raise AssertionError(f"the workflow exited {proc.returncode} before writing {path.name}:\n"
                                 f"{(path.parent / 'flow.log').read_text()[-3000:]}")
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout_s} s: {path.name}")


def _read_json(path: Path, timeout_s: float = 10.0) -> dict[str, Any]:
    """``path``'s JSON once it is whole: the workflow writes it while the test may already see it (read empty
    once in a full run)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return dict(json.loads(path.read_text()))
        except ValueError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def run_flow(bed: Bed, script: Path, work: Path, *args: str, start_s: float = 150,
             timeout_s: float = 240, fault: str = "crash") -> tuple[dict[str, Any], float]:
    """Run ``script WORK ADDRESS ARGS...`` in the bed, crash (or, ``fault="freeze"``, freeze) the node it names;
    (its result, the seconds from its start to its exit). Its process group is killed on any failure; the bed's
    own clean-up then deletes every PBS job it left (``Bed.settled`` qdels them), and a crashed or frozen node has
    the bed rebuilt (a frozen one is thawed first, whatever happened)."""
    argv = [sys.executable, str(script), str(work), str(bed.layout.address(HEAD)), *args]
    # The workers import hotspare_dask.preload / hotspare_parsl through the jobs' environment (qsub -V).
    env = dict(bed.env, PYTHONPATH=os.pathsep.join(str(ROOT / d) for d in ("src", "adapters", "tests")))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # Parsl's interchange.py and pool
    started = time.monotonic()
    with (work / "flow.log").open("wb") as log:
        proc = subprocess.Popen(bed.argv(argv), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work,
                                start_new_session=True)
        frozen = None
        try:
            victim = _read_json(_wait_for_file(work / "victim.json", proc, start_s))["victim"]
            if fault == "freeze":
                bed.freeze(victim)
                frozen = victim
            else:
                bed.crash(victim)
            (work / "crashed").touch()
            proc.wait(timeout=timeout_s)
            assert proc.returncode == 0, (work / "flow.log").read_text()[-3000:]
            return dict(json.loads((work / "result.json").read_text())), time.monotonic() - started
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
            if frozen is not None:
                bed.thaw(frozen)
