"""Failing over before the scheduler notices, on the real SLURM bed.

The bed here runs with SLURM's default ``SlurmdTimeout=300``: the controller does not call a dead or frozen node
NOT_RESPONDING for five minutes, so the scheduler's word never comes during the test. The supervisor must find the
node itself: output stalls, the active hosts are probed twice (1 s apart), and the node that misses both is swapped
for the spare (reason ``probed``); the job resumes there. And the faults that look like a dead node but are not
(a long silent checkpoint write, a node frozen for 2 s) must retire nobody.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import HOTSPARE, read_run
from hotspare.errors import EXIT_OK
from hotspare.sim.trainer import fault_free_checksum
from testbed.cluster import Bed, end_session

STEPS = 30


@pytest.fixture
def slow_scheduler_bed(slurm_cluster) -> Iterator[Bed]:  # type: ignore[no-untyped-def]
    """A bed whose controller takes SLURM's default 300 s to notice a silent node (on the session bed's ports, so
    the session bed is closed first; the next test that wants it gets it rebuilt)."""
    slurm_cluster.close()
    root = Path(tempfile.mkdtemp(prefix="hotspare-slowbed-"))
    root.chmod(0o755)  # munged needs every directory above its socket traversable
    bed = Bed.up(root / "bed", slurmd_timeout_s=300)
    try:
        yield bed
    finally:
        bed.down()
        shutil.rmtree(root, ignore_errors=True)


#: The launchers tried here: the program and the environment that pins it to loopback.
MPI = {
    "srun": ("srun", {}),
    "mpiexec": ("mpiexec.mpich", {"UCX_NET_DEVICES": "lo", "UCX_TLS": "tcp,self"}),
    "mpirun": ("mpirun.openmpi", {"OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo",
                                  "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}),
}

#: Inside the allocation the job also carries PBS's variables (PBS_JOBID, PBS_NODEFILE, as slurm-wlm-torque's
#: qsub would give it) and is told ``--scheduler pbs``, so the supervisor asks ``pbsnodes`` (slurm-wlm-torque's)
#: about its nodes, as on a PBS machine. SLURM's own variables stay: Hydra starts its proxies through srun.
AS_PBS = ['bash', '-c', 'export PBS_JOBID="$SLURM_JOB_ID" PBS_NODEFILE="$(generate_pbs_nodefile)"; exec "$@"',
          'as-pbs']


def _run_with_fault(bed: Bed, tmp: Path, fault: str, victim: str, extra: list[str], *, launcher: str = "srun",
                    pbs: bool = False) -> tuple[int, str, Path]:
    run, ckpt = tmp / "run", tmp / "ckpt"
    program, env = MPI[launcher]
    cmd = ["salloc", "-N4", "--no-kill", *(AS_PBS if pbs else []), str(HOTSPARE), "launch", "--launcher", launcher,
           "--launcher-cmd", program, "--nhosts", "3",
           "--checkpoint-dir", str(ckpt), "--run-dir", str(run), "--probe-timeout", "5",
           *(["--scheduler", "pbs"] if pbs else []), "--", sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(STEPS), "--ckpt-every", "5",
           "--ckpt-dir", str(ckpt), "--step-s", "0.2", "--sync", *extra]
    proc = subprocess.Popen(cmd, env={**bed.env, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    frozen: list[int] = []
    try:
        log = run / "attempt-1.log"
        for _ in range(1200):  # bounded: 60 s for the job to reach step 10
            if proc.poll() is not None or (log.exists() and b"step=10 " in log.read_bytes()):
                break
            time.sleep(0.05)
        if fault == "crash":
            bed.crash(victim)
        elif fault in ("freeze", "blip"):
            frozen = bed.node_pids(victim)
            for pid in frozen:
                os.kill(pid, signal.SIGSTOP)
            if fault == "blip":
                time.sleep(2.0)
                for pid in frozen:
                    os.kill(pid, signal.SIGCONT)
        out, _ = proc.communicate(timeout=240)
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        end_session(proc)  # salloc and the supervisor under it (their own session)
    return proc.returncode, out.decode(errors="replace"), run


@pytest.mark.parametrize("case", [
    ("crash", "n2", "srun", False), ("freeze", "n3", "srun", False),
    ("freeze", "n2", "mpirun", False),  # Open MPI's daemons on the frozen node stay silent too
    ("freeze", "n3", "mpiexec", True),  # Hydra in a PBS-looking job (pbsnodes asked); a crash Hydra sees itself
], ids=lambda c: f"{c[0]}-{c[2]}{'-pbs' if c[3] else ''}")
def test_a_dead_node_is_swapped_before_the_scheduler_notices(slow_scheduler_bed: Bed, tmp_path: Path,
                                                             case: tuple[str, str, str, bool]) -> None:
    fault, victim, launcher, pbs = case
    code, out, run = _run_with_fault(slow_scheduler_bed, tmp_path, fault, victim, [], launcher=launcher, pbs=pbs)
    assert code == EXIT_OK, out[-3000:]
    attempts, _, entries, seen = read_run(run)
    watch = next(o.detail for o in seen if o.kind == "watch")
    assert watch.startswith("scheduler asked: pbs job " if pbs else "scheduler asked: slurm job "), watch
    assert not any(o.kind == "scheduler-error" for o in seen), seen  # pbsnodes/scontrol answered each time
    assert [(e.host.name, e.reason) for e in entries] == [(victim, "probed")]
    assert attempts[0].stopped_by == "scheduler"  # ended by the stall rule, not by the launcher giving up
    stalled = [o for o in seen if o.kind == "probe" and o.host == victim and "output stalled" in o.detail]
    assert len(stalled) >= 2  # two signals, each recorded with its time
    assert not any(o.kind == "scheduler" and o.host == victim for o in seen)  # the scheduler never said a word
    assert victim not in attempts[-1].hosts and "n4" in attempts[-1].hosts
    assert f"checksum={fault_free_checksum(STEPS)}" in Path(attempts[-1].log_path).read_text().split()


@pytest.mark.parametrize(("fault", "extra"), [("slowckpt", ["--pause-at", "10", "--pause-s", "6"]), ("blip", [])])
def test_silence_that_is_no_dead_node_retires_nobody(slow_scheduler_bed: Bed, tmp_path: Path, fault: str,
                                                     extra: list[str]) -> None:
    """Rank 0 silent for 6 s (3x the learned stall threshold: a long checkpoint write), or n2 frozen for 2 s then
    thawed: the stall is looked at, every host answers, nobody is retired, one attempt succeeds."""
    code, out, run = _run_with_fault(slow_scheduler_bed, tmp_path, fault, "n2", extra)
    assert code == EXIT_OK, out[-3000:]
    attempts, _, entries, seen = read_run(run)
    assert entries == [] and len(attempts) == 1
    if fault == "slowckpt":  # 6 s of silence is a stall: it was looked at, and everyone answered
        assert any(o.kind == "stall" and "all answered" in o.detail for o in seen), seen
    assert f"checksum={fault_free_checksum(STEPS)}" in Path(attempts[-1].log_path).read_text().split()
