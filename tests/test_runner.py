"""The process gateway's short commands (probes, scheduler queries) keep their deadline whatever the other end does."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from hotspare.act.runner import capture, descendants

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


def test_descendants_reads_the_process_tree(tmp_path: Path) -> None:
    """A fake /proc: children and grandchildren are found, other processes and unreadable entries are not."""
    for pid, ppid in ((10, 1), (11, 10), (12, 11), (13, 1), (14, 10)):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (odd) name) S {ppid} {pid} {pid} 0\n")
    (tmp_path / "15").mkdir()  # gone meanwhile: no stat
    (tmp_path / "self").mkdir()
    assert sorted(descendants(10, tmp_path)) == [11, 12, 14]
    assert descendants(13, tmp_path) == []

