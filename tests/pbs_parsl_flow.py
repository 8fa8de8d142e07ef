"""Parsl workflows run INSIDE the PBS bed's network namespace (``Bed.argv``), driven by tests/test_parsl_pbs.py:
an executor (interchange on the server host's address) over ``FailoverProvider(PBSProProvider(...))`` with one
spare per block, given ``hosts=`` (the bed's nodes), real qsub.

``python pbs_parsl_flow.py WORK ADDRESS HOSTS [MODE]``; the first try's node to crash goes to ``WORK/victim.json``,
the script waits for ``WORK/crashed`` (the test crashes that node with ``Bed.crash``), then for the outcome, and
writes what it saw to ``WORK/result.json``:

- ``htex`` (the default): a HighThroughputExecutor, 1+1-node blocks; one task writes ``WORK/markers/started-<host>``
  and sleeps; the victim is that host, the block's lead, where Parsl's manager runs;
- ``mpi``: an MPIExecutor, 2+1-node blocks; one MPI bash app (:func:`hotspare_parsl.mpi_launch`, MPICH Hydra over
  pbs_tmrsh) runs the synthetic trainer on the block's two active nodes under the supervisor; the victim is the
  active sister (not the lead) once the trainer passed step 10. After the task, the block is scaled in when idle
  and a second, short MPI task brings up the next block.

Every wait is bounded; the DFK is cleaned up (its blocks cancelled, the interchange stopped) whatever happens.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import parsl
from parsl.config import Config
from parsl.executors import HighThroughputExecutor, MPIExecutor
from parsl.launchers import SimpleLauncher
from parsl.providers import PBSProProvider

from hotspare import Ledger
from hotspare_parsl import FailoverProvider, block_error_handler, retry_handler
from hotspare_parsl.layout import read_record
from polling import wait_for

#: Seconds between Parsl's status polls of the blocks (PBSProProvider fixes 60 s; a lost block is only judged at
#: a poll).
POLL_S = 2
HEARTBEAT_S = 2
#: The MPI task's trainer: checkpoints every 5 steps, the crash after step 10 (as in test_parsl_slurm).
MPI_STEPS = 20


class PolledPBSProProvider(PBSProProvider):
    @property
    def status_polling_interval(self) -> int:
        return POLL_S


@parsl.python_app
def work(marker_dir: str, sleep_s: float) -> str:
    # Imported here: Parsl sends an app defined in __main__ by value, without this module's imports.
    import socket  # noqa: PLC0415
    import time  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    host = socket.gethostname()
    (Path(marker_dir) / f"started-{host}").touch()
    time.sleep(sleep_s)
    return host


@parsl.bash_app
def train(ckpt: str, steps: int, rsh: str, *, stdout: str = "", stderr: str = "",
          parsl_resource_specification: dict[str, int] | None = None) -> str:
    import sys  # noqa: PLC0415

    from hotspare_parsl import mpi_launch  # noqa: PLC0415

    # PBS without PALS: Hydra's proxies start through pbs_tmrsh, as tasks of the block's job on its sister MOMs.
    return mpi_launch([sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(steps), "--ckpt-every", "5",
                       "--ckpt-dir", ckpt, "--step-s", "0.2", "--sync"],
                      launcher="mpiexec", launcher_cmd="mpiexec.hydra", launcher_rsh=rsh, checkpoint_dir=ckpt,
                      options=["--backoff", "0.5", "--probe-timeout", "5", "--scheduler-poll", "2"])


def qstat_all() -> dict[str, Any]:
    done = subprocess.run(["qstat", "-x", "-f", "-F", "json"], capture_output=True, text=True, timeout=30,
                          check=False)
    return dict(json.loads(done.stdout).get("Jobs", {})) if done.returncode == 0 else {}


def jobs_seen() -> dict[str, dict[str, Any]]:
    """PBS's record of every block: the attributes the tests read."""
    keys = ("job_state", "exec_host", "Exit_status", "comment", "run_count", "Resource_List",
            "tolerate_node_failures")
    return {j: {k: v.get(k) for k in keys} for j, v in qstat_all().items()}


