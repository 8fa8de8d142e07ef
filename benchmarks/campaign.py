#!/usr/bin/env python3
"""The node-kill campaign on the real SLURM test bed (root; see tests/testbed).

Each run brings up a fresh 4-node bed, runs `salloc -N4 --no-kill hotspare launch --launcher srun
--nhosts 3` (hotspare's defaults otherwise, as a new user runs it) with the synthetic trainer (``--sync``: one dead node stalls every rank), and injects one
fault once step 10 is logged: crash a node, freeze it, SIGKILL one of its ranks, or (no node at
fault) ENOSPC raised by the trainer. Four kinds stress precision instead, and must retire nobody:
``slowckpt`` (rank 0 silent for 3x the learned stall threshold after step 10, like a long checkpoint
write), ``stress`` (CPU hogs for 15 s: on this bed the nodes share the machine's CPUs, so every node's
probes are slow, not one node's), ``ctldstop`` (slurmctld stopped with SIGSTOP for 20 s, then
continued: the scheduler cannot be asked meanwhile) and ``blip`` (a node frozen for 2 s, then thawed).
The victim is drawn uniformly from the ACTIVE nodes, so
evicting active[0] blindly fails most runs. Per run it records whether exactly the right nodes were
evicted, healthy nodes retired, spares spent on faults that were not node faults, the recovery time
(fault -> first step line of the next attempt), SLURM's own detection time (node shown not
responding), and whether the final checksum equals a fault-free run's. Prints a table, writes JSON,
and last:

    runs=N correct=C healthy_retired=H spares_wasted=W median_recovery_s=R p90_recovery_s=P

Usage: sudo .venv/bin/python benchmarks/campaign.py --runs 20 --json campaign.json [--seed S] [--fault KIND,...]
       [--launcher srun|mpiexec|mpirun] [--steps N]
(default: the kinds in turn; --fault crash runs only crashes)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hotspare.record.ledger import Ledger
from hotspare.record.postmortem import build_report
from hotspare.sim.trainer import fault_free_checksum

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from testbed.cluster import Bed, end_session  # the test bed lives beside the tests

STEPS = 40
KINDS = ("crash", "freeze", "rankkill", "enospc", "slowckpt", "stress", "ctldstop", "blip")
NODE_FAULTS = ("crash", "freeze", "rankkill")
#: The learned stall threshold for this trainer (5 x 0.2 s steps, at least 2 s): slowckpt is silent 3x that.
PAUSE_S = 6.0
STRESS_S = 15.0
CTLD_STOP_S = 20.0
ACTIVE = ("n1", "n2", "n3")
#: The launcher's program and its environment (every MPI pinned to loopback: the bed's nodes share this machine).
LAUNCHERS = {
    "srun": ("srun", {}),
    "mpiexec": ("mpiexec.mpich", {"UCX_NET_DEVICES": "lo", "UCX_TLS": "tcp,self"}),
    "mpirun": ("mpirun.openmpi", {"OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo",
                                  "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}),
}


def _wait_step(log: Path, step: int, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and f"step={step} ".encode() in log.read_bytes():
            return True
        time.sleep(0.05)
    return False


def _inject(bed: Bed, kind: str, victim: str, started: list[int]) -> None:
    """Start the fault; PIDs of what it started go to ``started`` (ended by PID afterwards)."""
    if kind == "crash":
        bed.crash(victim)
    elif kind == "freeze":
        bed.freeze(victim)
    elif kind == "rankkill":
        bed.kill_rank(victim)
    elif kind == "stress":
        hog = f"import time\nend = time.monotonic() + {STRESS_S}\nwhile time.monotonic() < end: pass"
        for _ in range(2 * (os.cpu_count() or 2)):
            started.append(subprocess.Popen([sys.executable, "-c", hog], start_new_session=True).pid)
    elif kind in ("ctldstop", "blip"):
        pids = [bed.pids["slurmctld"]] if kind == "ctldstop" else bed.node_pids(victim)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(CTLD_STOP_S if kind == "ctldstop" else 2.0)
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def _slurm_detect_s(bed: Bed, victim: str, since: float, proc: subprocess.Popen[bytes]) -> float | None:
    while proc.poll() is None and time.time() - since < 120:
        state = subprocess.run(["sinfo", "-h", "-N", "-n", victim, "-o", "%T"], capture_output=True, text=True,
                               env=bed.env, check=False).stdout.strip()
        if state.endswith("*") or state.startswith("down"):
            return time.time() - since
        time.sleep(0.25)
    return None


def one_run(index: int, kind: str, victim: str, root: Path, *, launcher: str = "srun",
            steps: int = STEPS, slurmd_timeout_s: int | None = None) -> dict[str, object]:
    work = root / f"run-{index}"
    bed = Bed.up(root / "bed", slurmd_timeout_s=slurmd_timeout_s) if slurmd_timeout_s else Bed.up(root / "bed")
    proc = None
    started: list[int] = []
    try:
        run, ckpt = work / "run", work / "ckpt"
        extra = {"enospc": ["--enospc-at", "10"], "slowckpt": ["--pause-at", "10", "--pause-s", str(PAUSE_S)]}.get(kind, [])
        program, mpi_env = LAUNCHERS[launcher]
        cmd = ["salloc", "-N4", "--no-kill", str(Path(sys.executable).with_name("hotspare")), "launch",
               "--launcher", launcher, "--launcher-cmd", program, "--nhosts", "3", "--checkpoint-dir", str(ckpt), "--run-dir", str(run),
               "--", sys.executable, "-m", "hotspare.sim.trainer",
               "--steps", str(steps), "--ckpt-every", "5", "--ckpt-dir", str(ckpt), "--step-s", "0.2", "--sync",
               *extra]
        work.mkdir(parents=True, exist_ok=True)
        with (work / "hotspare.out").open("wb") as out:
            proc = subprocess.Popen(cmd, env={**bed.env, **mpi_env}, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        # ENOSPC is raised by the trainer itself at step 10 (before it prints it); slowckpt pauses after it.
        if not _wait_step(run / "attempt-1.log", 5 if kind == "enospc" else 10, proc):
            said = (work / "hotspare.out").read_text(errors="replace").strip().splitlines()[-8:]
            raise RuntimeError(f"run {index}: the job never got going; hotspare said:\n" + "\n".join(said))
        t_fault = time.time()
        _inject(bed, kind, victim, started)
        detect = _slurm_detect_s(bed, victim, t_fault, proc) if kind in ("crash", "freeze") else None
        proc.wait(timeout=300)
        if kind == "freeze":
            bed.thaw(victim)
        return _score(kind, victim, run, t_fault=t_fault, detect=detect, rc=proc.returncode, steps=steps)
    finally:
        for pid in started:  # the stress hogs end by themselves; this is for a campaign interrupted early
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        if proc is not None:
            end_session(proc)
        bed.down()
        shutil.rmtree(work, ignore_errors=True)


def _score(kind: str, victim: str, run: Path, *, t_fault: float, detect: float | None, rc: int,
           steps: int) -> dict[str, object]:
    db = sqlite3.connect(run / "ledger.sqlite")
    attempts = db.execute("SELECT number, first_progress_s, log_path FROM attempts ORDER BY number").fetchall()
    evicted = {r[0] for r in db.execute("SELECT host FROM quarantine")}
    db.close()
    node_fault = kind in NODE_FAULTS
    expected = {victim} if node_fault else set()
    # Recovery is timed from the injected node fault; ENOSPC happens inside the trainer at an
    # unmeasured moment, so it has no recovery figure.
    recovery = attempts[1][1] - t_fault if node_fault and len(attempts) > 1 and attempts[1][1] else None
    words = Path(attempts[-1][2]).read_text(errors="replace").split()
    ledger = Ledger.open(run)
    try:
        incidents = build_report(ledger).incidents
    finally:
        ledger.close()
    # Where the recovery went, by the ledger's clock: last progress -> attempt end -> decision -> next launch ->
    # first progress (the goodput simulation takes detection and decision from here).
    first = incidents[0] if incidents else None
    phases = {k: getattr(first, k) if first else None
              for k in ("detect_s", "decide_s", "relaunch_s", "resume_s", "recover_s", "lost_node_s")}
    return {
        "kind": kind, "victim": victim if node_fault else None, "rc": rc, "attempts": len(attempts),
        "evicted": sorted(evicted), "correct": evicted == expected and rc == 0,
        "healthy_retired": len(evicted - expected), "spares_wasted": 0 if node_fault else len(evicted),
        "recovery_s": None if recovery is None else round(recovery, 2),
        "slurm_detect_s": None if detect is None else round(detect, 2),
        "checksum_ok": f"checksum={fault_free_checksum(steps)}" in words,
        "ledger": phases,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path, default=Path("campaign.json"))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--steps", type=int, default=STEPS,
                        help=f"trainer steps per run (default {STEPS}; the fault comes at step 10, so more than 10)")
    parser.add_argument("--slurmd-timeout", type=int, default=None,
                        help="the bed's SlurmdTimeout (default: the test bed's; SLURM's own default is 300)")
    parser.add_argument("--launcher", choices=sorted(LAUNCHERS), default="srun",
                        help="the job's launcher (MPI pinned to loopback)")
    parser.add_argument("--fault", default=",".join(KINDS),
                        help=f"fault kinds, comma-separated, run in turn (default: all of {', '.join(KINDS)})")
    args = parser.parse_args()
    if args.steps <= 10:
        parser.error(f"--steps {args.steps}: the fault comes at step 10; give more")
    kinds = [k.strip() for k in args.fault.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        parser.error(f"unknown fault kind(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(KINDS)}")
    rng = random.Random(args.seed)  # picks victims, not secrets
    root = Path(tempfile.mkdtemp(prefix="hotspare-campaign-"))
    root.chmod(0o755)  # munged needs every directory above its socket traversable
    results = []
    try:
        for i in range(args.runs):
            kind, victim = kinds[i % len(kinds)], rng.choice(ACTIVE)
            results.append(one_run(i, kind, victim, root, launcher=args.launcher, steps=args.steps,
                                   slurmd_timeout_s=args.slurmd_timeout))
            r = results[-1]
            r.update(launcher=args.launcher, slurmd_timeout_s=args.slurmd_timeout)
            print(f"{i + 1:>3} {kind:<9} {victim if kind != 'enospc' else '-':<4} rc={r['rc']:<3} evicted="
                  f"{','.join(r['evicted']) or '-':<6} correct={r['correct']!s:<5} recovery_s={r['recovery_s']} "
                  f"slurm_detect_s={r['slurm_detect_s']} checksum_ok={r['checksum_ok']}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    args.json.write_text(json.dumps(results, indent=1))
    recoveries = [r["recovery_s"] for r in results if r["recovery_s"] is not None]
    median = statistics.median(recoveries) if recoveries else float("nan")
    p90 = statistics.quantiles(recoveries, n=10, method="inclusive")[-1] if len(recoveries) >= 2 else (
        recoveries[0] if recoveries else float("nan"))
    for kind in kinds:
        mine = [r for r in results if r["kind"] == kind]
        phases = [r["ledger"] for r in mine if r["ledger"].get("recover_s") is not None and kind in NODE_FAULTS]
        split = ""
        if phases:
            split = " " + " ".join(f"{k}={statistics.median(p[k] for p in phases):.2f}"
                                   for k in ("detect_s", "decide_s", "relaunch_s", "resume_s"))
        print(f"{kind:<9} runs={len(mine)} correct={sum(bool(r['correct']) for r in mine)} "
              f"healthy_retired={sum(int(r['healthy_retired']) for r in mine)}{split}")
    detects = [r["slurm_detect_s"] for r in results if r["slurm_detect_s"] is not None]
    if detects:
        print(f"SLURM marks the node not responding after a median {statistics.median(detects):.1f} s")
    print(f"runs={len(results)} correct={sum(bool(r['correct']) for r in results)} "
          f"healthy_retired={sum(int(r['healthy_retired']) for r in results)} "
          f"spares_wasted={sum(int(r['spares_wasted']) for r in results)} median_recovery_s={median:.1f} "
          f"p90_recovery_s={p90:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
