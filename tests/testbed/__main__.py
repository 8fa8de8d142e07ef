"""The test beds for humans (run from tests/):

- ``python -m testbed up|down|crash N|freeze N|thaw N|start N``: the SLURM bed, in ``$HOTSPARE_BED`` (default
  /tmp/hotspare-bed); ``up`` prints the SLURM_CONF to export.
- ``python -m testbed pbs build|up|down|crash N|freeze N|thaw N|start N|exec -- CMD...``: the PBS bed, in
  ``$HOTSPARE_PBS_BED`` (default /tmp/hotspare-pbs-bed); ``build`` builds (or finds) OpenPBS and prints its
  prefix, ``exec`` runs a command inside the bed (``exec -- qstat -B``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from testbed.cluster import Bed, BedError
from testbed.pbs_build import PbsBuildError, ensure_openpbs

ROOT = Path(os.environ.get("HOTSPARE_BED", "/tmp/hotspare-bed"))  # noqa: S108 -- a root-only test bed, by name
STATE = ROOT / "bed.json"
PBS_ROOT = Path(os.environ.get("HOTSPARE_PBS_BED", "/tmp/hotspare-pbs-bed"))  # noqa: S108 -- as above
NODE_COMMANDS = {"crash", "freeze", "thaw", "start"}


def _load() -> Bed:
    if not STATE.exists():
        raise BedError(f"no bed in {ROOT}: run `python -m testbed up` first")
    data = json.loads(STATE.read_text())
    return Bed(ROOT, tuple(data["nodes"]), {k: int(v) for k, v in data["pids"].items()})


def _save(bed: Bed) -> None:
    STATE.write_text(json.dumps({"nodes": bed.nodes, "pids": bed.pids}))


def slurm(argv: list[str]) -> int:
    if not argv or argv[0] not in {"up", "down", *NODE_COMMANDS}:
        print("usage: python -m testbed up|down|crash NODE|freeze NODE|thaw NODE|start NODE\n"
              "       python -m testbed pbs build|up|down|crash NODE|freeze NODE|thaw NODE|start NODE|exec -- CMD",
              file=sys.stderr)
        return 2
    if argv[0] == "up":
        bed = Bed.up(ROOT)
        _save(bed)
        print(f"export SLURM_CONF={ROOT / 'etc' / 'slurm.conf'}")
        return 0
    bed = _load()
    if argv[0] == "down":
        bed.down()
        STATE.unlink()
        return 0
    getattr(bed, argv[0])(argv[1])
    _save(bed)
    return 0


def pbs(argv: list[str]) -> int:
    from testbed.pbs import Bed as PbsBed  # noqa: PLC0415 -- the PBS bed loads only for `pbs`

    if not argv or argv[0] not in {"build", "up", "down", "exec", *NODE_COMMANDS}:
        print("usage: python -m testbed pbs build|up|down|crash NODE|freeze NODE|thaw NODE|start NODE|exec -- CMD",
              file=sys.stderr)
        return 2
    if argv[0] == "build":
        print(ensure_openpbs())
        return 0
    if argv[0] == "up":
        if (PBS_ROOT / "bed.json").exists():
            raise BedError(f"a PBS bed is up in {PBS_ROOT}: `python -m testbed pbs down` first")
        bed = PbsBed.up(PBS_ROOT, ensure_openpbs())
        bed.save()
        print(f"PBS bed up in {PBS_ROOT} (network namespace {bed.layout.netns}): "
              "python -m testbed pbs exec -- pbsnodes -av")
        return 0
    bed = PbsBed.load(PBS_ROOT)
    if argv[0] == "down":
        bed.down()
        bed.state_file.unlink()
        return 0
    if argv[0] == "exec":
        command = argv[2:] if argv[1:2] == ["--"] else argv[1:]
        return subprocess.run(bed.argv(command), env=bed.env, check=False).returncode
    getattr(bed, argv[0])(argv[1])
    bed.save()
    return 0


def main(argv: list[str]) -> int:
    try:
        return pbs(argv[1:]) if argv[:1] == ["pbs"] else slurm(argv)
    except (BedError, PbsBuildError, IndexError, KeyError) as exc:
        print(f"error: {exc}".splitlines()[0], file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
