"""The documentation site: it builds with warnings as errors, its CLI reference lists every option of the
command, its worked verdicts are what the classifier decides, and the shell examples of the README and the
docs are valid shell."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hotspare import Host, classify, load_patterns, scan
from hotspare.cli import _parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
_VERDICT = re.compile(r"```text\n(?P<log>.*?)```\n+verdict: (?P<fields>[^\n]+)", re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html")
    doctrees = tmp_path_factory.mktemp("doctrees")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d",
                           str(doctrees), str(DOCS), str(out)], capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_site_builds_with_warnings_as_errors(site: Path) -> None:
    for page in ("index", "quickstart", "guides/launch", "guides/parsl", "guides/dask", "guides/pbs",
                 "guides/slurm", "verdicts", "exit-codes", "run-directory", "quarantine", "benchmarks",
                 "reference/cli", "reference/api", "changelog"):
        assert (site / f"{page}.html").is_file(), page
    assert (site / "_images" / "demo-run.png").is_file() or any(site.rglob("demo-run.png"))


def _options(parser: argparse.ArgumentParser) -> set[str]:
    found = set()
    for action in parser._actions:
        found.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


def test_the_cli_reference_lists_every_option(site: Path) -> None:
    text = (site / "reference" / "cli.html").read_text()
    options = _options(_parser())
    assert "--nhosts" in options and "--launcher-rsh" in options
    missing = sorted(o for o in options - {"--help"} if o not in text)  # argparse's own --help is left out
    assert not missing, missing


def _examples() -> list[tuple[str, dict[str, str]]]:
    found = []
    for match in _VERDICT.finditer((DOCS / "verdicts.md").read_text()):
        fields = dict(item.split("=", 1) for item in match["fields"].split())
        found.append((match["log"], fields))
    return found


def test_every_class_has_a_worked_example() -> None:
    classes = {fields["class"] for _, fields in _examples()}
    assert classes >= {"node_loss", "rank_killed", "gpu_hw", "oom", "walltime", "transient_io", "network",
                       "user_error", "preempted", "cancelled", "unknown"}, classes


@pytest.mark.parametrize(("log", "fields"), _examples(), ids=lambda v: v["class"] if isinstance(v, dict) else "")
def test_the_worked_verdicts_are_the_classifiers(log: str, fields: dict[str, str]) -> None:
    allocation = [Host(h) for h in fields["allocation"].split(",")] if "allocation" in fields else None
    rc = int(fields["rc"]) if "rc" in fields else None
    verdict = classify(scan(log.encode(), load_patterns()), rc=rc, allocation=allocation)

    def names(hosts: tuple[Host, ...]) -> str:
        return ",".join(h.name for h in hosts) or "-"

    got = {"class": verdict.failure_class.value, "blamed": names(verdict.blamed_hosts),
           "excluded": names(verdict.exclude_hosts), "retryable": "yes" if verdict.retryable else "no"}
    assert got == {k: fields[k] for k in got}, verdict.reason


def _shell_blocks(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"```(?:sh|bash)\n(.*?)```", text, re.S)]


def test_the_shell_examples_are_valid_shell() -> None:
    """Every ```sh block of the README and the docs parses (bash -n): a broken line continuation or quote in an
    example is caught; the local ones are run by the tests of the commands they show."""
    blocks = [b for page in [ROOT / "README.md", *DOCS.rglob("*.md")] for b in _shell_blocks(page.read_text())]
    assert len(blocks) >= 4
    bash = shutil.which("bash")
    assert bash is not None
    for block in blocks:
        done = subprocess.run([bash, "-n"], input=block, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0, (block, done.stderr)
