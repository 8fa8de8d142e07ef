"""A pipeline driver as one Parsl task that owns its block ("task 0 only"), surviving the loss of that block.

    python examples/parsl_pipeline.py [--stages 6] [--kill-after-stage 2]

The driver (a ``@python_app``) runs the pipeline's stages as sub-jobs (processes) one after another and
marks each finished stage in a shared directory. It is the only work in its block, so when the block's
node is lost there is nothing to save inside it: the lost manager makes the retry handler call it a
whole-job retry (no cost against ``retries``), the provider quarantines the node and the next block runs
elsewhere, and the rerun driver skips the stages already marked done.

Here the blocks are LocalProvider blocks standing for simulated hosts ``d1``, ``d2``; ``--kill-after-stage``
kills the first block's process group (its host "powers off"). On a cluster, swap in
``SlurmProvider(...)``/``PBSProProvider(...)`` and drop ``simulated_hosts``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import parsl
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.providers import LocalProvider
from parsl.providers.base import ExecutionProvider

from hotspare_parsl import FailoverProvider, block_error_handler, retry_handler


@parsl.python_app
def driver(workdir: str, stages: int, stage_s: float) -> list[str]:
    """Run each stage not yet done; return "stage@host" for the stages this try ran."""
    import os  # noqa: PLC0415 -- runs in the worker
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    host = os.environ.get("HOTSPARE_HOST") or os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    ran = []
    for stage in range(1, stages + 1):
        done = Path(workdir) / f"stage-{stage}.done"
        if done.exists():
            continue
        # The sub-job: here a short process; in a real pipeline an MPI run or a job on another executor.
        subprocess.run([sys.executable, "-c", f"import time; time.sleep({stage_s})"], check=True, timeout=600)
        done.write_text(host)
        ran.append(f"{stage}@{host}")
    return ran


def config(workdir: Path, inner: ExecutionProvider | None = None) -> tuple[Config, FailoverProvider]:
    """The pipeline's config: ``inner`` wrapped (default: LocalProvider blocks as simulated hosts d1, d2)."""
    if inner is None:
        provider = FailoverProvider(LocalProvider(init_blocks=1, min_blocks=0, max_blocks=1),
                                    run_dir=workdir / "hotspare-run", simulated_hosts=["d1", "d2"])
    else:
        provider = FailoverProvider(inner, run_dir=workdir / "hotspare-run")
    executor = HighThroughputExecutor(label="pipeline", address="127.0.0.1", loopback_address="127.0.0.1",
                                      max_workers_per_node=1, heartbeat_period=1, heartbeat_threshold=4,
                                      provider=provider, block_error_handler=block_error_handler)
    return Config(executors=[executor], run_dir=str(workdir / "runinfo"), retries=0, retry_handler=retry_handler,
                  strategy="simple", strategy_period=1), provider


def kill_local_block(provider: FailoverProvider) -> None:
    """Power off the (only) LocalProvider block's simulated host: SIGKILL its process group."""
    (job,) = list(provider.inner.resources)
    os.killpg(os.getpgid(provider.inner.resources[job]["remote_pid"]), signal.SIGKILL)


def run(workdir: Path, *, stages: int = 6, stage_s: float = 0.5, kill_after_stage: int | None = None,
        inner: ExecutionProvider | None = None, kill: Callable[[FailoverProvider], None] = kill_local_block,
        timeout_s: float = 180) -> tuple[list[str], list[dict[str, Any]]]:
    """Run the pipeline; after stage ``kill_after_stage``, ``kill`` the driver's block. Returns
    ("stage@host" for every stage, the retries the handler recorded)."""
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent),
                                                os.environ.get("PYTHONPATH", "")])
    marks = workdir / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    cfg, provider = config(workdir, inner)
    with parsl.load(cfg):
        first = driver(str(marks), stages, stage_s)
        if kill_after_stage is not None:
            deadline = time.monotonic() + timeout_s
            while not (marks / f"stage-{kill_after_stage}.done").exists() and not first.done():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"stage {kill_after_stage} never finished")
                time.sleep(0.05)
            if not first.done():  # done this early, it failed: its own error is raised below
                kill(provider)
        first.result(timeout=timeout_s)
        done = sorted(f"{p.name.split('-')[1].split('.')[0]}@{p.read_text()}" for p in marks.iterdir())
    retries = provider.retries()
    provider.close()
    return sorted(done, key=lambda s: int(s.split("@")[0])), retries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=6)
    parser.add_argument("--kill-after-stage", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hotspare-pipeline-") as tmp:
        done, retries = run(Path(tmp), stages=args.stages, kill_after_stage=args.kill_after_stage)
    print("stages (stage@host):", " ".join(done))
    for r in retries:
        print(f"retry: task {r.task_id} try {r.try_id} scope={r.scope} fault={r.fault.value} "
              f"parsl_cost={r.cost:g} try_s={r.try_s or 0:.1f} ({r.reason})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
