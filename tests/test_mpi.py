"""Real MPICH Hydra `mpiexec` (the PyPI mpich wheel), pinned to loopback, under the supervisor.

Hydra's fork launcher starts every "host" of the hostfile on this machine and
tells each rank its host (PMI_HOSTNAME), so a three-host allocation can be
simulated without ssh: killing one rank there yields Hydra's real
``RUNNING AT <host>`` / ``EXIT CODE: 9`` banner.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from hotspare.decide.policy import Budgets
from hotspare.decide.pool import Pool
from hotspare.errors import EXIT_OK
from hotspare.record.ledger import Ledger
from hotspare.record.quarantine import Quarantine
from hotspare.sim.trainer import fault_free_checksum
from hotspare.supervisor import RunConfig, Supervisor

MPIEXEC = Path(sys.executable).with_name("mpiexec")
# Keep MPI traffic on loopback (the PyPI wheel's libfabric tcp provider).
LOOPBACK = {"FI_PROVIDER": "tcp", "FI_TCP_IFACE": "lo", "MPIR_CVAR_CH4_NETMOD": "ofi"}
STEPS = 30


def _ranks_on(host: str, run_dir: Path) -> list[int]:
    """PIDs of this run's ranks Hydra placed on ``host`` (found by their environment)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = dict(v.split("=", 1) for v in (entry / "environ").read_text().split("\0") if "=" in v)
        except OSError:
            continue
        if env.get("HOTSPARE_RUN_DIR") == str(run_dir) and env.get("PMI_HOSTNAME") == host and "PMI_RANK" in env:
            found.append(int(entry.name))
    return found


def test_mpiexec_rank_killed_is_swapped_and_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kill a rank on hostB under real mpiexec: hostB (named by RUNNING AT) is swapped for hostC, the job
    resumes from its checkpoint and ends with the fault-free checksum."""
    for key, value in LOOPBACK.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{MPIEXEC.parent}{os.pathsep}{os.environ['PATH']}")
    assert shutil.which("mpiexec") == str(MPIEXEC)
    run = tmp_path / "run"
    ckpt = tmp_path / "ckpt"
    config = RunConfig(
        command=(sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(STEPS), "--ckpt-every", "5",
                 "--ckpt-dir", str(ckpt), "--step-s", "0.05"),
        allocation=("hostA", "hostB", "hostC"), nhosts=2, launcher="mpiexec", launcher_args=("-launcher", "fork"),
        ppn=2, checkpoint_dir=str(ckpt), idle_timeout_s=30, grace_s=2, probe_timeout_s=10,
        budgets=Budgets(backoff_base_s=0.05, backoff_max_s=0.1),
    )

    def kill_rank(number: int, pool: Pool, log: Path) -> None:
        if number != 1:
            return

        def go() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pids = _ranks_on("hostB", run)
                if pids and log.exists() and b"step=8 " in log.read_bytes():
                    os.kill(pids[0], signal.SIGKILL)
                    return
                time.sleep(0.05)

        threading.Thread(target=go, daemon=True).start()

    assert Supervisor(config, run, on_attempt=kill_rank).run() == EXIT_OK
    ledger = Ledger.open(run)
    attempts = ledger.attempts()
    entries = Quarantine.attach(ledger.connection).entries()
    ledger.close()
    assert [a.failure_class for a in attempts] == ["rank_killed", "success"]
    assert [(e.host.name, e.reason) for e in entries] == [("hostb", "scraped")]
    assert attempts[1].hosts == ("hostA", "hostC")
    assert attempts[1].resumed_step is not None and attempts[1].resumed_step >= 5
    words = Path(attempts[1].log_path).read_text().split()
    assert f"checksum={fault_free_checksum(STEPS)}" in words
