"""conformance/dask_jobqueue/compare.py: how the plain and failover legs of dask-jobqueue's own suite are compared,
and how a test that failed once with the failover classes is told apart from a flake by its reruns (pure)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent.parent / "conformance" / "dask_jobqueue"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jobqueue_compare", HERE / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


compare = _load()


def junit(*cases: tuple[str, str], by_path: bool = False) -> str:
    """A JUnit file (xunit1, as pytest writes it) with one testcase per (name, outcome); ``by_path``: as a run
    given node ids by file path writes it (no classname, the file named)."""
    body = {"passed": "", "failed": "<failure message='boom'/>", "error": "<error message='boom'/>",
            "skipped": "<skipped type='pytest.skip' message='no'/>"}
    where = ("classname='' file='../site-packages/dask_jobqueue/tests/test_pbs.py'" if by_path
             else "classname='test_pbs'")
    rows = "".join(f"<testcase {where} name='{name}'>{body[outcome]}</testcase>" for name, outcome in cases)
    return f"<testsuites><testsuite name='pytest'>{rows}</testsuite></testsuites>"


def write(results: Path, name: str, *cases: tuple[str, str]) -> None:
    path = results / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit(*cases, by_path=name.startswith("reruns/")))


def test_a_parametrised_regression_is_rerun_as_its_whole_function() -> None:
    plain = compare.parse_junit(junit(("test_basic", "passed"), ("test_header[PBSCluster]", "passed"),
                                      ("test_scale", "passed")))
    failover = compare.parse_junit(junit(("test_basic", "failed"), ("test_header[FailoverPBSCluster]", "error"),
                                         ("test_scale", "passed")))
    assert compare.regressions(plain, failover) == ["test_pbs.py::test_basic", "test_pbs.py::test_header[PBSCluster]"]
    assert compare.rerun_targets(plain, failover) == ["test_pbs.py::test_basic", "test_pbs.py::test_header"]


@pytest.mark.parametrize(("reruns", "flaky"), [
    (["passed", "passed", "passed"], True),
    (["passed", "failed", "passed"], False),
    (["passed", "passed", "absent"], False),
    ([], False),
])
def test_only_a_test_that_passed_every_rerun_is_a_flake(tmp_path: Path, reruns: list[str], flaky: bool) -> None:
    write(tmp_path, "plain-pbs.xml", ("test_basic", "passed"), ("test_scale", "passed"))
    write(tmp_path, "failover-pbs.xml", ("test_basic", "failed"), ("test_scale", "passed"))
    for n, outcome in enumerate(reruns, 1):
        write(tmp_path, f"reruns/failover-pbs-{n}.xml", *([] if outcome == "absent" else [("test_basic", outcome)]))
    lines, bad = compare.build_report(*compare.read_runs(tmp_path))
    flaky_lines = [line for line in lines if "flaky" in line]
    if flaky:
        assert bad == [] and flaky_lines == ["pbs    flaky     test_pbs.py::test_basic: failed with failover, "
                                             "then passed 3 reruns"]
    else:
        assert flaky_lines == [] and len(bad) == 1 and bad[0].startswith("pbs: test_pbs.py::test_basic (failover: failed")
        if reruns:
            assert bad[0].endswith(f"; reruns: {', '.join(reruns)})")


def test_the_scripts_interface_exit_status_and_rerun_list(tmp_path: Path) -> None:
    write(tmp_path, "plain-pbs.xml", ("test_basic", "passed"), ("test_header[PBSCluster]", "passed"))
    write(tmp_path, "failover-pbs.xml", ("test_basic", "failed"), ("test_header[FailoverPBSCluster]", "passed"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(HERE / "compare.py"), *args], capture_output=True, text=True,
                              timeout=60, check=False)

    targets = run("--rerun-targets", "pbs", str(tmp_path))
    assert (targets.returncode, targets.stdout) == (0, "test_pbs.py::test_basic\n")
    assert run("--rerun-targets", "slurm", str(tmp_path)).stdout == ""  # no legs for that environment
    before = run(str(tmp_path))
    assert before.returncode == 1 and "  pbs: test_pbs.py::test_basic (failover: failed)" in before.stdout
    for n in (1, 2, 3):
        write(tmp_path, f"reruns/failover-pbs-{n}.xml", ("test_basic", "passed"))
    after = run(str(tmp_path))
    assert after.returncode == 0, after.stdout
    assert "passed plain, not failover: none" in after.stdout.splitlines()
    assert "pbs    flaky     test_pbs.py::test_basic: failed with failover, then passed 3 reruns" in after.stdout
    bad_usage = run("--rerun-targets", "lsf", str(tmp_path))
    assert bad_usage.returncode == 2 and bad_usage.stderr.startswith("usage:")
