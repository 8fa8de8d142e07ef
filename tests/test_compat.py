"""The version ranges pyproject.toml states hold at both ends: ``tests/compat.py`` (``./run compat``) run inside
the suite, one cached venv per edge; and its table agrees with pyproject.toml before any venv is built.

Run here rather than from ``./run test`` before pytest: a failing edge is then one failed test among the rest
(with the edge's line in its message), ``-k``/``--deselect`` select it like any other, and its time shows in
``--durations``. Its temporary files go in a short-named directory of the system's, removed afterwards (not
under ``tmp_path``: too long a TMPDIR stops Parsl's worker pool, see ``compat._env``)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from compat import (
    CHECKOUT,
    EDGES,
    _interleaved,
    build_install_argv,
    build_pytest_argv,
    build_venv_name,
    installed_pins,
)

#: Cold (every venv built, wheels from pip's cache or PyPI) the run takes a few minutes; warm about two.
COMPAT_TIMEOUT_S = 1800


def _extra(name: str) -> dict[str, Requirement]:
    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]
    reqs = (Requirement(r) for r in project["optional-dependencies"][name])
    return {r.name: r for r in reqs}


@pytest.mark.parametrize("edge", EDGES, ids=lambda e: e.name)
def test_each_edge_is_inside_the_range_pyproject_states(edge) -> None:  # type: ignore[no-untyped-def]
    """Every pinned version satisfies its extra's requirement, and every package of the extra is pinned."""
    extra = _extra(edge.extra)
    pinned = {Requirement(p).name: Requirement(p) for p in edge.pins}
    assert set(pinned) == set(extra)
    for name, pin in pinned.items():
        (version,) = (s.version for s in pin.specifier)
        assert extra[name].specifier.contains(version), f"{name} {version} outside {extra[name].specifier}"


def test_both_ends_of_every_range_are_checked() -> None:
    """An oldest and a newest edge for each extra."""
    assert sorted(e.name for e in EDGES) == ["dask-newest", "dask-oldest", "parsl-newest", "parsl-oldest"]


def test_two_at_a_time_are_one_of_each_framework() -> None:
    """Parsl and Dask edges alternate; with one framework only, its edges in order."""
    assert [e.extra for e in _interleaved(EDGES)] == ["parsl", "dask", "parsl", "dask"]
    assert [e.name for e in _interleaved(EDGES[2:])] == ["dask-oldest", "dask-newest"]
    assert [e.name for e in _interleaved([EDGES[1], *EDGES[2:]])] == ["parsl-newest", "dask-oldest", "dask-newest"]


def test_the_builders() -> None:
    """The venv name changes with the pins, the checkout and the Python; the install is editable from the checkout
    with the extra and the pins; pytest's temporary files go where it is told."""
    edge = EDGES[0]
    name = build_venv_name(edge, Path("/a b"), "3.11.7")
    assert name.startswith(f"{edge.name}-") and len(name) == len(edge.name) + 13
    assert name != build_venv_name(edge, Path("/other"), "3.11.7") != build_venv_name(edge, Path("/a b"), "3.12.1")
    assert name != build_venv_name(EDGES[1], Path("/a b"), "3.11.7")
    argv = build_install_argv(Path("/v/bin/python"), edge, Path("/co"))
    assert argv[-len(edge.pins) - 2:] == ["-e", f"/co[dev,{edge.extra}]", *edge.pins]
    assert f"--basetemp={Path('/t')}" in build_pytest_argv(Path("/v/bin/python"), edge, Path("/t"))


def test_an_edge_is_covered_only_by_its_exact_versions() -> None:
    """``--skip-covered`` leaves out an edge only when every one of its pins is installed at that version."""
    dask_newest = EDGES[3]
    have = {"dask": "2026.8.0", "distributed": "2026.8.0", "dask-jobqueue": "0.9.0", "parsl": "2026.10.26"}
    assert installed_pins(dask_newest, have.get) and installed_pins(EDGES[1], have.get)
    assert not installed_pins(EDGES[0], have.get) and not installed_pins(EDGES[2], have.get)
    assert not installed_pins(dask_newest, {**have, "dask-jobqueue": "0.8.5"}.get)
    assert not installed_pins(dask_newest, {"dask": "2026.8.0", "distributed": "2026.8.0"}.get)  # one missing


def test_compat_passes_at_every_edge() -> None:
    """``./run compat --skip-covered``: every edge installs, passes its tests and its real run, but an edge whose
    exact versions this suite's own venv has (the newest, normally) is not built again: this suite is a superset of
    its tests and runs the same real run (test_parsl_adapter's pipeline example, the Dask cluster tests)."""
    done = subprocess.run([sys.executable, str(CHECKOUT / "tests" / "compat.py"), "--skip-covered"],
                          capture_output=True, text=True, timeout=COMPAT_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    ran, covered = done.stdout.count(" passed "), done.stdout.count(" covered: ")
    assert ran + covered == len(EDGES), done.stdout
    assert ran >= 2, done.stdout  # the oldest edges are never this venv's versions
