"""The version ranges in pyproject.toml, proven at both edges: ``./run compat`` (also run inside ``./run test``).

    python tests/compat.py [--only NAME ...] [--jobs N] [--cache DIR]

One virtualenv per edge of each range (the oldest and the newest release of Parsl; of distributed/dask with
dask-jobqueue), kept under ``~/.cache/hotspare/compat/<edge>-<hash>`` (``$HOTSPARE_COMPAT_CACHE`` to move it)
and reused between runs; pip's own wheel cache is left on, so a rebuilt venv downloads nothing again. The hash
covers the pins, the checkout's path and the interpreter: hotspare is installed *editable* from this checkout
(the way ``./run`` installs it, so the code under test is the checkout's and a source change needs no reinstall);
a changed ``pyproject.toml`` reinstalls. The extra is installed together with the pins, so an edge outside the
range the extra states fails to install: the table below and ``pyproject.toml`` cannot drift apart.

In each venv: the adapter tests that need no test bed (never the SLURM or PBS beds), a compact selection that
still crosses every internal the adapter touches, then a short real run: for Parsl the local pipeline example
(HTEX over LocalProvider blocks, a block killed, the driver rerun on the other simulated host); for Dask a real
scheduler with real ``dask worker`` processes (the task-blame plugin through two node deaths, the worker
preload) and the failover cluster losing a job on a loopback scheduler. A ``LocalCluster`` does not apply: the
failover clusters are dask-jobqueue ``JobQueueCluster``s, so the real-process checks are what stands for one.

Prints one line per edge (name, versions, passed/failed, seconds) and exits 1 if any edge failed; the log of
each edge's last run is kept beside its venv (``<venv>.log``). Two edges run at a time by default: the
checks mostly wait (heartbeats, strategy periods, lost-worker timeouts; ~0.45 of a core each, measured), so
on 2 cores two at once take about half the time without starving either. Only pip reaches the network
(PyPI); every run is on loopback. Stdlib only: it runs under whichever Python ``./run`` uses.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent

#: Slow HTEX runs (10-27 s each) that the pipeline example below covers end to end (HTEX over LocalProvider,
#: a block lost, a whole-job retry): left out of the edges' test selection to keep ``./run test`` in budget.
PARSL_LEFT_OUT = ("htex_over_failover_local_provider", "local_block_killed", "supervised_user_error",
                  "pipeline_driver_survives")
#: The Dask tests: the failover clusters (submit faked, real loopback scheduler), run_mpi off the bed, the
#: blame plugin's pure parts plus its real-process node-death case (the one that proves tasks are spared), and the
#: silent-node watch: its rule (pure) and what it asks of the scheduler (each worker's last_seen through the comm, a
#: removal that counts against no task) on real worker processes.
DASK_TESTS = ("tests/test_dask_cluster.py", "tests/test_dask_mpi.py", "tests/test_dask_blame.py",
              "tests/test_dask_silence.py", "tests/test_dask_watch.py")
DASK_SELECT = ("not survives_a_node_crash and not segfaults and not no_verdict and not deaths_judged_no_node "
               "and not expected_removal and not node_faults[False]")


@dataclass(frozen=True, slots=True)
class Edge:
    """One end of one range: the extra it installs, the exact versions, what runs in its venv."""

    name: str
    extra: str
    pins: tuple[str, ...]
    pytest_args: tuple[str, ...]
    #: A real run: argv after the venv's python, and a word its output must contain.
    run: tuple[str, ...] = ()
    run_expect: str = ""


def _parsl(name: str, version: str) -> Edge:
    return Edge(name, "parsl", (f"parsl=={version}",),
                ("tests/test_parsl_adapter.py", "-k", " and ".join(f"not {k}" for k in PARSL_LEFT_OUT)),
                run=(str(CHECKOUT / "examples" / "parsl_pipeline.py"), "--stages", "4", "--kill-after-stage", "1"),
                run_expect="@d2")  # a stage ran on the second simulated host: the failover happened


def _dask(name: str, version: str, jobqueue: str) -> Edge:
    return Edge(name, "dask", (f"dask=={version}", f"distributed=={version}", f"dask-jobqueue=={jobqueue}"),
                (*DASK_TESTS, "-k", DASK_SELECT))


#: The edges. "newest" is the newest release on PyPI when this table was last checked (2026-12-02); raising it
#: is one line here and the upper bound in pyproject.toml.
EDGES = (
    _parsl("parsl-oldest", "2026.1.5"),
    _parsl("parsl-newest", "2026.10.26"),
    _dask("dask-oldest", "2025.9.0", "0.8.5"),
    _dask("dask-newest", "2026.8.0", "0.9.0"),
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one edge came to: its line, and whether it passed."""

    edge: Edge
    ok: bool
    seconds: float
    what: str  # "passed", or the step that failed

    def line(self) -> str:
        """One line: name, versions, passed/failed (with the failed step) or covered, seconds."""
        verdict = "passed" if self.ok else f"FAILED ({self.what})"
        if self.ok and self.what == COVERED:
            return f"{self.edge.name:<13} {' '.join(self.edge.pins):<60} covered: this Python has these versions"
        return f"{self.edge.name:<13} {' '.join(self.edge.pins):<60} {verdict:<8} {self.seconds:6.1f} s"


