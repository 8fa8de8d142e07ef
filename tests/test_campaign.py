"""The short node-kill campaign on the real SLURM bed: one run of each fault kind, random active victims."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CAMPAIGN = Path(__file__).resolve().parent.parent / "benchmarks" / "campaign.py"


def test_short_campaign(slurm_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Crash, freeze and rank kill (victims drawn among the active nodes), then two faults that must retire nobody:
    CPU hogs on the machine (probes slow but answering) and slurmctld stopped for 20 s (the scheduler cannot be
    asked). Every run correct, no healthy node retired, no spare wasted, every run ends with the fault-free
    checksum. (ENOSPC is left to the benchmark's own runs and tests/test_supervisor.py; the silent checkpoint write
    and the 2 s freeze to tests/test_stall_bed.py.)"""
    slurm_cluster.close()  # the campaign brings up a fresh bed per run, on the same ports
    out = tmp_path / "campaign.json"
    # 20 steps (the benchmark's 40 by default): the fault at step 10, then 10 steps after the resume.
    done = subprocess.run([sys.executable, str(CAMPAIGN), "--runs", "5", "--json", str(out), "--seed", "7",
                           "--steps", "20", "--fault", "crash,freeze,rankkill,stress,ctldstop"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("runs=5 correct=5 healthy_retired=0 spares_wasted=0 "), last
    runs = json.loads(out.read_text())
    assert [r["kind"] for r in runs] == ["crash", "freeze", "rankkill", "stress", "ctldstop"]
    assert [r["evicted"] for r in runs][3:] == [[], []]
    assert all(r["checksum_ok"] for r in runs)
