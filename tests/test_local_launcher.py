"""The local launcher with real processes: host groups, crash reports, faults, teardown, and blame."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hotspare import FailureClass, Host, classify, scan
from hotspare.act.launchers import LaunchSpec, build_argv, render_hostfile, write_hostfile
from hotspare.sim.local_launcher import death_line, exit_status, parse_faults, rank_env, whole_lines

# One raw spelling with a domain and interface suffix: the launcher must print it as given.
HOSTS = ["x1921c7s0b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov", "x1921c7s1b0n0", "x1921c7s2b0n0"]
PPN = 2
BOUND_S = 30.0

RANK_SCRIPT = r"""
import os, signal, sys, time
env = os.environ
# One write per line: ranks share the launcher's stdout (print writes the newline separately).
sys.stdout.write(f"rank host={env['HOTSPARE_HOST']} rank={env['RANK']} local={env['LOCAL_RANK']} world={env['WORLD_SIZE']}\n")
sys.stdout.flush()
if env.get("DRIBBLE"):  # a long line in one-byte writes to stderr, then a line left unfinished
    for byte in f"dribble rank={env['RANK']} " + "x" * int(env["DRIBBLE"]) + "\n":
        os.write(2, byte.encode())
    if env["HOTSPARE_HOST"] == env.get("FAIL_HOST"):
        time.sleep(1)  # the others end their lines before this failure tears them down
    os.write(2, f"unfinished rank={env['RANK']}".encode())
if env["HOTSPARE_HOST"] == env.get("STUBBORN_HOST"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a rank that will not stop: teardown must SIGKILL it
if env["HOTSPARE_HOST"] == env.get("FAIL_HOST"):
    sys.exit(3)
time.sleep(float(sys.argv[1]))
"""


@dataclass
class Run:
    """A launcher started by a test, in its own session."""

    proc: subprocess.Popen[str]
    pids: Path

    def pgids(self) -> dict[str, int]:
        """The host groups, once the launcher has written them (bounded wait)."""
        deadline = time.monotonic() + BOUND_S
        while not self.pids.exists():
            assert time.monotonic() < deadline, "launcher never wrote its pids file"
            assert self.proc.poll() is None, "launcher exited before writing its pids file"
            time.sleep(0.02)
        return {k: int(v) for k, v in json.loads(self.pids.read_text()).items()}

    def finish(self) -> tuple[int, str]:
        """The exit status and all output; fails the test rather than wait past the bound."""
        out, _ = self.proc.communicate(timeout=BOUND_S)
        return self.proc.returncode, out


@contextlib.contextmanager
def launched(tmp_path: Path, sleep_s: float, faults: dict[str, list[str]] | None = None,
             env: dict[str, str] | None = None) -> Iterator[Run]:
    """Start the launcher on HOSTS x PPN ranks of RANK_SCRIPT; on the way out kill what is left of it."""
    (tmp_path / "rank.py").write_text(RANK_SCRIPT)
    hostfile = tmp_path / "active.hostfile"
    write_hostfile(hostfile, render_hostfile([Host(h) for h in HOSTS], "local", PPN))
    pids = tmp_path / "pids.json"
    spec = LaunchSpec("local", tuple(Host(h) for h in HOSTS), PPN, (sys.executable, str(tmp_path / "rank.py"), str(sleep_s)),
                      hostfile, extra_args=("--pids", str(pids)))
    full_env = {**os.environ, **(env or {})}
    if faults is not None:
        (tmp_path / "faults.json").write_text(json.dumps(faults))
        full_env["HOTSPARE_LOCAL_FAULTS"] = str(tmp_path / "faults.json")
    proc = subprocess.Popen(build_argv(spec), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=full_env, start_new_session=True)
    try:
        yield Run(proc, pids)
    finally:
        _cleanup(proc, pids)


def _cleanup(proc: subprocess.Popen[str], pids: Path) -> None:
    """Kill the rank groups this test's launcher started (while it still holds them) and the launcher."""
    if proc.poll() is None:
        groups = json.loads(pids.read_text()).values() if pids.exists() else []
        for pgid in [*groups, proc.pid]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pgid), signal.SIGKILL)
    if proc.stdout is not None:
        proc.stdout.close()
    proc.wait(timeout=BOUND_S)


def hotspare_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("hotspare-local:")]


