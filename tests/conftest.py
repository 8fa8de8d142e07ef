"""Shared fixtures: the shipped patterns (loaded once) and the real console script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hotspare import PatternSet, load_patterns

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
