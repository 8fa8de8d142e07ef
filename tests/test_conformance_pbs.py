"""dask-jobqueue's own ``-E pbs`` tests against the real OpenPBS bed, run by conformance/dask_jobqueue/run_pbs.sh
with upstream's PBSCluster and then with FailoverPBSCluster, compared by its compare.py: every upstream test that
passes with the plain class passes with ours."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from testbed.pbs import Bed

SCRIPT = Path(__file__).resolve().parent.parent / "conformance" / "dask_jobqueue" / "run_pbs.sh"
#: Both legs took ~70 s on the session's bed (2 cores): a bound on a hung leg, not a target.
BOUND_S = 360
COUNTS = re.compile(r"^pbs\s+(plain|failover)\s+(.*)$", re.MULTILINE)


def _stop(proc: subprocess.Popen[str]) -> str:
    """End the script's process group: SIGTERM first (its trap deletes what the legs left), then SIGKILL."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        return proc.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate(timeout=30)[0]


def _legs(tmp_path: Path) -> str:
    """Each leg's (and rerun's) failed tests with their messages (pytest's -r lines), then the log's tail."""
    logs = sorted(tmp_path.glob("hotspare-jobqueue-pbs.*/results/**/*.log"))
    parts = []
    for log in logs:
        text = log.read_text(errors="replace")
        failed = [line for line in text.splitlines() if line.startswith(("FAILED ", "ERROR "))]
        parts.append(f"--- {log.name}:\n" + "".join(f"{line}\n" for line in failed) + text[-1500:])
    return "\n".join(parts)


def test_dask_jobqueues_own_pbs_tests_pass_the_same_with_failover(pbs_bed: Bed, tmp_path: Path) -> None:
    """run_pbs.sh on the session's bed (``--bed``: no boot of its own; it deletes the jobs each leg leaves): exit
    0, both legs ran tests, and compare.py found no test that passed plain and not failover."""
    pbs_bed.save()  # bed.json: the script drives this bed through `python -m testbed pbs exec`
    env = dict(os.environ, HOTSPARE_PYTHON=sys.executable, TMPDIR=str(tmp_path),
               # This session's PBS tests run under whatever lock its caller took (`flock FILE pytest`: this process
               # holds the lock through the inherited descriptor); the script's own flock of the same file, a new
               # open file description, would wait for that caller forever.
               HOTSPARE_PBS_LOCKED="1")
    started = time.monotonic()
    proc = subprocess.Popen(["bash", str(SCRIPT), "--keep", "--bed", str(pbs_bed.root)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    try:
        out = proc.communicate(timeout=BOUND_S)[0]
    except subprocess.TimeoutExpired:
        raise AssertionError(f"run_pbs.sh not done within {BOUND_S} s:\n{_stop(proc)}\n{_legs(tmp_path)}") from None
    took_s = time.monotonic() - started
    assert proc.returncode == 0, f"{out}\n{_legs(tmp_path)}"
    counts = {classes: dict(kv.split("=") for kv in line.split()) for classes, line in COUNTS.findall(out)}
    assert set(counts) == {"plain", "failover"}, out
    assert int(counts["plain"].get("passed", 0)) > 0, out  # a leg that ran nothing would compare as "none"
    assert "passed plain, not failover: none" in out.splitlines(), out
    print(f"plain {counts['plain']}, failover {counts['failover']}; {took_s:.0f} s")
