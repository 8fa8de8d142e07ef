"""``hotspare demo``: a failover end to end on an embedded local allocation.

Four simulated hosts (three active, one spare) run the synthetic trainer under
the ``local`` launcher. Mid-run the demo crashes one active host chosen at
random (not always the first: blind rotation would pass that by luck) by
SIGKILLing its process group, then shows what the supervisor did: the swap
and its evidence, the resume step, and a final checksum equal to a
fault-free run's.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

from hotspare.decide.policy import Budgets
from hotspare.decide.pool import Pool
from hotspare.errors import InputError
from hotspare.hosts import Host
from hotspare.record.ledger import Ledger
from hotspare.record.postmortem import build_report, render
from hotspare.sim.trainer import fault_free_checksum
from hotspare.supervisor import RunConfig, Supervisor

HOSTS = ("nid0001", "nid0002", "nid0003", "nid0004")
STEPS = 60
CKPT_EVERY = 10
#: The crash comes once this step is printed.
CRASH_AT = 25
#: Bound on waiting for the trainer to reach CRASH_AT.
WAIT_S = 60.0


def crash_when(log: Path, victim: str, *, step: int, timeout_s: float = WAIT_S) -> threading.Thread:
    """A thread that SIGKILLs ``victim``'s process group once ``log`` shows ``step=<step>``."""
    marker = f"\nstep={step} ".encode()  # the trainer prints "step=N loss=..."
    pids = log.with_suffix(".pids")

    def crash() -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if pids.exists() and log.exists() and marker in log.read_bytes():
                with contextlib.suppress(ProcessLookupError):  # the attempt ended first: nothing to crash
                    os.killpg(json.loads(pids.read_text())[victim], signal.SIGKILL)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=crash, name="hotspare-demo-crash", daemon=True)
    thread.start()
    return thread


def run_demo(workdir: Path, *, seed: int | None = None, out: TextIO = sys.stdout) -> bool:
    """Run the demo in ``workdir``; True when the run recovered with the fault-free checksum."""
    rng = random.Random(seed)  # noqa: S311 -- picks the demo's victim, not a secret
    ckpt = workdir / "ckpt"
    config = RunConfig(
        command=(sys.executable, "-P", "-m", "hotspare.sim.trainer", "--steps", str(STEPS),
                 "--ckpt-every", str(CKPT_EVERY), "--ckpt-dir", str(ckpt), "--step-s", "0.03"),
        allocation=HOSTS, nhosts=3, launcher="local", ppn=2, checkpoint_dir=str(ckpt),
        idle_timeout_s=30, grace_s=2, probe_timeout_s=5, budgets=Budgets(backoff_base_s=0.5, backoff_max_s=2),
    )
    victim = rng.choice(Pool.split([Host(h) for h in HOSTS], 3).active).raw
    out.write(f"allocation {', '.join(HOSTS)}: 3 active, 1 spare. "
              f"{victim} will crash once step {CRASH_AT} is logged.\n\n")

    def on_attempt(number: int, pool: Pool, log: Path) -> None:
        if number == 1:
            crash_when(log, victim, step=CRASH_AT)

    code = Supervisor(config, workdir / "run", on_attempt=on_attempt).run()
    ledger = Ledger.open(workdir / "run")
    try:
        report = build_report(ledger)
    finally:
        ledger.close()
    out.write(render(report))
    last_log = Path(report.attempts[-1].log_path).read_text(errors="replace").split()
    got = next((w.split("=", 1)[1] for w in reversed(last_log) if w.startswith("checksum=")), None)
    want = fault_free_checksum(STEPS)
    same = got == want
    out.write(f"\nfinal checksum {got}\nfault-free      {want}\n")
    out.write(f"{'equal' if same else 'DIFFERENT'}; exit code {code}\n")
    failed_over = len(report.attempts) >= 2 and victim in report.attempts[0].hosts
    return same and code == 0 and failed_over


def main(keep: bool = False, directory: str | None = None, out: TextIO = sys.stdout) -> int:
    """Run the demo in ``directory`` (kept), or in a temporary directory deleted afterwards unless ``keep``."""
    if directory is not None:
        workdir = Path(directory)
        if workdir.exists() and any(workdir.iterdir()):
            raise InputError(directory, "not empty: the demo writes its run and checkpoints there")
        workdir.mkdir(parents=True, exist_ok=True)
        keep = True
    else:
        workdir = Path(tempfile.mkdtemp(prefix="hotspare-demo-"))
    ok = run_demo(workdir, out=out)
    run = workdir / "run"
    if keep:
        out.write(f"run directory {run}\n  report it:  hotspare postmortem {run}\n"
                  f"  draw it:    hotspare postmortem {run} --plot run.png\n")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        out.write(f"run directory {run} deleted (keep it with --keep or --dir DIR, then "
                  "`hotspare postmortem DIR` and `--plot run.png` read it)\n")
    return 0 if ok else 1
