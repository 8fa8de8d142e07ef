"""The `hotspare` command, run as a real subprocess: outputs, JSON contract, errors and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from hotspare import Host
from hotspare.record.ledger import Ledger
from hotspare.record.quarantine import SNAPSHOT_NAME, Quarantine

EXAMPLES = Path(__file__).parent.parent / "examples" / "logs"
KEYS = {"source", "failure_class", "blamed_hosts", "mentioned_hosts", "retryable", "exclude_hosts", "reason", "evidence"}


def test_classify_json_one_object_per_file() -> None:
    """--json prints one object per input file, one per line, with the documented keys."""
    logs = [str(EXAMPLES / "sunspot-node-kill.log"), str(EXAMPLES / "sunspot-enospc.log")]
    result = run_cli("classify", "--json", "--rc", "143", *logs)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["source"] for r in records] == logs
    assert all(set(r) >= KEYS for r in records)
    kill, enospc = records
    assert kill["failure_class"] == "rank_killed" and kill["blamed_hosts"] == ["x1921c7s1b0n0"]
    assert kill["exclude_hosts"] == ["x1921c7s1b0n0"] and kill["mentioned_hosts"] == ["x1921c7s0b0n0"]
    expected = {"line": 5, "pattern": "pals.rank_signal_9", "role": "root", "host": "x1921c7s1b0n0"}
    assert kill["evidence"][0].items() >= expected.items()
    assert kill["progress"] == {"first_line": 1, "last_line": 4, "last_step": 42}
    assert enospc["failure_class"] == "transient_io" and enospc["retryable"] is True
    assert enospc["blamed_hosts"] == [] and enospc["exclude_hosts"] == []


def test_classify_table_is_readable() -> None:
    """The default output is a table naming the class, the blamed host and the evidence lines."""
    result = run_cli("classify", "--hostfile", str(EXAMPLES / "slurm-node-crash.hosts"), str(EXAMPLES / "slurm-node-crash.log"))
    assert result.returncode == 0
    assert "node_loss" in result.stdout
    assert "blamed     n2" in result.stdout
    assert "slurm.srun_node_failure" in result.stdout


def test_classify_reads_stdin() -> None:
    """'-' reads the log from standard input."""
    result = run_cli("classify", "--json", "-", stdin=b"srun: error: nid001321: tasks 4-7: Killed\n")
    record = json.loads(result.stdout)
    assert record["source"] == "-" and record["blamed_hosts"] == ["nid001321"]


def test_classify_allocation_makes_others_foreign() -> None:
    """--hosts: a host outside the allocation is foreign, never blamed."""
    result = run_cli("classify", "--json", "--hosts", "n[1-4]", "-", stdin=b"srun: error: Node failure on n9\n")
    record = json.loads(result.stdout)
    assert record["blamed_hosts"] == [] and record["foreign_hosts"] == ["n9"]


def test_missing_file_is_one_error_line_and_others_still_reported(tmp_path: Path) -> None:
    """A missing log gives one 'error:' line and exit 2; the readable logs are still classified."""
    result = run_cli("classify", "--json", str(tmp_path / "missing.log"), str(EXAMPLES / "slurm-node-crash.log"))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "missing.log" in result.stderr
    assert json.loads(result.stdout)["blamed_hosts"] == ["n2"]


def test_unreadable_inputs_exit_2(tmp_path: Path) -> None:
    """A directory, a bad hostlist or a missing hostfile: one error line, exit 2."""
    for args in (
        ["classify", str(tmp_path)],
        ["classify", "--hosts", "n[1-", str(EXAMPLES / "slurm-node-crash.log")],
        ["classify", "--hostfile", str(tmp_path / "nohosts"), str(EXAMPLES / "slurm-node-crash.log")],
        ["scrape", str(tmp_path / "missing.log")],
    ):
        result = run_cli(*args)
        assert result.returncode == 2, args
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, (args, result.stderr)


def test_scrape_prints_blamed_hosts_as_the_allocation_writes_them() -> None:
    """scrape prints one host per line in the hostfile's own form (string-comparable), exit 0."""
    log = str(EXAMPLES / "sunspot-node-kill.log")
    plain = run_cli("scrape", "--machine", "sunspot", log)
    assert plain.returncode == 0
    assert plain.stdout == "x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov\n"
    hostfile = str(EXAMPLES / "sunspot-node-kill.hosts")
    with_alloc = run_cli("scrape", "--hostfile", hostfile, log)
    assert with_alloc.stdout.strip() in Path(hostfile).read_text().split()


