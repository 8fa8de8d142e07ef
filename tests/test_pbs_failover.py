"""End to end on the real OpenPBS bed: `hotspare launch` inside a `qsub -l select=4:ncpus=1 -l place=scatter` job,
three active hosts and one spare, ranks started the way PBS sites without PALS start them.

**How ranks start.** MPICH Hydra (Debian's ``mpiexec.hydra``) with ``-launcher rsh -launcher-exec
PREFIX/bin/pbs_tmrsh``, passed through ``--launcher-arg``. pbs_tmrsh is PBS's rsh look-alike built on the TM API:
the mother superior's MOM spawns each Hydra proxy as a task of the job on the sister MOM, so the ranks are the
job's own processes (accounted, and killed with the job) and no ssh is needed. ``pbsdsh`` was not chosen: it starts
one command on every node of the job (or on one by index) and has no notion of a hostfile, ranks or PMI, so the
supervisor could neither pick the three active hosts nor probe one host alone; Hydra over pbs_tmrsh does both with
the launcher layer as it is (its own hostfile per attempt, ``-n``/``--ppn``).

**How hosts are probed.** Through the same launcher: a probe of host H is ``mpiexec.hydra --hostfile (H) -n 1
-launcher rsh -launcher-exec pbs_tmrsh python -c pass``, i.e. a TM spawn on H's MOM. A crashed node's MOM is gone:
the spawn fails. A frozen node's MOM never answers: the probe times out. Either is a failed probe.

**Two signals.** A crash: PBS calls the node ``down`` (``pbsnodes``) within a second, and the probes fail. A freeze:
PBS never notices (its TCP is answered by the kernel), so two failed probes evict it.

**Keeping the job alive.** By default PBS kills a job whose sister MOM is lost (``$max_poll_downtime`` later, 15 s
on the bed) and requeues it (Exit_status -14): hotspare would be killed with it. The job is submitted with
``-W tolerate_node_failures=all`` (PBS's own switch for jobs that handle node loss themselves) and ``-r n``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import HOTSPARE, read_run
from hotspare.errors import EXIT_OK
from hotspare.sim.trainer import fault_free_checksum
from polling import wait_for as _wait
from testbed.pbs import Bed

#: Checkpoints every 5 steps; the fault comes after step 10.
STEPS = 20
#: Job script. The job's login shell resets PATH and the MOM gives the job no PBS_CONF_FILE: both are set here (the
#: node's own pbs.conf: its PBS_SERVER for pbsnodes/qstat). Hydra pinned to loopback, as in the SLURM bed's tests.
JOB = """#!/bin/bash
export PATH={prefix}/bin:$PATH PBS_CONF_FILE={etc}/pbs.conf.$(hostname) PYTHONPATH={pythonpath}
export UCX_NET_DEVICES=lo UCX_TLS=tcp,self
{hotspare} launch --launcher mpiexec --launcher-cmd mpiexec.hydra --launcher-rsh {prefix}/bin/pbs_tmrsh \\
  --nhosts 3 --checkpoint-dir {ckpt} --run-dir {run} --backoff 0.5 --probe-timeout 5 --scheduler-poll 2 \\
  -- {python} -m hotspare.sim.trainer --steps {steps} --ckpt-every 5 --ckpt-dir {ckpt} --step-s 0.2 --sync
echo $? > {rc}
"""


def _submit(bed: Bed, tmp: Path) -> tuple[str, Path]:
    """qsub the job (4 nodes, scattered, tolerant of node failures, not rerunnable); its id and run dir."""
    run = tmp / "run"
    script = tmp / "job.sh"
    script.write_text(JOB.format(prefix=bed.layout.prefix, etc=bed.root / "etc", pythonpath=":".join(sys.path[1:]),
                                 hotspare=HOTSPARE, ckpt=tmp / "ckpt", run=run, python=sys.executable, steps=STEPS,
                                 rc=tmp / "rc"))
    job = bed.run(["qsub", "-l", "select=4:ncpus=1", "-l", "place=scatter", "-l", "walltime=00:05:00",
                   "-W", "tolerate_node_failures=all", "-r", "n", "-j", "oe", "-o", str(tmp / "job.out"),
                   str(script)]).strip()
    return job, run




def _at_step(log: Path, step: int) -> bool:
    return log.exists() and f"step={step} ".encode() in log.read_bytes()


def _job(bed: Bed, job: str) -> dict[str, Any]:
    done = bed.exec(["qstat", "-x", "-f", "-F", "json", job], 10)
    return dict(json.loads(done.stdout)["Jobs"][job]) if done.returncode == 0 else {}


@pytest.mark.parametrize(("fault", "victim"), [("crash", "p2"), ("freeze", "p3")])
def test_pbs_node_fault_is_swapped_for_the_spare(pbs_bed: Bed, tmp_path: Path, fault: str, victim: str) -> None:
    """Crash (or freeze) a sister node of a 3+1 job under Hydra over pbs_tmrsh: exactly that node is evicted on two
    signals the ledger shows (probe + pbsnodes down, or two failed probes), p4 replaces it, the job resumes from the
    checkpoint, hotspare exits 0 and PBS records Exit_status 0."""
    tmp_path.chmod(0o755)
    job, run = _submit(pbs_bed, tmp_path)
    try:
        _wait("step 10", lambda: _at_step(run / "attempt-1.log", 10), 60)
        faulted = time.monotonic()
        getattr(pbs_bed, fault)(victim)
        rc = _wait("hotspare's exit", lambda: (tmp_path / "rc").exists() and (tmp_path / "rc").read_text(), 120)
        took = time.monotonic() - faulted
    finally:
        if fault == "freeze":
            pbs_bed.thaw(victim)  # else the job's end waits on the frozen sister; the bed is rebuilt anyway
        if not (tmp_path / "rc").exists():
            pbs_bed.exec(["qdel", "-W", "force", job], 30)
    record = _wait("the job finished", lambda: _job(pbs_bed, job).get("job_state") == "F" and _job(pbs_bed, job), 60)
    out = (tmp_path / "job.out").read_text(errors="replace") if (tmp_path / "job.out").exists() else ""
    assert int(rc) == EXIT_OK, out[-3000:]
    assert record["Exit_status"] == 0
    attempts, _, entries, seen = read_run(run)
    watch = next(o.detail for o in seen if o.kind == "watch")
    assert watch.startswith(f"scheduler asked: pbs job {job} "), watch  # --scheduler auto found PBS_JOBID
    assert [e.host.name for e in entries] == [victim]  # nobody healthy retired
    assert victim not in attempts[-1].hosts and "p4" in attempts[-1].hosts
    failed = [o for o in seen if o.kind == "probe" and o.host == victim and "answered" not in o.detail]
    said_down = [o for o in seen if o.kind == "scheduler" and o.host == victim]
    assert len(failed) >= 2 or (failed and said_down), seen
    # A crash: PBS says "down" within a second, recorded beside the failed probes; a freeze: PBS never notices.
    assert bool(said_down) is (fault == "crash"), seen
    log = Path(attempts[-1].log_path).read_text()
    assert "resumed_from=10" in log and f"checksum={fault_free_checksum(STEPS)}" in log.split()
    print(f"{fault} {victim}: fault to hotspare's exit {took:.1f} s")
