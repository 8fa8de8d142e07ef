"""The process gateway's short commands (probes, scheduler queries) keep their deadline whatever the other end does."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from hotspare.act.runner import Launch, capture, descendants, signal_known

#: Starts, through a parent that exits at once, a process in its own session that inherits stdout and stderr and
#: holds them open: out of reach of a group kill and of the process tree (reparented), like a step nobody can end
#: in time. Writes its pid, then sleeps.
ESCAPER = """
import os, subprocess, sys, time
middle = ("import subprocess, sys; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(20)'], "
          "start_new_session=True); open(sys.argv[1], 'w').write(str(c.pid))")
subprocess.run([sys.executable, "-c", middle, sys.argv[1]], check=True)
time.sleep(60)
"""


def test_a_timed_out_probe_does_not_wait_for_whoever_still_holds_its_pipes(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    done = capture([sys.executable, "-c", ESCAPER, str(pid_file)], timeout_s=1.0)
    grandchild = int(pid_file.read_text())
    try:
        assert done.timed_out and not done.ok
        # The answer came back while the process holding the pipes was still running: capture did not wait for it.
        assert _state(grandchild) not in ("Z", "X", None)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)
        for _ in range(50):  # bounded: reaped by the background thread once its pipes close
            with contextlib.suppress(ChildProcessError):
                os.waitpid(grandchild, os.WNOHANG)
            if _state(grandchild) in ("Z", "X", None):
                break
            time.sleep(0.05)


def _state(pid: int) -> str | None:
    """The process's state letter (R, S, Z...), or None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def test_a_command_that_answers_in_time_is_read_whole() -> None:
    done = capture([sys.executable, "-c", "print('pong')"], timeout_s=30)
    assert done.ok and done.stdout == "pong\n" and not done.timed_out


def test_a_timed_out_command_takes_the_helpers_that_left_its_group_with_it(tmp_path: Path) -> None:
    """A launcher whose helper runs in a session of its own (Hydra's srun): at the deadline the helper is ended
    too, by PID, not orphaned."""
    pidfile = tmp_path / "helper.pid"
    script = ("import subprocess, sys, time\n"
              "h = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
              f"open({str(pidfile)!r}, 'w').write(str(h.pid))\n"
              "time.sleep(60)\n")
    done = capture([sys.executable, "-c", script], timeout_s=1.5)
    assert done.timed_out
    helper = int(pidfile.read_text())
    for _ in range(100):  # bounded: 5 s for the helper to be gone (reaped by init once killed)
        if _state(helper) in ("Z", "X", None):
            break
        time.sleep(0.05)
    assert _state(helper) in ("Z", "X", None), "the helper outside the group was left running"


def _fake_stat(pid: int, ppid: int, start: int) -> str:
    """A /proc/PID/stat line: the name holds a space and a paren; parent is field 4, start time field 22."""
    rest = ["S", str(ppid)] + ["0"] * 17 + [str(start), "0"]
    return f"{pid} (odd) name) {' '.join(rest)}\n"


def test_descendants_and_signal_known_read_the_process_tree(tmp_path: Path) -> None:
    """A fake /proc: children and grandchildren are found with their start times, other processes and
    unreadable entries are not; a PID whose start time changed (reused) is not signalled. The PIDs are above
    Linux's largest pid_max (2**22), so no real process could ever be signalled here."""
    base = 2**22 + 10
    for pid, ppid in ((base, 1), (base + 1, base), (base + 2, base + 1), (base + 3, 1), (base + 4, base)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(_fake_stat(pid, ppid, pid - base + 10))
    (tmp_path / str(base + 5)).mkdir()  # gone meanwhile: no stat
    (tmp_path / "self").mkdir()
    assert descendants(base, tmp_path) == {base + 1: 11, base + 2: 12, base + 4: 14}
    assert descendants(base + 3, tmp_path) == {}
    seen: list[int] = []
    (tmp_path / str(base + 2) / "stat").write_text(_fake_stat(base + 2, base + 1, 5000))  # the PID was reused
    original = os.kill
    os.kill = lambda pid, sig: seen.append(pid)  # type: ignore[assignment]
    try:
        signal_known({base + 1: 11, base + 2: 12, base + 9: 1}, signal.SIGKILL, tmp_path)
    finally:
        os.kill = original
    assert seen == [base + 1]  # the same process; not the reused PID, not the one that is gone


def test_a_launcher_that_exits_by_itself_takes_its_helpers_with_it(tmp_path: Path) -> None:
    """A launcher that starts a helper in a session of its own and then exits (Hydra after a node died, its
    proxies' srun left behind): once the attempt is finished, the helper is gone."""
    pidfile = tmp_path / "helper.pid"
    script = ("import subprocess, sys, time\n"
              "h = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
              f"open({str(pidfile)!r}, 'w').write(str(h.pid))\n"
              "time.sleep(2.5)\n")
    launch = Launch([sys.executable, "-c", script], tmp_path / "log", lambda chunk: None)
    launch.start()
    outcome = launch.finish()
    assert outcome.rc == 0
    helper = int(pidfile.read_text())
    for _ in range(100):  # bounded: 5 s for the helper to be gone
        if _state(helper) in ("Z", "X", None):
            break
        time.sleep(0.05)
    assert _state(helper) in ("Z", "X", None), "the helper the launcher left was not ended"


def test_lines_a_rank_writes_just_after_the_launcher_exits_are_read(tmp_path: Path) -> None:
    """A launcher that exits while a rank of its still writes its last line (under load, a traceback relayed after
    the launcher's exit status): the attempt is judged with that line, read before the pipe's EOF (bounded by
    EXIT_DRAIN_S), not cut at the launcher's exit."""
    seen: list[bytes] = []
    script = "(sleep 0.3; echo 'IndexError: list index out of range') & exit 1"
    launch = Launch(["bash", "-c", script], tmp_path / "log", seen.append)
    launch.start()
    outcome = launch.finish()
    assert outcome.rc == 1
    assert b"IndexError: list index out of range" in b"".join(seen)
    assert b"IndexError" in (tmp_path / "log").read_bytes()