def test_scrape_prints_nothing_when_no_host_is_named() -> None:
    """Like the seed's attempt logs: nothing named, nothing printed, exit 0 (never a guess)."""
    result = run_cli("scrape", str(EXAMPLES / "sunspot-enospc.log"))
    assert result.returncode == 0 and result.stdout == ""


def test_hostile_host_text_is_never_executed_or_printed(tmp_path: Path) -> None:
    """A log naming `n1;touch PWNED` blames nobody and nothing runs."""
    marker = tmp_path / "PWNED"
    line = f"srun: error: Node failure on n1;touch${{IFS}}{marker}\n".encode()
    result = run_cli("scrape", "-", stdin=line)
    assert result.returncode == 0 and result.stdout == ""
    assert not marker.exists()
    record = json.loads(run_cli("classify", "--json", "-", stdin=line).stdout)
    assert record["blamed_hosts"] == []
    assert record["evidence"][0]["host"] is None and ";" in record["evidence"][0]["host_text"]


def test_usage_error_exit_code() -> None:
    """An unknown subcommand is a usage error (argparse's exit 2)."""
    assert run_cli("frobnicate").returncode == 2


def test_scheduler_facts_from_the_command_line() -> None:
    """--job-state NODE_FAIL with --down n2 attributes a node loss no line names (reason scheduler)."""
    line = b"slurmstepd-n1: error: *** STEP 4.0 ON n1 CANCELLED AT 2026-11-29T09:28:02 DUE TO NODE FAILURE ***\n"
    result = run_cli("classify", "--json", "--hosts", "n[1-3]", "--job-state", "NODE_FAIL", "--down", "n2", "-", stdin=line)
    record = json.loads(result.stdout)
    assert record["failure_class"] == "node_loss"
    assert record["blamed_hosts"] == ["n2"] and record["blame"][0]["reason"] == "scheduler"


def test_wrap_width_option_is_validated() -> None:
    """--wrap-width takes a number of columns or 'auto'; anything else is a usage error."""
    assert run_cli("classify", "--wrap-width", "auto", "-", stdin=b"x\n").returncode == 0
    bad = run_cli("classify", "--wrap-width", "5", "-", stdin=b"x\n")
    assert bad.returncode == 2 and "narrower" in bad.stderr


def test_min_free_gb_refuses_to_start(tmp_path: Path) -> None:
    """--min-free-gb larger than the disk: one error line naming the path and the fix, exit 2, nothing written."""
    run = tmp_path / "run"
    result = run_cli("launch", "--hosts", "n1", "--launcher", "local", "--min-free-gb", "1e9", "--checkpoint-dir",
                     str(tmp_path), "--run-dir", str(run), "--", "true")
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and "--min-free-gb" in result.stderr
    assert not run.exists()


