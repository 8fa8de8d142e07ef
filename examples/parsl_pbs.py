"""A Parsl MPI task on PBS (Polaris/Aurora style) that survives a lost node: FailoverProvider(PBSProProvider).

    python examples/parsl_pbs.py                # PBS Pro: qsub -l select=..., mpiexec (PALS or Hydra)
    python examples/parsl_pbs.py --torque       # Torque-style qsub (e.g. slurm-wlm-torque on the test bed)

Each block asks PBS for 2 nodes + 1 spare. PBS cannot exclude nodes, so once a node is quarantined the
provider rewrites the instance's ``select`` line into ``1:host=...`` chunks chosen from hosts earlier blocks
ran on that are known good. A block's end is judged from ``qstat -x -f -F json`` (``Exit_status``,
``comment``; PBSProProvider itself calls every finished job COMPLETED), its output and the classifier.

With ``--torque`` the task's launcher is srun (slurm-wlm-torque runs the job under SLURM) and the script
carries ``#SBATCH --no-kill`` so the block survives the loss of a task's node; this variant is what the test
suite runs on its SLURM bed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import parsl
from parsl.config import Config
from parsl.executors import MPIExecutor
from parsl.launchers import SimpleLauncher
from parsl.providers import PBSProProvider, TorqueProvider

from hotspare_parsl import FailoverProvider, block_error_handler, retry_handler


@parsl.bash_app
def train(ckpt: str, steps: int, launcher: str, *, parsl_resource_specification: dict | None = None,  # type: ignore[type-arg]
          stdout: str = "train.out", stderr: str = "train.err") -> str:
    import sys  # noqa: PLC0415 -- apps defined in a script are shipped by value: import what they use inside

    from hotspare_parsl import mpi_launch  # noqa: PLC0415

    return mpi_launch([sys.executable, "-m", "hotspare.sim.trainer", "--steps", str(steps), "--ckpt-every", "5",
                       "--ckpt-dir", ckpt, "--step-s", "0.2", "--sync"], launcher=launcher, checkpoint_dir=ckpt)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torque", action="store_true", help="Torque-style qsub (slurm-wlm-torque)")
    parser.add_argument("--queue", help="PBS queue (e.g. debug on Polaris)")
    parser.add_argument("--account", help="PBS project/account")
    args = parser.parse_args()
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    here = Path("parsl-pbs-demo").resolve()
    if args.torque:
        inner = TorqueProvider(nodes_per_block=2, walltime="00:10:00", launcher=SimpleLauncher(),
                               scheduler_options="#SBATCH --no-kill", queue=args.queue, account=args.account)
        mpi_launcher = "srun"
    else:
        inner = PBSProProvider(nodes_per_block=2, walltime="00:30:00", launcher=SimpleLauncher(), cpus_per_node=64,
                               queue=args.queue, account=args.account)
        mpi_launcher = "mpiexec"
    provider = FailoverProvider(inner, spares_per_block=1, run_dir=here / "hotspare-run")
    config = Config(
        executors=[MPIExecutor(label="mpi", address="127.0.0.1" if args.torque else None, mpi_launcher=mpi_launcher,
                               max_workers_per_block=1, provider=provider, block_error_handler=block_error_handler)],
        retries=2, retry_handler=retry_handler, run_dir=str(here / "runinfo"))
    with parsl.load(config):
        rc = train(str(here / "ckpt"), 40, mpi_launcher,
                   parsl_resource_specification={"num_nodes": 2, "ranks_per_node": 1},
                   stdout=str(here / "train.out"), stderr=str(here / "train.err")).result()
    print(f"task exit {rc}; evidence: hotspare postmortem {here / 'hotspare' / 'tasks'}/task-*")
    return rc


if __name__ == "__main__":
    sys.exit(main())