def blocks_seen(provider: FailoverProvider) -> dict[str, dict[str, Any]]:
    """The workflow's record of every block."""
    return {r.job_id: {"hosts": list(r.hosts), "excluded": list(r.excluded), "verdict": r.verdict,
                       "ended": r.ended_s is not None} for r in provider.record.jobs()}


def quarantined(provider: FailoverProvider) -> list[list[str]]:
    return [[e.host.raw, e.reason.value, e.detail] for e in provider.quarantine.entries()]


#: The bed's nodes share one network namespace, so every node's address is on the local ``lo``: MPICH Hydra 5 (the
#: venv's ``mpich`` wheel, first on the block's PATH) then takes every host for the one it runs on and forks its
#: proxy there instead of calling the remote shell (seen on the bed: both ranks on the lead, the "crashed" sister's
#: rank never died, and a probe of the dead node passed). Debian's Hydra 4.0.2 compares host names only. Off,
#: every proxy starts through pbs_tmrsh, on its node, as on a real cluster.
NO_AUTOFORK = "export HYDRA_LAUNCHER_AUTOFORK=0\n"


def provider_for(work: Path, hosts: list[str], nodes_per_block: int, worker_init: str = "") -> FailoverProvider:
    venv_bin = Path(sys.executable).parent
    pbs_bin = Path(shutil.which("qsub") or "qsub").parent
    inner = PolledPBSProProvider(
        nodes_per_block=nodes_per_block, cpus_per_node=2, init_blocks=1, min_blocks=0, max_blocks=1,
        walltime="00:10:00", launcher=SimpleLauncher(),
        # -V: the block gets this environment (PYTHONPATH, PBS_CONF_FILE). The job's login shell resets PATH:
        # the venv's for process_worker_pool.py, PBS's for the supervisor's pbsnodes (/usr/bin has
        # slurm-wlm-torque's).
        scheduler_options="#PBS -V", worker_init=f"{worker_init}export PATH={venv_bin}:{pbs_bin}:$PATH")
    inner.script_dir = str(work / "scripts")
    return FailoverProvider(inner, spares_per_block=1, run_dir=work / "wf", hosts=hosts)


def config(work: Path, address: str, hosts: list[str], mode: str) -> tuple[Config, FailoverProvider]:
    provider = (provider_for(work, hosts, 2, NO_AUTOFORK) if mode == "mpi" else provider_for(work, hosts, 1))
    common = {"address": address, "loopback_address": "127.0.0.1", "provider": provider,
              "block_error_handler": block_error_handler, "heartbeat_period": HEARTBEAT_S,
              "heartbeat_threshold": 3 * HEARTBEAT_S, "worker_logdir_root": str(work / "workers")}
    executor = (MPIExecutor(label="mpi", mpi_launcher="mpiexec", max_workers_per_block=1, **common)
                if mode == "mpi" else HighThroughputExecutor(label="htex", max_workers_per_node=1, **common))
    return Config(executors=[executor], run_dir=str(work / "runinfo"), retries=1, retry_handler=retry_handler,
                  strategy="simple", strategy_period=1, max_idletime=5.0), provider


def lead_node_lost(work: Path, provider: FailoverProvider) -> dict[str, Any]:
    """The htex mode: the task's host (the block's lead) crashed; the task finishes on a new block."""
    markers = work / "markers"
    markers.mkdir()
    future = work_app(markers)
    first = wait_for("the task to start", lambda: sorted(markers.iterdir()), 120)[0].name.split("-", 1)[1]
    (work / "victim.json").write_text(json.dumps({"victim": first}))
    wait_for("the test to crash the node", (work / "crashed").exists, 60)
    crashed = time.monotonic()
    wait_for("the node quarantined", lambda: any(e.host.raw == first for e in provider.quarantine.entries()), 90)
    quarantined_at = time.monotonic()
    host = future.result(timeout=150)
    done = time.monotonic()
    return {"victim": first, "host": host, "fail_count": future.task_record["fail_count"],
            "quarantine": quarantined(provider), "blocks": blocks_seen(provider), "jobs": jobs_seen(),
            "quarantine_s": quarantined_at - crashed, "done_s": done - crashed}


