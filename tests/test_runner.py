"""The process gateway's short commands (probes, scheduler queries) keep their deadline whatever the other end does."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from hotspare.act.runner import capture

#: Starts a grandchild in its own session (out of reach of a process-group kill) that inherits stdout and
#: stderr and holds them open, like an srun step waiting on a frozen node; writes its pid, then sleeps.
ESCAPER = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"], start_new_session=True)
open(sys.argv[1], "w").write(str(child.pid))
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
