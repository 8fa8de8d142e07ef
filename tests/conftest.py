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


@pytest.fixture
def slurm_bed():  # type: ignore[no-untyped-def]
    """A real 4-node SLURM 22.05 cluster on this machine, fresh for each test (up in ~0.4 s): a node crashed
    by one test must not leave step or job state behind for the next. Torn down even when tests fail.

    It needs root and the Debian packages slurmctld slurmd slurm-client munge (``./run test`` and
    ``.ci/run`` install them as root). If it cannot start, the tests that use it fail: never skipped.
    """
    # Not under pytest's 0700 temp dirs: munged needs every directory above its socket traversable.
    root = Path(tempfile.gettempdir()) / f"hotspare-bed-{os.getpid()}"
    bed = Bed.up(root)
    try:
        yield bed
    finally:
        bed.down()
        shutil.rmtree(root, ignore_errors=True)
