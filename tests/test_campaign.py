"""The short node-kill campaign on the real SLURM bed: one run of each fault kind, random active victims."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CAMPAIGN = Path(__file__).resolve().parent.parent / "benchmarks" / "campaign.py"


def test_short_campaign(slurm_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Crash, freeze and rank kill (victims drawn among the active nodes): every run correct, no healthy node
    retired, and every run ends with the fault-free checksum. (The campaign's fourth kind, ENOSPC, is left to the
    benchmark's own runs and tests/test_supervisor.py, for the suite's time budget.)"""
    slurm_cluster.close()  # the campaign brings up a fresh bed per run, on the same ports
    out = tmp_path / "campaign.json"
    # 20 steps (the benchmark's 40 by default): the fault at step 10, then 10 steps after the resume.
    done = subprocess.run([sys.executable, str(CAMPAIGN), "--runs", "3", "--json", str(out), "--seed", "7",
                           "--steps", "20"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("runs=3 correct=3 healthy_retired=0 spares_wasted=0 "), last
    runs = json.loads(out.read_text())
    assert [r["kind"] for r in runs] == ["crash", "freeze", "rankkill"]
    assert all(r["checksum_ok"] for r in runs)
