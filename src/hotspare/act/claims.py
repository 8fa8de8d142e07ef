"""Spares shared by several runs: the one that claims a spare first uses it.

The MPI tasks of one Parsl block (see ``hotspare_parsl.mpi_launch``) each run their own supervisor with the
block's spares. Without claims two of them could swap the same spare in after two different node losses.
A claim is a file named after the host, created with ``O_EXCL`` in a directory the runs share, holding the
claiming run's directory; it is never released (a spare, once used, stays with that run for the block's life).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from hotspare.errors import InputError
from hotspare.hosts import Host


class SpareClaims:
    """Claims in ``directory`` made on behalf of ``owner`` (the run directory)."""

    def __init__(self, directory: str | Path, owner: str) -> None:
        self.directory = Path(directory)
        self.owner = owner
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(str(directory), f"cannot create the spare-claims directory ({exc.strerror})") from exc

    def _holder(self, host: Host) -> str | None:
        try:
            return (self.directory / host.name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def taken(self, hosts: Iterable[Host]) -> set[Host]:
        """Those of ``hosts`` another run has claimed."""
        return {h for h in hosts if self._holder(h) not in (None, self.owner)}

    def claim(self, host: Host) -> bool:
        """Claim ``host`` for this run; True if it is (now or already) ours."""
        try:
            fd = os.open(self.directory / host.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return self._holder(host) == self.owner
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(self.owner)
        return True
