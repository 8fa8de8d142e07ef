"""Shared fixtures: the shipped patterns (loaded once) and the real console script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hotspare import PatternSet, load_patterns
from testbed.cluster import Bed

HOTSPARE = Path(sys.executable).with_name("hotspare")


@pytest.fixture(scope="session")
def patterns() -> PatternSet:
    return load_patterns(environ={})


def run_cli(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed ``hotspare`` command, bounded in time."""
    return subprocess.run(
        [str(HOTSPARE), *args],
        input=stdin.decode("latin-1") if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


class _Cluster:
    """The session's bed, rebuilt (down, then up in ~0.5 s) whenever a test left it disturbed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bed: Bed | None = None

    def fresh(self) -> Bed:
        if self.bed is not None and self.bed.settled():
            return self.bed
        self.close()
        self.bed = Bed.up(self.root)
        return self.bed

    def close(self) -> None:
        if self.bed is not None:
            self.bed.down()
            self.bed = None


@pytest.fixture(scope="session")
def slurm_cluster():  # type: ignore[no-untyped-def]
    """A real 4-node SLURM 22.05 cluster for the whole session, torn down at its end even when tests fail
    (it kills only the PIDs it started). Needs root and the Debian packages slurmctld slurmd slurm-client
    munge (``./run test`` and ``.ci/run`` install them as root). If it cannot start, the tests that use it
    fail: never skipped.
    """
    # Not under pytest's 0700 temp dirs: munged needs every directory above its socket traversable.
    cluster = _Cluster(Path(tempfile.gettempdir()) / f"hotspare-bed-{os.getpid()}")
    try:
        yield cluster
    finally:
        cluster.close()
        shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
def slurm_bed(slurm_cluster):  # type: ignore[no-untyped-def]
    """The session's cluster as each test must find it: every node up and idle, no job left. A test that
    crashed, froze or drained a node, or whose jobs would not end, gets the cluster rebuilt before the next
    test runs, so no step or job state leaks between tests."""
    return slurm_cluster.fresh()