#: An edge whose pins are what the running Python has installed (``--skip-covered``).
COVERED = "covered"


def installed_pins(edge: Edge, version_of: Callable[[str], str | None]) -> bool:
    """True when every pin of ``edge`` is the version ``version_of`` reports for its package (pure): the suite
    running in that Python already runs a superset of the edge's tests and its real run."""
    for pin in edge.pins:
        name, _, version = pin.partition("==")
        if version_of(name) != version:
            return False
    return True


def _version_here(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def build_venv_name(edge: Edge, checkout: Path, python_version: str) -> str:
    """The edge's venv directory name: its name and a hash of the pins, the checkout and the Python (pure)."""
    key = "\n".join([*edge.pins, str(checkout), python_version])
    return f"{edge.name}-{hashlib.sha1(key.encode()).hexdigest()[:12]}"  # noqa: S324 -- a name, not security


def build_install_argv(python: Path, edge: Edge, checkout: Path) -> list[str]:
    """pip installing the checkout editable with its dev extra and the edge's extra, at the edge's pins (pure)."""
    return [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
            "-e", f"{checkout}[dev,{edge.extra}]", *edge.pins]


def build_pytest_argv(python: Path, edge: Edge, basetemp: Path) -> list[str]:
    """pytest on the edge's selection, its temporary files under ``basetemp`` (pure)."""
    return [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=--strict-markers",
            f"--basetemp={basetemp}", *edge.pytest_args]


def _run(argv: Sequence[str], log: Path, env: dict[str, str], timeout_s: float) -> int:
    """Run ``argv`` in the checkout in its own process group, output appended to ``log``; on timeout the group
    is ended and the exit status is 124."""
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=CHECKOUT, env=env,
                                start_new_session=True)
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            out.write(f"timed out after {timeout_s:g} s\n".encode())
            return 124


def _env(work: Path) -> dict[str, str]:
    """The parent's environment without its venv and path settings; temporary files under ``work``, which must
    be a short path: Parsl's worker pool starts a multiprocessing manager whose Unix socket is made in TMPDIR,
    and beyond 107 bytes (AF_UNIX) it cannot start, so every block fails (seen under a pytest ``tmp_path``)."""
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}}
    env["TMPDIR"] = str(work)
    return env


