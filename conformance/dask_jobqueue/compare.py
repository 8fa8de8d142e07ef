"""Compare the plain and failover runs of dask-jobqueue's suite: counts per environment, and every test that
passed with the plain classes but not with the failover ones (a conformance defect of ours).

    python compare.py RESULTS_DIR
    python compare.py --rerun-targets ENV RESULTS_DIR

``RESULTS_DIR`` holds ``<classes>-<env>.xml`` JUnit files (``run.sh`` writes them). Exit status 1 when any test
passed plain and not failover, else 0.

**Reruns.** Some upstream tests are flaky with both classes (with distributed 2026.8 a synchronous
``Client.scheduler_info()`` can return the client's 2-second refresh, which lists no workers, instead of its own
fetch: ``test_pbs.py::test_basic`` can then fail on either class; it did once in CI). ``--rerun-targets ENV``
prints the ``file.py::function`` of each test that passed plain and not failover under ``-E ENV``; the scripts run
those again with the failover classes into ``RESULTS_DIR/reruns/failover-<env>-<n>.xml``. A test that passed in
every rerun (three) is reported as flaky, by name, and is not a regression; one that failed again is.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

ENVS = ("none", "slurm", "pbs")
#: Tests parametrised with class objects are named after the class: the failover run's
#: ``test_header[FailoverPBSCluster]`` is the plain run's ``test_header[PBSCluster]``.
_FAILOVER_ID = re.compile(r"\bFailover(SLURM|PBS)Cluster\b")
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed")


@dataclass(frozen=True, slots=True)
class Run:
    """One pytest run: each test's outcome by its name (``test_slurm.py::test_basic`` style)."""

    outcomes: dict[str, str]

    def counts(self) -> Counter[str]:
        return Counter(self.outcomes.values())


def parse_outcome(case: ElementTree.Element) -> str:
    """A JUnit testcase's outcome in pytest's words (pure)."""
    children = {child.tag: child for child in case}
    skipped = children.get("skipped")
    if skipped is not None:
        return "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
    if "failure" in children:
        return "failed"
    if "error" in children:
        return "error"
    return "passed"  # JUnit has no XPASS: a non-strict xfail that passed is written as a pass


def parse_junit(text: str) -> Run:
    """Outcomes by ``file::test[param]`` from a JUnit file's text (pure)."""
    root = ElementTree.fromstring(text)  # noqa: S314 -- our own pytest's output
    outcomes = {}
    for case in root.iter("testcase"):
        # xunit1 names the file; a run given node ids by path (the reruns) leaves classname empty.
        path = case.get("file")
        module = Path(path).stem if path else case.get("classname", "").rsplit(".", 1)[-1]
        name = _FAILOVER_ID.sub(r"\1Cluster", case.get("name", ""))
        outcomes[f"{module}.py::{name}"] = parse_outcome(case)
    return Run(outcomes)


def regressions(plain: Run, failover: Run) -> list[str]:
    """Tests that passed with the plain classes and did not with the failover ones (pure)."""
    return sorted(t for t, o in plain.outcomes.items() if o == "passed" and failover.outcomes.get(t) != "passed")


def rerun_targets(plain: Run, failover: Run) -> list[str]:
    """The ``file.py::function`` (parameters dropped: every case of the function runs again) of each regression,
    to run again with the failover classes (pure)."""
    return sorted({t.split("[", 1)[0] for t in regressions(plain, failover)})


def passed_every_rerun(test: str, reruns: list[Run]) -> bool:
    """True when there were reruns and ``test`` passed in each (pure)."""
    return bool(reruns) and all(r.outcomes.get(test) == "passed" for r in reruns)


def build_report(runs: dict[tuple[str, str], Run],
                 reruns: dict[str, list[Run]] | None = None) -> tuple[list[str], list[str]]:
    """The count lines and the regression lines for whatever runs exist; a regression that passed every failover
    rerun of its environment (``reruns``: {env: runs}) is a flaky line among the counts instead (pure)."""
    lines, bad = [], []
    reruns = reruns or {}
    for env in ENVS:
        plain, failover = runs.get(("plain", env)), runs.get(("failover", env))
        for classes, run in (("plain", plain), ("failover", failover)):
            if run is not None:
                counts = run.counts()
                lines.append(f"{env:6} {classes:9} " + " ".join(f"{o}={counts[o]}" for o in OUTCOMES if counts[o]))
        if plain is not None and failover is not None:
            again = reruns.get(env, [])
            for t in regressions(plain, failover):
                first = failover.outcomes.get(t, "absent")
                if passed_every_rerun(t, again):
                    lines.append(f"{env:6} flaky     {t}: {first} with failover, then passed {len(again)} reruns")
                else:
                    bad.append(f"{env}: {t} (failover: {first}"
                               + (f"; reruns: {', '.join(r.outcomes.get(t, 'absent') for r in again)})" if again
                                  else ")"))
    return lines, bad


def read_runs(results: Path) -> tuple[dict[tuple[str, str], Run], dict[str, list[Run]]]:
    """The legs' runs by (classes, env) and the failover reruns by env, from the JUnit files in ``results``."""
    runs = {}
    for path in sorted(results.glob("*-*.xml")):
        classes, env = path.stem.split("-", 1)
        runs[(classes, env)] = parse_junit(path.read_text())
    reruns: dict[str, list[Run]] = {}
    for path in sorted((results / "reruns").glob("failover-*-*.xml")):
        env = path.stem.split("-")[1]
        reruns.setdefault(env, []).append(parse_junit(path.read_text()))
    return runs, reruns


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--rerun-targets" and argv[1] in ENVS:
        runs, _ = read_runs(Path(argv[2]))
        plain, failover = runs.get(("plain", argv[1])), runs.get(("failover", argv[1]))
        if plain is not None and failover is not None:
            print("\n".join(rerun_targets(plain, failover)))
        return 0
    if len(argv) != 1:
        print("usage: compare.py [--rerun-targets none|slurm|pbs] RESULTS_DIR", file=sys.stderr)
        return 2
    runs, reruns = read_runs(Path(argv[0]))
    lines, bad = build_report(runs, reruns)
    print("\n".join(lines))
    print("passed plain, not failover:" if bad else "passed plain, not failover: none")
    for line in bad:
        print(f"  {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
