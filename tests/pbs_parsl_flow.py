"""A Parsl workflow run INSIDE the PBS bed's network namespace (``Bed.argv``), driven by tests/test_parsl_pbs.py:
a real HighThroughputExecutor (interchange on the server host's address) over
``FailoverProvider(PBSProProvider(...))``, one 2-node block (one node active, one spare), real qsub.

``python pbs_parsl_flow.py WORK ADDRESS HOSTS``: runs one task that writes ``WORK/started-<host>`` and sleeps; the
first try's host is written to ``WORK/victim.json``; the script waits for ``WORK/crashed`` (the test crashes
that node with ``Bed.crash``), then for the task's result, and writes what it saw to ``WORK/result.json``.
Every wait is bounded; the DFK is cleaned up (its blocks cancelled, the interchange stopped) whatever happens.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import parsl
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import SimpleLauncher
from parsl.providers import PBSProProvider

from hotspare_parsl import FailoverProvider, block_error_handler, retry_handler
from polling import wait_for

#: Seconds between Parsl's status polls of the blocks (PBSProProvider fixes 60 s; a lost block is only judged at
#: a poll).
POLL_S = 2
HEARTBEAT_S = 2


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




def qstat_all() -> dict[str, Any]:
    done = subprocess.run(["qstat", "-x", "-f", "-F", "json"], capture_output=True, text=True, timeout=30,
                          check=False)
    return dict(json.loads(done.stdout).get("Jobs", {})) if done.returncode == 0 else {}


def config(work: Path, address: str, hosts: list[str]) -> tuple[Config, FailoverProvider]:
    venv_bin = Path(sys.executable).parent
    inner = PolledPBSProProvider(
        nodes_per_block=1, cpus_per_node=2, init_blocks=1, min_blocks=0, max_blocks=1, walltime="00:10:00",
        launcher=SimpleLauncher(),
        # -V: the block gets this environment (PYTHONPATH, PBS_CONF_FILE); PATH for process_worker_pool.py.
        scheduler_options="#PBS -V", worker_init=f"export PATH={venv_bin}:$PATH")
    inner.script_dir = str(work / "scripts")
    provider = FailoverProvider(inner, spares_per_block=1, run_dir=work / "wf", hosts=hosts)
    executor = HighThroughputExecutor(label="htex", address=address, loopback_address="127.0.0.1", provider=provider,
                                      max_workers_per_node=1, block_error_handler=block_error_handler,
                                      heartbeat_period=HEARTBEAT_S, heartbeat_threshold=3 * HEARTBEAT_S,
                                      worker_logdir_root=str(work / "workers"))
    return Config(executors=[executor], run_dir=str(work / "runinfo"), retries=1, retry_handler=retry_handler,
                  strategy="simple", strategy_period=1, max_idletime=5.0), provider


def main(work: Path, address: str, hosts: list[str]) -> int:
    (work / "scripts").mkdir(parents=True, exist_ok=True)
    markers = work / "markers"
    markers.mkdir()
    cfg, provider = config(work, address, hosts)
    dfk = parsl.load(cfg)
    try:
        future = work_app(markers)
        first = wait_for("the task to start", lambda: sorted(markers.iterdir()), 120)[0].name.split("-", 1)[1]
        (work / "victim.json").write_text(json.dumps({"victim": first}))
        wait_for("the test to crash the node", (work / "crashed").exists, 60)
        crashed = time.monotonic()
        wait_for("the node quarantined", lambda: any(e.host.raw == first for e in provider.quarantine.entries()),
                 90)
        quarantined = time.monotonic()
        host = future.result(timeout=150)
        done = time.monotonic()
        blocks = {r.job_id: r for r in provider.record.jobs()}
        result = {"victim": first, "host": host, "fail_count": future.task_record["fail_count"],
                  "quarantine": [[e.host.raw, e.reason.value, e.detail] for e in provider.quarantine.entries()],
                  "blocks": {j: {"hosts": list(r.hosts), "excluded": list(r.excluded), "verdict": r.verdict}
                             for j, r in blocks.items()},
                  "jobs": {j: {k: v.get(k) for k in ("job_state", "exec_host", "Exit_status", "comment",
                                                     "run_count", "Resource_List")}
                           for j, v in qstat_all().items()},
                  "quarantine_s": quarantined - crashed, "done_s": done - crashed}
        (work / "result.json").write_text(json.dumps(result, default=str))
        return 0
    finally:
        dfk.cleanup()
        provider.close()


def work_app(markers: Path) -> Any:
    return work(str(markers), float(os.environ.get("TASK_S", "8")))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")))