def test_demo_and_postmortem(tmp_path: Path) -> None:
    """`hotspare demo` fails over and matches the fault-free checksum; `postmortem --json` reads its run."""
    demo = run_cli("demo", "--dir", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "equal; exit code 0" in demo.stdout and "out (scraped)" in demo.stdout
    run_dir = demo.stdout.rsplit("run directory ", 1)[1].splitlines()[0].strip()
    assert f"hotspare postmortem {run_dir}" in demo.stdout and Path(run_dir, "ledger.sqlite").is_file()
    report = json.loads(run_cli("postmortem", "--json", run_dir).stdout)
    assert report["state"] == "succeeded" and len(report["attempts"]) == 2
    assert report["decisions"][0]["action"] == "swap" and report["incidents"][0]["died_of"] == "rank_killed"
    assert run_dir == str(tmp_path / "demo" / "run")
    # The supervisor sampled progress and checkpoints: the incident's timeline adds up, goodput is a share.
    [incident] = report["incidents"]
    parts = [incident[k] for k in ("detect_s", "decide_s", "relaunch_s", "resume_s")]
    assert None not in parts and incident["recover_s"] == pytest.approx(sum(parts), abs=0.01)
    assert 0 < report["goodput"]["ettr"] < 1 and report["goodput"]["lost_s"] > 0
    assert run_cli("postmortem", str(tmp_path)).returncode == 2


def test_demo_refuses_a_directory_in_use(tmp_path: Path) -> None:
    """`hotspare demo --dir` into a non-empty directory: one line, exit 2, nothing in it touched."""
    (tmp_path / "mine.txt").write_text("keep me")
    demo = run_cli("demo", "--dir", str(tmp_path))
    assert demo.returncode == 2 and demo.stderr.count("\n") == 1 and "not empty" in demo.stderr, demo.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


@pytest.mark.parametrize(("args", "message"), [
    (["--launcher", "mpiexec", "--launcher-cmd", "no-such-mpiexec"], "'no-such-mpiexec' not found on PATH"),
    (["--launcher", "local", "--stall", "0"], "stall_s and scheduler_poll_s must be > 0"),
    (["--launcher", "local", "--launcher-rsh", "no-such-tmrsh"], "remote shell 'no-such-tmrsh' not found"),
    (["--launcher", "local", "--launcher-rsh", "sh"], "launcher_rsh is for MPICH Hydra (launcher mpiexec), not local"),
])
def test_launch_options_refused_before_anything_runs(tmp_path: Path, args: list[str], message: str) -> None:
    """A launcher program that is not installed, or a zero stall: one error line, exit 2, no run directory."""
    run = tmp_path / "run"
    result = run_cli("launch", "--hosts", "n1", *args, "--run-dir", str(run), "--", "true")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not run.exists()


def test_shared_quarantine_keeps_a_host_out_of_the_first_attempt(tmp_path: Path) -> None:
    """--quarantine FILE: a host another run quarantined is replaced by a --spare-hosts spare before the first
    attempt starts (the Parsl adapter's MPI tasks rely on this), and the run succeeds on the others."""
    shared = tmp_path / "wf" / SNAPSHOT_NAME
    owner = Quarantine.open(tmp_path / "wf" / "ledger.sqlite", snapshot=shared)
    owner.add(Host("n2"), "scraped", detail="lost in another task")
    published = shared.read_bytes()
    run = tmp_path / "run"
    result = run_cli("launch", "--hosts", "n1,n2", "--spare-hosts", "n3", "--quarantine", str(shared),
                     "--launcher", "local", "--run-dir", str(run), "--", "true")
    assert result.returncode == 0, result.stderr
    ledger = Ledger.open(run)
    try:
        assert ledger.attempts()[0].hosts == ("n1", "n3")
    finally:
        ledger.close()
    assert shared.read_bytes() == published  # only its owner writes it


@pytest.mark.parametrize("content", [None, "", "{not json", '{"format": "other"}',
                                     '{"format": "hotspare-quarantine/1", "entries": [{"host": "a;b"}]}'])
def test_unreadable_shared_quarantine_is_refused(tmp_path: Path, content: str | None) -> None:
    """A --quarantine snapshot that is missing or not a snapshot: one error line, exit 2, nothing run — a
    wrong path must never read as 'no host is kept out'."""
    shared = tmp_path / SNAPSHOT_NAME
    if content is not None:
        shared.write_text(content)
    run = tmp_path / "run"
    result = run_cli("launch", "--hosts", "n1,n2", "--quarantine", str(shared), "--launcher", "local",
                     "--run-dir", str(run), "--", "true")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "quarantine" in result.stderr, result.stderr
    assert not run.exists()


def test_postmortem_of_a_run_that_never_started_an_attempt(tmp_path: Path) -> None:
    """A ledger with a run but no attempt (killed before its first launch): a report, not a traceback."""
    ledger = Ledger.open(tmp_path / "run")
    ledger.start_run({"command": ["true"]}, 1.0)
    ledger.close()
    result = run_cli("postmortem", str(tmp_path / "run"))
    assert result.returncode == 0 and result.stdout.startswith("run running"), result.stdout + result.stderr


def test_version_is_the_installed_distributions() -> None:
    """``hotspare --version`` (and ``python -m hotspare --version``) print the package metadata's version, exit 0."""
    from importlib.metadata import version  # noqa: PLC0415

    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"hotspare {version('hotspare')}"
    module = subprocess.run([sys.executable, "-m", "hotspare", "--version"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert (module.returncode, module.stdout) == (0, result.stdout)
