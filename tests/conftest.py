"""Shared fixtures: the shipped patterns (loaded once) and the real console script; and the checkout guard: a
run that leaves the checkout other than it found it (a file a test wrote into the repository, a tracked file
changed or deleted) fails, with the paths listed."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import pytest

from hotspare import PatternSet, load_patterns
from hotspare.act.runner import Completed
from hotspare.act.scheduler import SchedulerQuery
from hotspare.record.ledger import AttemptRow, DecisionRow, Ledger, ObservationRow
from hotspare.record.quarantine import Entry, Quarantine
from testbed.cluster import Bed, BedError
from testbed.pbs import Bed as PbsBed
from testbed.pbs_build import ensure_openpbs

HOTSPARE = Path(sys.executable).with_name("hotspare")

#: Path components the suite may legitimately create or change in the checkout: tool caches and the install.
TOLERATED_DIRS = frozenset({".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"})
TOLERATED_SUFFIXES = (".egg-info",)
#: The status command: -z so that any file name (a fuzzed one, one with spaces or quotes) comes out verbatim.
GIT_STATUS = ("git", "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored")


def _tolerated(path: str) -> bool:
    parts = path.rstrip("/").split("/")
    return any(p in TOLERATED_DIRS or p.endswith(TOLERATED_SUFFIXES) for p in parts)


def parse_porcelain(text: str) -> dict[str, str]:
    """``git status --porcelain=v1 -z`` output as {path: two-letter status} (a rename's source is dropped)."""
    status: dict[str, str] = {}
    fields = iter(text.split("\0"))
    for entry in fields:
        if len(entry) < 4:  # the empty tail after the last NUL
            continue
        xy, path = entry[:2], entry[3:]
        status[path] = xy
        if "R" in xy or "C" in xy:
            next(fields, None)  # -z gives "XY new\0old\0"
    return status


class Change(NamedTuple):
    """One path whose ``git status`` differs: its two-letter status before and after ("" for none)."""

    path: str
    before: str
    after: str

    def __str__(self) -> str:
        if not self.after:
            return f"gone: {self.path} (was {self.before})"
        return f"{self.before + ' -> ' if self.before else ''}{self.after} {self.path}"


def checkout_changes(before: str, after: str) -> list[Change]:
    """The paths whose status differs between two ``GIT_STATUS`` outputs, caches and the install tolerated.

    A path that appeared (a stray file: ``??``, or ``!!`` when .gitignore covers it), whose status changed
    (a tracked file modified, `` M``, or deleted, `` D``) or that left the list (an untracked file deleted,
    or one committed meanwhile) is listed, sorted by path.
    """
    old, new = parse_porcelain(before), parse_porcelain(after)
    return [Change(path, old.get(path, ""), new.get(path, "")) for path in sorted(old.keys() | new.keys())
            if not _tolerated(path) and old.get(path) != new.get(path)]


def _checkout_root() -> Path | None:
    """The git checkout holding these tests, or None when git is not installed or this is no checkout."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        return None
    return Path(top.stdout.strip()) if top.returncode == 0 and top.stdout.strip() else None


def _git_status(root: Path) -> str:
    return subprocess.run(GIT_STATUS, cwd=root, capture_output=True, text=True, timeout=120, check=True,
                          errors="surrogateescape").stdout


_CHECKOUT = pytest.StashKey[tuple[Path, str]]()
_STRAYS = pytest.StashKey[list[str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    root = _checkout_root()
    if root is not None:
        session.config.stash[_CHECKOUT] = (root, _git_status(root))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run (exit 1 if it would have passed) when the checkout changed; pytest returns
    ``session.exitstatus`` as read after this hook."""
    if _CHECKOUT not in session.config.stash:
        return
    root, before = session.config.stash[_CHECKOUT]
    try:
        # A path gone from the list but still on disk was committed meanwhile, not deleted by a test.
        strays = [str(c) for c in checkout_changes(before, _git_status(root))
                  if c.after or not (root / c.path).exists()]
    except (OSError, subprocess.SubprocessError) as exc:
        strays = [f"(git status failed at the end: {exc})"]
    if not strays:
        return
    session.config.stash[_STRAYS] = strays
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if session.config.pluginmanager.get_plugin("terminalreporter") is None:
        print(_stray_report(root, strays), file=sys.stderr)


def _stray_report(root: Path, strays: list[str]) -> str:
    return (f"checkout guard: this run left {root} other than it found it ({len(strays)} path(s)): tests must "
            "write only under their tmp_path (or the checkout was edited during the run):\n"
            + "\n".join(f"  {s}" for s in strays))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    strays = config.stash.get(_STRAYS, None)
    if strays:
        terminalreporter.section("checkout guard", sep="=", red=True, bold=True)
        terminalreporter.line(_stray_report(config.stash[_CHECKOUT][0], strays), red=True)


#: The test files whose tests need a real cluster, by the session fixture that owns it: SLURM's on fixed ports of
#: this host, PBS's in a network namespace of its own (checked at collection: a new file must be added here).
BED_FILES = {
    "slurm_cluster": frozenset(f"tests/{name}.py" for name in (
        "test_campaign", "test_dask_examples", "test_dask_mpi", "test_dask_spares", "test_dask_silent_slurm",
        "test_dask_slurm", "test_life_slurm", "test_parsl_silent_slurm", "test_parsl_slurm", "test_slurm_failover",
        "test_stall_bed", "test_suspects_bed", "test_testbed",
    )),
    "pbs_cluster": frozenset(f"tests/{name}.py" for name in (
        "test_conformance_pbs", "test_dask_pbs", "test_life_pbs", "test_parsl_pbs", "test_pbs_bed",
        "test_pbs_failover",
    )),
}


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a test that needs a real cluster in a file :data:`BED_FILES` does not name under that cluster: under
    ``./run test`` (two xdist workers) it would bring up a second bed of a kind beside the first, on its ports."""
    strays = sorted({f"{_file_of(item.nodeid)} ({fixture})" for item in items
                     for fixture in BED_FILES if fixture in getattr(item, "fixturenames", ())
                     and _file_of(item.nodeid) not in BED_FILES[fixture]})
    if strays:
        raise pytest.UsageError(f"tests/conftest.py: {', '.join(strays)} use a test bed: add them to BED_FILES")


@pytest.hookimpl(optionalhook=True)  # xdist's hook: without xdist installed, pytest must not refuse it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under xdist (``./run test``: ``-n 2``): the tests of each bed are one unit of work, run in one worker one after
    another on that worker's bed (two beds of a kind would share ports); the SLURM unit and the PBS unit, which share
    nothing, may run in the two workers at once; every other test is a unit of its own. The largest units are
    handed out first. (xdist's own ``--dist loadgroup`` does not group under pytest 9.2: it renames
    ``item._nodeid``, which pytest 9.2 no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 -- only under xdist

    class BedsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return next((fixture for fixture, files in BED_FILES.items() if _file_of(nodeid) in files), nodeid)

    return BedsTogether(config, log)


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
    """The session's bed, rebuilt (down, then up: 0.6 s measured) whenever a test left it disturbed or left a job
    in the queue: waiting for a job cancelled at the end of a test to finish ending took 3.5 s."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bed: Bed | None = None

    def fresh(self) -> Bed:
        if self.bed is not None and self.bed.settled(timeout_s=0):
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
    crashed, froze or drained a node, or left a job in the queue, gets the cluster rebuilt before the next
    test runs, so no step or job state leaks between tests."""
    return slurm_cluster.fresh()


class _PbsCluster:
    """The session's PBS bed: a node a test crashed or froze is rebooted (:meth:`PbsBed.heal`, a few seconds);
    rebuilt (down, then up: ~15 s) only when that fails, the server host is not whole, or a job did not end
    within 10 s of its ``qdel``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bed: PbsBed | None = None

    def fresh(self) -> PbsBed:
        if self.bed is not None and self._whole(self.bed):
            return self.bed
        self.close()
        self.bed = PbsBed.up(self.root, ensure_openpbs())
        return self.bed

    @staticmethod
    def _whole(bed: PbsBed) -> bool:
        try:
            return bed.heal() if bed.disturbed else bed.settled(timeout_s=10)
        except BedError as exc:  # a node that would not come back: the bed is built anew
            print(f"PBS bed: healing failed ({exc}); building a new one", file=sys.stderr)
            return False

    def close(self) -> None:
        if self.bed is not None:
            self.bed.down()
            self.bed = None


@pytest.fixture(scope="session")
def pbs_cluster():  # type: ignore[no-untyped-def]
    """A real 4-node OpenPBS cluster (server, scheduler, comm, PostgreSQL, MOMs p1..p4) for the whole session, in
    its own network namespace, torn down at its end even when tests fail (only the PIDs it started are
    signalled; its namespace, hosts file and PBS homes are removed). Needs root and OpenPBS, built once into
    the cache by ``tests/testbed/pbs_build.py`` (``./run test`` does it first); if either is missing the tests
    that use it fail with the one-line reason, never skipped.
    """
    cluster = _PbsCluster(Path(tempfile.gettempdir()) / f"hotspare-pbs-bed-{os.getpid()}")
    try:
        yield cluster
    finally:
        cluster.close()
        shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
def pbs_bed(pbs_cluster):  # type: ignore[no-untyped-def]
    """The session's PBS cluster as each test must find it: every node free, no job left (ended jobs stay in
    ``qstat -x`` history). A test that crashed, froze or restarted a node gets the cluster rebuilt first."""
    return pbs_cluster.fresh()


def load_benchmark(file_name: str) -> ModuleType:
    """A script of benchmarks/ imported as a module (its functions are tested directly)."""
    path = Path(__file__).resolve().parent.parent / "benchmarks" / file_name
    spec = importlib.util.spec_from_file_location(f"{path.stem}_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


class RunRecord(NamedTuple):
    """What a run's ledger holds, read once."""

    attempts: list[AttemptRow]
    decisions: list[DecisionRow]
    entries: list[Entry]
    observations: list[ObservationRow]


def read_run(run: Path) -> RunRecord:
    ledger = Ledger.open(run)
    try:
        return RunRecord(ledger.attempts(), ledger.decisions(), Quarantine.attach(ledger.connection).entries(),
                         ledger.observations())
    finally:
        ledger.close()


def fake_slurm(sick: set[str]) -> SchedulerQuery:
    """A SLURM query answering `scontrol show node` from a table (the real parser reads it): ``sick`` hosts are
    DOWN+NOT_RESPONDING, the others ALLOCATED."""

    def run(argv: Sequence[str], timeout_s: float) -> Completed:
        blocks = [f"NodeName={h} Arch=x86_64\n   State={'DOWN+NOT_RESPONDING' if h in sick else 'ALLOCATED'} "
                  "ThreadsPerCore=1\n" for h in argv[-1].split(",")]
        return Completed(tuple(argv), 0, "\n".join(blocks), "", False)

    return SchedulerQuery("slurm", "42", run=run)