def _ensure_venv(venv: Path, edge: Edge, log: Path, env: dict[str, str]) -> bool:
    """The edge's venv, created and installed once; reinstalled when pyproject.toml changed. Locked, so two
    runs sharing the cache do not install into one venv at once."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    stamp = venv / f".installed-{hashlib.sha1((CHECKOUT / 'pyproject.toml').read_bytes()).hexdigest()[:12]}"  # noqa: S324
    with (venv.parent / f"{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return True
        python = venv / "bin" / "python"
        if not python.exists() and _run([sys.executable, "-m", "venv", str(venv)], log, env, 300) != 0:
            return False
        if _run(build_install_argv(python, edge, CHECKOUT), log, env, 900) != 0:
            return False
        for old in venv.glob(".installed-*"):
            old.unlink()
        stamp.touch()
        return True


def check_edge(edge: Edge, cache: Path, work: Path) -> Outcome:
    """Install (once), run the tests, then the real run; the first failing step is named."""
    start = time.monotonic()
    venv = cache / build_venv_name(edge, CHECKOUT, sys.version.split()[0])
    log = cache / f"{venv.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"edge {edge.name}: {' '.join(edge.pins)}\n")
    edge_work = work / edge.name
    edge_work.mkdir(parents=True, exist_ok=True)
    env = _env(edge_work)

    def done(ok: bool, what: str) -> Outcome:
        return Outcome(edge, ok, time.monotonic() - start, what)

    if not _ensure_venv(venv, edge, log, env):
        return done(False, "install")
    python = venv / "bin" / "python"
    if _run(build_pytest_argv(python, edge, edge_work / "pytest"), log, env, 600) != 0:
        return done(False, "tests")
    if edge.run:
        before = log.stat().st_size
        if _run([str(python), *edge.run], log, env, 300) != 0:
            return done(False, "real run")
        if edge.run_expect not in log.read_text(errors="replace")[before:]:
            return done(False, f"real run: no {edge.run_expect!r}")
    return done(True, "passed")


def _interleaved(edges: Sequence[Edge]) -> list[Edge]:
    """Parsl and Dask edges alternated (pure), so that two at a time are one of each: different frameworks'
    waits overlap best and no two Parsl runs contend for the same short heartbeats."""
    parsl = [e for e in edges if e.extra == "parsl"]
    dask = [e for e in edges if e.extra != "parsl"]
    mixed = [e for pair in zip(parsl, dask, strict=False) for e in pair]
    return mixed + parsl[len(mixed) // 2:] + dask[len(mixed) // 2:]


def default_cache() -> Path:
    """``$HOTSPARE_COMPAT_CACHE``, else ``$XDG_CACHE_HOME/hotspare/compat`` (``~/.cache/...``)."""
    if os.environ.get("HOTSPARE_COMPAT_CACHE"):
        return Path(os.environ["HOTSPARE_COMPAT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hotspare" / "compat"


def main(argv: Sequence[str] | None = None) -> int:
    """Check the edges asked for (all by default); one line each; 1 if any failed, 2 for an unknown name."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help=f"check only this edge (repeatable): {', '.join(e.name for e in EDGES)}")
    parser.add_argument("--jobs", type=int, default=2, help="edges checked at once (default: %(default)s)")
    parser.add_argument("--cache", type=Path, default=None, help=f"the venvs' directory (default: {default_cache()})")
    parser.add_argument("--skip-covered", action="store_true",
                        help="do not build or run an edge whose exact versions the Python running this has installed "
                             "(tests/test_compat.py: the suite in that Python covers it)")
    args = parser.parse_args(argv)
    unknown = set(args.only) - {e.name for e in EDGES}
    if unknown:
        parser.error(f"unknown edge {', '.join(sorted(unknown))}: use one of {', '.join(e.name for e in EDGES)}")
    edges = [e for e in EDGES if not args.only or e.name in args.only]
    covered = [e for e in edges if args.skip_covered and installed_pins(e, _version_here)]
    for edge in covered:
        print(Outcome(edge, True, 0.0, COVERED).line(), flush=True)
    edges = [e for e in edges if e not in covered]
    cache = (args.cache or default_cache()).resolve()
    # Temporary files in a fresh, short-named directory of the system's (see _env), removed afterwards.
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give 1 or more")
    with tempfile.TemporaryDirectory(prefix="hsc-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        outcomes = []
        for outcome in pool.map(lambda edge: check_edge(edge, cache, Path(tmp)), _interleaved(edges)):
            print(outcome.line(), flush=True)
            outcomes.append(outcome)
    for bad in (o for o in outcomes if not o.ok):
        venv = cache / build_venv_name(bad.edge, CHECKOUT, sys.version.split()[0])
        print(f"{bad.edge.name}: see {venv}.log", file=sys.stderr)
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