def ranks_of(index: int) -> list[int]:
    return [index * PPN + local for local in range(PPN)]


def test_all_ranks_exit_zero(tmp_path: Path) -> None:
    """3 hosts x 2 ranks that exit 0: exit 0, one line per rank with the right identity, nothing else."""
    with launched(tmp_path, 0) as run:
        rc, out = run.finish()
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == 6
    want = {f"rank host={h} rank={i * PPN + j} local={j} world=6" for i, h in enumerate(HOSTS) for j in range(PPN)}
    assert set(lines) == want


@pytest.mark.parametrize("victim", range(len(HOSTS)))
def test_killed_host_is_reported_and_blamed(tmp_path: Path, victim: int) -> None:
    """SIGKILL one host's group: its ranks die from signal 9, the others are torn down, exit 137,
    and the classifier blames exactly that host, whichever index it has."""
    with launched(tmp_path, BOUND_S) as run:
        pgids = run.pgids()
        assert list(pgids) == HOSTS
        os.killpg(pgids[HOSTS[victim]], signal.SIGKILL)
        rc, out = run.finish()
    assert rc == 137
    reports = hotspare_lines(out)
    killed = {f"hotspare-local: host {HOSTS[victim]} rank {r} died from signal 9" for r in ranks_of(victim)}
    assert set(reports[:PPN]) == killed
    torn = {f"hotspare-local: host {h} rank {r} died from signal 15" for i, h in enumerate(HOSTS) if i != victim
            for r in ranks_of(i)}
    assert set(reports[PPN:]) == torn
    verdict = classify(scan(out.encode()), rc=137, allocation=[Host(h) for h in HOSTS])
    assert verdict.failure_class is FailureClass.RANK_KILLED
    assert verdict.blamed_hosts == (Host(HOSTS[victim]),)


def test_down_host_is_unreachable_and_blamed(tmp_path: Path) -> None:
    """A 'down' host's ranks never start: 'cannot reach host', the rest torn down, exit 255, host blamed."""
    with launched(tmp_path, BOUND_S, faults={"down": ["x1921c7s1b0n0"]}) as run:
        assert list(run.pgids()) == [HOSTS[0], HOSTS[2]]
        rc, out = run.finish()
    assert rc == 255
    assert "hotspare-local: cannot reach host x1921c7s1b0n0" in hotspare_lines(out)
    assert "host=x1921c7s1b0n0" not in out
    verdict = classify(scan(out.encode()), rc=255, allocation=[Host(h) for h in HOSTS])
    assert verdict.failure_class is FailureClass.NODE_LOSS
    assert verdict.blamed_hosts == (Host("x1921c7s1b0n0"),)


def test_rank_exit_code_ends_the_job_without_blame(tmp_path: Path) -> None:
    """A rank exiting 3 by itself: reported, others torn down, exit 3, and no node is blamed."""
    with launched(tmp_path, BOUND_S, env={"FAIL_HOST": "x1921c7s2b0n0"}) as run:
        rc, out = run.finish()
    assert rc == 3
    reports = hotspare_lines(out)
    assert reports[0].startswith("hotspare-local: host x1921c7s2b0n0 rank ") and reports[0].endswith(" exited with code 3")
    assert classify(scan(out.encode()), rc=3, allocation=[Host(h) for h in HOSTS]).blamed_hosts == ()


def test_ranks_writing_at_once_are_forwarded_whole_lines_before_their_end(tmp_path: Path) -> None:
    """Six ranks write a long stderr line a byte at a time, all at once, then a line with no newline: each
    reaches the output whole, the unfinished one ended for it on a line of its own, and a failed rank's own words
    come before the word of its end."""
    width = 3000
    with launched(tmp_path, 0, env={"DRIBBLE": str(width), "FAIL_HOST": HOSTS[1]}) as run:
        rc, out = run.finish()
    assert rc == 3
    dribbled = [line for line in out.splitlines() if "dribble" in line]
    assert sorted(dribbled) == sorted(f"dribble rank={r} " + "x" * width for r in range(len(HOSTS) * PPN)), dribbled
    lines = out.splitlines()
    assert {f"unfinished rank={r}" for r in range(len(HOSTS) * PPN)} <= set(lines)  # ended for it, alone
    failed = [line for line in hotspare_lines(out) if "exited with code 3" in line]
    assert failed
    for line in failed:
        rank = int(line.split(" rank ")[1].split()[0])
        assert out.index(f"unfinished rank={rank}") < out.index(line)


