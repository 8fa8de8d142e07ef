"""A Parsl workflow whose MPI task survives a lost node: MPIExecutor over FailoverProvider(SlurmProvider).

Run on a SLURM login node (or inside the project's test bed: `cd tests && python -m testbed up`, export the
SLURM_CONF it prints, then `python examples/parsl_slurm_mpi.py`).

Each block asks for 2 nodes + 1 spare. The task runs the synthetic trainer on 2 nodes under the hotspare
supervisor: if one of its nodes dies, the block's spare replaces it and the trainer resumes from its last
checkpoint; if the spares are spent, the task exits 93, the retry handler retries it, and the next block
is submitted with `--exclude=` of the quarantined hosts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import parsl
from parsl.config import Config
from parsl.executors import MPIExecutor
from parsl.launchers import SimpleLauncher
from parsl.providers import SlurmProvider

from hotspare_parsl import FailoverProvider, block_error_handler, retry_handler


@parsl.bash_app
def train(ckpt: str, steps: int, parsl_resource_specification: dict | None = None,  # type: ignore[type-arg]
          stdout: str = "train.out", stderr: str = "train.err") -> str:
    import sys  # noqa: PLC0415 -- apps defined in a script are shipped by value: import what they use inside

    from hotspare_parsl import mpi_launch  # noqa: PLC0415

    return mpi_launch([sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(steps), "--ckpt-every", "5",
                       "--ckpt-dir", ckpt, "--step-s", "0.2", "--sync"], launcher="srun", checkpoint_dir=ckpt)


def main() -> int:
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    here = Path("parsl-failover-demo").resolve()
    provider = FailoverProvider(  # the one changed line: SlurmProvider(...) wrapped
        SlurmProvider(nodes_per_block=2, init_blocks=1, max_blocks=1, walltime="00:10:00", launcher=SimpleLauncher(),
                      exclusive=False),
        spares_per_block=1, run_dir=here / "hotspare-run")
    config = Config(
        executors=[MPIExecutor(label="mpi", address="127.0.0.1", mpi_launcher="srun", max_workers_per_block=1,
                               provider=provider, block_error_handler=block_error_handler)],
        retries=2, retry_handler=retry_handler, run_dir=str(here / "runinfo"))
    with parsl.load(config):
        rc = train(str(here / "ckpt"), 40, parsl_resource_specification={"num_nodes": 2, "ranks_per_node": 1},
                   stdout=str(here / "train.out"), stderr=str(here / "train.err")).result()
    print(f"task exit {rc}; evidence: hotspare postmortem {here / 'hotspare' / 'tasks'}/task-*")
    return rc


if __name__ == "__main__":
    sys.exit(main())
