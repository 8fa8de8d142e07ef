"""Inside a block's batch job: split the nodes into active and spare, and say so to the shell.

The provider puts :func:`hotspare_parsl.layout.block_prologue` before the block's ``worker_init``:
it runs ``python -m hotspare_parsl.block --run-dir DIR --spares N --job-name NAME`` and evals what it
prints, or, when it fails, stops the block with a ``hotspare: job hook failed`` line on stderr.

It reads the block's nodes (``$PBS_NODEFILE``, else ``$SLURM_JOB_NODELIST``), leaves out the hosts in
the workflow's quarantine snapshot (``DIR/quarantine.json``, only read here: the workflow process is its
one writer), keeps the node the batch script (and so Parsl's manager) runs on (``$SLURMD_NODENAME``,
else the first) active, holds the last ``N`` back as spares, and prints ``export`` lines:

* ``SLURM_NODELIST`` / ``PBS_NODEFILE`` narrowed to the active nodes, so
  Parsl's MPI task scheduler hands out only those;
* ``HOTSPARE_JOB_NODEFILE``: the job's own ``PBS_NODEFILE``, which :func:`hotspare_parsl.mpi_launch`
  gives back to the task's supervisor. ``pbs_tmrsh`` (and any TM-based launcher) finds a host's TM node by
  its line in ``PBS_NODEFILE``: with the narrowed file a spare is "not a node in job", and a host after a
  quarantined one would be spawned on the wrong node (seen on the bed: the spare's probe failed and the
  healthy spare was quarantined);
* ``HOTSPARE_BLOCK_SPARES`` (comma-separated), ``HOTSPARE_QUARANTINE`` (the snapshot),
  ``HOTSPARE_SPARE_CLAIMS`` and ``HOTSPARE_RUN_DIR``, which :func:`hotspare_parsl.mpi_launch` commands read.

Everything it writes is in the block's own directory ``DIR/blocks/NAME/``: ``record.json`` (the split,
so the provider knows the block's hosts even when the scheduler has forgotten the job), ``active``
(the narrowed node file) and ``claims/`` (the spare claims of the block's tasks). Host names are
validated (:class:`hotspare.Host`) and every printed value is shell-quoted.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from hotspare import SNAPSHOT_NAME, Host, HotspareError, read_snapshot, resolve_allocation, write_atomic
from hotspare_parsl.layout import block_dir


def split_block(hosts: list[Host], spares: int, quarantined: frozenset[Host]) -> tuple[list[Host], list[Host]]:
    """(active, spare): quarantined hosts out, the lead node kept active, the last ``spares`` held back.

    With too few usable nodes the spares shrink first: a block always runs its work.
    """
    usable = [h for h in hosts if h not in quarantined]
    if not usable:
        return [], []
    lead, rest = usable[0], usable[1:]
    keep = max(0, min(spares, len(rest)))
    return [lead, *rest[: len(rest) - keep]], rest[len(rest) - keep:]


def exports(run_dir: Path, spares: int, job_name: str, environ: Mapping[str, str]) -> str:
    """The shell lines for this block (and its record in the block's own directory)."""
    hosts = resolve_allocation(environ=environ)
    # The batch script (and so Parsl's manager) runs on SLURM's batch host: it leads, whatever the list order.
    batch = next((h for h in hosts if h.raw == environ.get("SLURMD_NODENAME")), None)
    if batch is not None:
        hosts = [batch, *(h for h in hosts if h != batch)]
    snapshot = run_dir / SNAPSHOT_NAME
    active, spare = split_block(hosts, spares, frozenset(e.host for e in read_snapshot(snapshot)))
    if not active:
        raise HotspareError(f"every node of this block is quarantined: {', '.join(h.raw for h in hosts)}")
    own = block_dir(run_dir, job_name)
    (own / "claims").mkdir(parents=True, exist_ok=True)
    record = {"job_name": job_name, "hosts": [h.raw for h in hosts], "active": [h.raw for h in active],
              "spares": [h.raw for h in spare], "slurm_job_id": environ.get("SLURM_JOB_ID"),
              "pbs_job_id": environ.get("PBS_JOBID")}
    write_atomic(own / "record.json", json.dumps(record, sort_keys=True))
    lines = {
        "HOTSPARE_RUN_DIR": str(run_dir),
        "HOTSPARE_QUARANTINE": str(snapshot),
        "HOTSPARE_BLOCK_SPARES": ",".join(h.raw for h in spare),
        "HOTSPARE_BLOCK_ACTIVE": ",".join(h.raw for h in active),
        # The block's MPI tasks share its spares: the first to claim one uses it (hotspare.act.claims).
        "HOTSPARE_SPARE_CLAIMS": str(own / "claims"),
    }
    if environ.get("PBS_NODEFILE"):
        write_atomic(own / "active", "".join(f"{h.raw}\n" for h in active))
        lines["HOTSPARE_JOB_NODEFILE"] = environ["PBS_NODEFILE"]
        lines["PBS_NODEFILE"] = str(own / "active")
    if environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST"):
        lines["SLURM_NODELIST"] = ",".join(h.raw for h in active)
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in lines.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hotspare_parsl.block", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--spares", type=int, default=0)
    parser.add_argument("--job-name", default="block")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(exports(Path(args.run_dir), args.spares, args.job_name, os.environ))
    except (HotspareError, OSError) as exc:
        print(f"hotspare_parsl.block: error: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