def test_whole_lines_batches_complete_lines_and_holds_the_rest() -> None:
    assert whole_lines(b"a\nb\r\nc\rpart") == ([b"a\nb\r\nc\r"], b"part")
    assert whole_lines(b"") == ([], b"")
    long = b"y" * 10 + b"\n"
    writes, held = whole_lines(long * 3 + b"z", limit=25)
    assert (writes, held) == ([long * 2, long], b"z")
    assert whole_lines(b"w" * 40 + b"\n", limit=25) == ([b"w" * 40 + b"\n"], b"")  # longer than a batch: alone


def test_teardown_sigkill_never_blames_the_survivor(tmp_path: Path) -> None:
    """A survivor that ignores SIGTERM is SIGKILLed by the teardown: reported as such, and never blamed."""
    env = {"FAIL_HOST": HOSTS[0], "STUBBORN_HOST": "x1921c7s1b0n0"}
    with launched(tmp_path, BOUND_S, env=env) as run:
        rc, out = run.finish()
    assert rc == 3
    stubborn = {f"hotspare-local: host x1921c7s1b0n0 rank {r} died from signal 9 during teardown" for r in ranks_of(1)}
    assert stubborn <= set(hotspare_lines(out))
    assert classify(scan(out.encode()), rc=3, allocation=[Host(h) for h in HOSTS]).blamed_hosts == ()


def _state(pid: int) -> str:
    """The kernel's one-letter process state ('T' when stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


def test_sigterm_ends_every_rank_even_a_frozen_host(tmp_path: Path) -> None:
    """A frozen host's ranks are stopped; SIGTERM to the launcher ends every rank (stopped ones too), exit 143."""
    with launched(tmp_path, BOUND_S, faults={"frozen": ["x1921c7s2b0n0"]}) as run:
        pgids = run.pgids()
        deadline = time.monotonic() + BOUND_S
        while _state(pgids["x1921c7s2b0n0"]) != "T":
            assert time.monotonic() < deadline, "frozen host's rank never stopped"
            time.sleep(0.02)
        run.proc.send_signal(signal.SIGTERM)
        rc, _ = run.finish()
        for pgid in pgids.values():
            with pytest.raises(ProcessLookupError):
                os.killpg(pgid, 0)
    assert rc == 143


DEATHS = [
    (-9, False, "hotspare-local: host n1 rank 3 died from signal 9"),
    (-9, True, "hotspare-local: host n1 rank 3 died from signal 9 during teardown"),
    (-15, True, "hotspare-local: host n1 rank 3 died from signal 15"),
    (1, False, "hotspare-local: host n1 rank 3 exited with code 1"),
    (0, False, None),
]


@pytest.mark.parametrize(("rc", "ours", "want"), DEATHS)
def test_death_line_formats(rc: int, ours: bool, want: str | None) -> None:
    """Each way a rank ends has one report line (none for a clean exit), printing the raw host."""
    assert death_line(Host("n1"), 3, rc, killed_by_us=ours) == want


def test_exit_status_and_rank_env() -> None:
    """Signals map to 128+n; RANK is host index * ppn + local rank; the faults file is not passed on."""
    assert [exit_status(rc) for rc in (-9, -15, 0, 3)] == [137, 143, 0, 3]
    env = rank_env({"PATH": "/bin", "HOTSPARE_LOCAL_FAULTS": "f"}, Host("N2.example"), 2, 1, ppn=4, world=12)
    assert env["HOTSPARE_HOST"] == "N2.example" and env["RANK"] == "9" and env["LOCAL_RANK"] == "1"
    assert env["WORLD_SIZE"] == "12" and env["PATH"] == "/bin" and "HOTSPARE_LOCAL_FAULTS" not in env


def test_parse_faults_refuses_hostile_and_malformed() -> None:
    """Faults name valid hosts in two lists; anything else is refused."""
    assert parse_faults('{"down": ["n1"], "frozen": []}').down == frozenset({Host("n1")})
    for bad in ('["n1"]', '{"down": "n1"}', '{"gone": ["n1"]}', '{"down": ["n1; reboot"]}'):
        with pytest.raises(ValueError):
            parse_faults(bad)
