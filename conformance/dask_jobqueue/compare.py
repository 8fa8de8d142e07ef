"""Compare the plain and failover runs of dask-jobqueue's suite: counts per environment, and every test that
passed with the plain classes but not with the failover ones (a conformance defect of ours).

    python compare.py RESULTS_DIR

``RESULTS_DIR`` holds ``<classes>-<env>.xml`` JUnit files (``run.sh`` writes them). Exit status 1 when any test
passed plain and not failover, else 0.
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
        module = case.get("classname", "").rsplit(".", 1)[-1]
        name = _FAILOVER_ID.sub(r"\1Cluster", case.get("name", ""))
        outcomes[f"{module}.py::{name}"] = parse_outcome(case)
    return Run(outcomes)


def regressions(plain: Run, failover: Run) -> list[str]:
    """Tests that passed with the plain classes and did not with the failover ones (pure)."""
    return sorted(t for t, o in plain.outcomes.items() if o == "passed" and failover.outcomes.get(t) != "passed")


def build_report(runs: dict[tuple[str, str], Run]) -> tuple[list[str], list[str]]:
    """The count lines and the regression lines for whatever runs exist (pure)."""
    lines, bad = [], []
    for env in ENVS:
        plain, failover = runs.get(("plain", env)), runs.get(("failover", env))
        for classes, run in (("plain", plain), ("failover", failover)):
            if run is not None:
                counts = run.counts()
                lines.append(f"{env:6} {classes:9} " + " ".join(f"{o}={counts[o]}" for o in OUTCOMES if counts[o]))
        if plain is not None and failover is not None:
            bad += [f"{env}: {t} (failover: {failover.outcomes.get(t, 'absent')})"
                    for t in regressions(plain, failover)]
    return lines, bad


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: compare.py RESULTS_DIR", file=sys.stderr)
        return 2
    results = Path(argv[0])
    runs = {}
    for path in sorted(results.glob("*-*.xml")):
        classes, env = path.stem.split("-", 1)
        runs[(classes, env)] = parse_junit(path.read_text())
    lines, bad = build_report(runs)
    print("\n".join(lines))
    print("passed plain, not failover:" if bad else "passed plain, not failover: none")
    for line in bad:
        print(f"  {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