def attempts_of(log: Path) -> list[dict[str, Any]]:
    """A task's supervised attempts (hosts, resumed step, log tail) from its run directory's ledger."""
    ledger = Ledger.open(log.parent)
    try:
        rows = ledger.attempts()
    finally:
        ledger.close()
    return [{"hosts": list(a.hosts), "resumed": a.resumed_step,
             "log": Path(a.log_path).read_text(errors="replace")[-1500:]} for a in rows]


def first_log(tasks: Path, text: bytes) -> Path | None:
    return next((p for p in sorted(tasks.glob("*/attempt-1.log")) if text in p.read_bytes()), None)


def sister_lost(work: Path, provider: FailoverProvider) -> dict[str, Any]:
    """The mpi mode: the MPI task's sister node crashed; the supervisor swaps in the block's spare; then the idle
    block is scaled in and a second task's block is placed off the quarantined node."""
    rsh = shutil.which("pbs_tmrsh")  # the PBS prefix's bin is first on PATH here and, through -V, in the block
    assert rsh is not None, "pbs_tmrsh is not on PATH"
    spec = {"num_nodes": 2, "ranks_per_node": 1}
    tasks = work / "wf" / "tasks"
    future = train(str(work / "ckpt"), MPI_STEPS, rsh, stdout=str(work / "train.out"),
                   stderr=str(work / "train.err"), parsl_resource_specification=spec)
    log = wait_for("the trainer past step 10", lambda: first_log(tasks, b"step=10 "), 150)
    (block,) = provider.record.jobs()
    lead = read_record(work / "wf", block.job_name or "")[0].raw
    victim = next(h for h in attempts_of(log)[0]["hosts"] if h != lead)
    (work / "victim.json").write_text(json.dumps({"victim": victim}))
    wait_for("the test to crash the node", (work / "crashed").exists, 60)
    crashed = time.monotonic()
    rc = future.result(timeout=120)
    done = time.monotonic()
    state_at_done = jobs_seen().get(block.job_id, {}).get("job_state")
    wait_for("the node quarantined", lambda: any(e.host.raw == victim for e in provider.quarantine.entries()), 30)
    claims = {c.name: c.read_text() for c in (work / "wf" / "blocks").glob("*/claims/*")}
    wait_for("the idle block scaled in and judged", lambda: blocks_seen(provider)[block.job_id]["ended"], 60)
    second = train(str(work / "ckpt2"), 3, rsh, stdout=str(work / "next.out"), stderr=str(work / "next.err"),
                   parsl_resource_specification=spec)
    rc2 = second.result(timeout=150)
    next_log = next(p for p in tasks.glob("*/attempt-1.log") if p.parent != log.parent)
    return {"victim": victim, "lead": lead, "rc": rc, "attempts": attempts_of(log), "claims": claims,
            "task_run": str(log.parent), "state_at_done": state_at_done, "first_block": block.job_id,
            "rc2": rc2, "next_attempts": attempts_of(next_log), "quarantine": quarantined(provider),
            "blocks": blocks_seen(provider), "jobs": jobs_seen(), "done_s": done - crashed}


def main(work: Path, address: str, hosts: list[str], mode: str = "htex") -> int:
    (work / "scripts").mkdir(parents=True, exist_ok=True)
    cfg, provider = config(work, address, hosts, mode)
    dfk = parsl.load(cfg)
    try:
        result = sister_lost(work, provider) if mode == "mpi" else lead_node_lost(work, provider)
        (work / "result.json").write_text(json.dumps(result, default=str))
        return 0
    finally:
        dfk.cleanup()
        provider.close()


def work_app(markers: Path) -> Any:
    return work(str(markers), float(os.environ.get("TASK_S", "8")))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(","), *sys.argv[4:5]))
