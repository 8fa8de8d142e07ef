"""The test bed for humans: ``python -m testbed up|down|crash N|freeze N|thaw N|start N`` (run from tests/).

The bed lives in ``$HOTSPARE_BED`` (default /tmp/hotspare-bed); ``up`` prints the SLURM_CONF to export.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from testbed.cluster import Bed, BedError

ROOT = Path(os.environ.get("HOTSPARE_BED", "/tmp/hotspare-bed"))  # noqa: S108 -- a root-only test bed, by name
STATE = ROOT / "bed.json"


def _load() -> Bed:
    if not STATE.exists():
        raise BedError(f"no bed in {ROOT}: run `python -m testbed up` first")
    data = json.loads(STATE.read_text())
    return Bed(ROOT, tuple(data["nodes"]), {k: int(v) for k, v in data["pids"].items()})


def _save(bed: Bed) -> None:
    STATE.write_text(json.dumps({"nodes": bed.nodes, "pids": bed.pids}))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"up", "down", "crash", "freeze", "thaw", "start"}:
        print("usage: python -m testbed up|down|crash NODE|freeze NODE|thaw NODE|start NODE", file=sys.stderr)
        return 2
    try:
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
    except (BedError, IndexError, KeyError) as exc:
        print(f"error: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
