"""A synthetic trainer for demos and tests: deterministic, checkpointing, resumable.

Run under any launcher (``python -m hotspare.sim.trainer --steps 40 --ckpt-dir D``).
Every rank advances the same hash chain one link per step, so the final
checksum depends only on the number of steps: a run that fails over and
resumes from a checkpoint must end with the fault-free checksum. Rank 0 prints
``step=N`` and writes checkpoints ``D/step-N`` (state + manifest); resumes from
``$HOTSPARE_RESUME_DIR``. Faults for tests: ``--enospc-at N`` raises ENOSPC
once (a marker file makes the retry pass), ``--import-error`` fails at start.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from hotspare.act.checkpoint import write_manifest

# Rank and world-size variables of the launchers hotspare drives.
_RANK_VARS = ("RANK", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PALS_RANKID")
_SIZE_VARS = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PALS_SIZE")
#: Bound on waiting at a barrier for a rank that is gone.
BARRIER_TIMEOUT_S = 600.0


def rank() -> int:
    """This process's rank under any of the supported launchers (0 when alone)."""
    for name in _RANK_VARS:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def world_size() -> int:
    """How many ranks the launcher started (1 when alone)."""
    for name in _SIZE_VARS:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


def barrier(sync_dir: Path, step: int, me: int, size: int) -> None:
    """Wait until every rank reached ``step`` (files in a shared directory): like an MPI collective,
    one dead rank stalls everyone."""
    sync_dir.mkdir(parents=True, exist_ok=True)
    (sync_dir / f"{step}.{me}").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while sum(1 for r in range(size) if (sync_dir / f"{step}.{r}").exists()) < size:
        if time.monotonic() > deadline:
            raise TimeoutError(f"rank {me}: barrier at step {step} timed out")
        time.sleep(0.01)


def advance(state: str, step: int) -> str:
    """One link of the chain."""
    return hashlib.sha256(f"{state}:{step}".encode()).hexdigest()


def fault_free_checksum(steps: int) -> str:
    """The checksum a run of ``steps`` steps must end with."""
    state = "seed"
    for step in range(1, steps + 1):
        state = advance(state, step)
    return state


def _resume() -> tuple[int, str]:
    resume_dir = os.environ.get("HOTSPARE_RESUME_DIR")
    if not resume_dir:
        return 0, "seed"
    data = json.loads((Path(resume_dir) / "state.json").read_text())
    return int(data["step"]), str(data["state"])


def _checkpoint(ckpt_dir: Path, step: int, state: str) -> None:
    target = ckpt_dir / f"step-{step}"
    target.mkdir(parents=True, exist_ok=True)
    (target / "state.json").write_text(json.dumps({"step": step, "state": state}))
    write_manifest(target, step)
    print(f"saved checkpoint {target}", flush=True)


def _enospc_once(ckpt_dir: Path, step: int, at: int | None) -> None:
    marker = ckpt_dir / ".enospc-injected"
    if at is not None and step == at and not marker.exists():
        marker.write_text("injected\n")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _pause_once(ckpt_dir: Path, step: int, at: int | None, pause_s: float) -> None:
    """Go silent for ``pause_s`` once, after step ``at`` (a healthy rank busy writing: no node is at fault)."""
    marker = ckpt_dir / ".paused"
    if at is None or step != at or marker.exists():
        return
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    marker.touch()
    time.sleep(pause_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hotspare-trainer", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--ckpt-every", type=int, default=5)
    parser.add_argument("--ckpt-dir", type=Path, required=True)
    parser.add_argument("--step-s", type=float, default=0.05, help="seconds per step")
    parser.add_argument("--enospc-at", type=int, help="raise ENOSPC once at this step (rank 0)")
    parser.add_argument("--import-error", action="store_true", help="fail at start like a missing module")
    parser.add_argument("--pause-at", type=int, help="after this step (rank 0, first time only) go silent...")
    parser.add_argument("--pause-s", type=float, default=0.0, help="...for this long, like a long checkpoint write")
    parser.add_argument("--sync", action="store_true",
                        help="wait for every rank each step (files under the checkpoint dir), like a collective")
    args = parser.parse_args(argv)
    me = rank()
    if args.import_error:
        raise ModuleNotFoundError("No module named 'torchtitan'")
    step, state = _resume()
    if me == 0:
        print(f"rank 0 on {os.environ.get('HOTSPARE_HOST', os.uname().nodename)}: resumed_from={step}", flush=True)
    sync_dir = args.ckpt_dir / ".sync" / os.environ.get("HOTSPARE_ATTEMPT", "0")
    while step < args.steps:
        time.sleep(args.step_s)
        step += 1
        if args.sync:
            barrier(sync_dir, step, me, world_size())
        state = advance(state, step)
        if me == 0:
            _enospc_once(args.ckpt_dir, step, args.enospc_at)
            print(f"step={step} loss={1.0 / step:.4f}", flush=True)
            if step % args.ckpt_every == 0:
                _checkpoint(args.ckpt_dir, step, state)
            _pause_once(args.ckpt_dir, step, args.pause_at, args.pause_s)
    if me == 0:
        print(f"checksum={state}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
