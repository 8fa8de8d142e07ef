"""The one module that starts processes.

Every process hotspare starts goes through here: argv lists only (never a
shell), a new session (so the whole launcher tree can be signalled as one
process group), output teed to a file, and a result record. Everything else
receives a runner and never imports subprocess.
"""

from __future__ import annotations

import contextlib
import enum
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

#: Bytes read from a child's output at a time.
READ_BYTES = 64 << 10
#: After the launcher exits, how long its output pipe may stay open (a rank or relay still writing) before the
#: attempt is judged on what came: EOF normally comes at once.
EXIT_DRAIN_S = 1.0
#: Bytes of the end of the output kept in a result.
TAIL_BYTES = 4096
#: How long a timed-out short command's output is still read after its group got SIGKILL (seconds).
AFTER_KILL_S = 0.5


@dataclass(frozen=True, slots=True)
class Completed:
    """A finished short command (probe, scheduler query)."""

    argv: tuple[str, ...]
    rc: int | None
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


def capture(argv: Sequence[str], *, timeout_s: float, env: Mapping[str, str] | None = None) -> Completed:
    """Run a short command and collect its output; killed (whole group) at ``timeout_s``.

    A missing program is reported as rc 127, like a shell would, not raised.
    """
    try:
        proc = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None, start_new_session=True, text=True, errors="replace",
        )
    except FileNotFoundError as exc:
        return Completed(tuple(argv), 127, "", str(exc), False)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        return Completed(tuple(argv), proc.returncode, out, err, False)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=AFTER_KILL_S)
        except subprocess.TimeoutExpired:
            # Something outside the group still holds the pipes (an srun's step on a frozen node): the answer
            # is "no answer" now, whatever that process does; it is reaped in the background.
            threading.Thread(target=_reap, args=(proc,), name="hotspare-reap", daemon=True).start()
            return Completed(tuple(argv), None, "", "", True)
        return Completed(tuple(argv), proc.returncode, out, err, True)


def _reap(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(OSError, ValueError):
        proc.communicate()


#: How often a running launcher's process tree is read (its helpers are remembered, to be ended with it).
FAMILY_LOOK_S = 1.0


def _table(proc_dir: Path) -> dict[int, tuple[int, int]]:
    """Every process now: PID -> (parent PID, start time in clock ticks), from Linux ``/proc``."""
    table: dict[int, tuple[int, int]] = {}
    for entry in proc_dir.iterdir() if proc_dir.is_dir() else ():
        if entry.name.isdigit():
            fields = _stat(entry)
            if fields is not None:
                table[int(entry.name)] = fields
    return table


def _stat(entry: Path) -> tuple[int, int] | None:
    """(parent PID, start time) of the process at ``entry`` (``/proc/PID``), None if it is gone or unreadable."""
    try:
        stat = entry.joinpath("stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after the command name, which may hold spaces and parens
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def descendants(pid: int, proc_dir: Path = Path("/proc")) -> dict[int, int]:
    """The processes below ``pid`` in the process tree now, PID -> start time (empty where ``/proc`` cannot be
    read). The start time tells a process from a later one that reuses its PID.

    A launcher's helpers may leave its process group: Hydra starts each ``srun`` of its proxies in a session
    of its own. Ending the launcher's group then orphans them, and an orphaned ``srun`` keeps asking the
    controller for its step (on the bed: steps queued for minutes after the probe that started them was gone).
    """
    children: dict[int, list[int]] = {}
    table = _table(proc_dir)
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found: dict[int, int] = {}
    todo = [pid]
    for _ in range(len(table) + 1):  # bounded: each process is visited once
        if not todo:
            break
        for child in children.get(todo.pop(), []):
            if child not in found:
                found[child] = table[child][1]
                todo.append(child)
    return found


def signal_known(procs: Mapping[int, int], sig: int, proc_dir: Path = Path("/proc")) -> None:
    """Signal each process of ``procs`` (PID -> start time) that is still the same process, by its PID."""
    for pid, start in procs.items():
        now = _stat(proc_dir / str(pid))
        if now is not None and now[1] == start:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def kill_tree(pid: int, sig: int) -> None:
    """Signal the process group led by ``pid`` (one we started, not yet reaped) and every process below it
    that left the group (see :func:`descendants`)."""
    below = descendants(pid)
    kill_group(pid, sig)
    signal_known(below, sig)


def kill_group(pid: int, sig: int) -> bool:
    """Signal the process group led by ``pid`` (one we started); False if it is gone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class StopCause(enum.StrEnum):
    """Why the supervisor, not the job, ended an attempt (stored in the ledger as the value)."""

    #: The supervisor was asked to stop (SIGTERM/SIGINT, :meth:`Supervisor.request_stop`).
    INTERRUPTED = "interrupted"
    #: No output for ``idle_timeout_s``: the job is taken to be hung.
    IDLE = "idle"
    #: Output stalled and a node gave two independent signals of death (two failed probes, or a failed probe and
    #: the scheduler's report).
    SCHEDULER = "scheduler"
    #: The supervisor itself was killed during the attempt; a resumed one ended it.
    SUPERVISOR_LOST = "supervisor lost"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a launched attempt ended."""

    rc: int
    duration_s: float
    tail: bytes
    #: Why the supervisor ended it, or None (the launcher exited by itself).
    stopped_by: StopCause | None

    @property
    def signal(self) -> int | None:
        return -self.rc if self.rc < 0 else None


class Launch:
    """A running launcher: its output streams to ``log_path`` and ``on_output``.

    ``poll(timeout_s)`` reads what arrived and returns the rc once it exits;
    ``stop(why, grace_s)`` sends SIGTERM to the group, SIGKILL after the grace.
    """

    def __init__(
        self,
        argv: Sequence[str],
        log_path: Path,
        on_output: Callable[[bytes], None],
        *,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.argv = tuple(argv)
        self.log_path = log_path
        self.on_output = on_output
        self.env = dict(env) if env is not None else None
        self.clock = clock
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: BinaryIO | None = None
        self._eof = False
        self._exited_s: float | None = None
        self._tail = b""
        self._started = 0.0
        self.stopped_by: StopCause | None = None
        #: The launcher's helpers seen so far (PID -> start time), ended with it even when they left its group.
        self._family: dict[int, int] = {}
        self._family_seen_s = float("-inf")

    def start(self) -> None:
        """Start the launcher in its own session; its log is opened for append, never truncated."""
        self._log = self.log_path.open("ab")
        self._started = self.clock()
        self._proc = subprocess.Popen(
            list(self.argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=self.env, start_new_session=True,
        )
        assert self._proc.stdout is not None
        os.set_blocking(self._proc.stdout.fileno(), False)

    @property
    def pid(self) -> int:
        assert self._proc is not None, "start() first"
        return self._proc.pid

    def poll(self, timeout_s: float) -> int | None:
        """Read output for up to ``timeout_s``; the rc once the launcher has exited and its output is drained."""
        assert self._proc is not None and self._proc.stdout is not None, "start() first"
        deadline = self.clock() + timeout_s
        self._look_at_family()
        while True:
            chunk = b"" if self._eof else self._read()
            if chunk:
                continue
            rc = self._proc.poll()
            if rc is not None:
                if self._exited_s is None:
                    self._exited_s = self.clock()
                # The launcher is gone, but a rank or a relay of its may still be writing its last lines (under
                # load, a traceback came after the launcher's exit and the attempt was judged without it): wait
                # for EOF, up to EXIT_DRAIN_S, unless something still holds the pipe open past that.
                if self._eof or (not self._drain() and self.clock() - self._exited_s >= EXIT_DRAIN_S):
                    return rc
            if self.clock() >= deadline:
                return None
            self._wait_readable(min(0.05, max(0.0, deadline - self.clock())))

    def _look_at_family(self) -> None:
        """Remember the launcher's helpers (at most every :data:`FAMILY_LOOK_S`, while it runs unreaped)."""
        assert self._proc is not None
        now = self.clock()
        if now - self._family_seen_s >= FAMILY_LOOK_S and self._proc.returncode is None:
            self._family_seen_s = now
            self._family.update(descendants(self._proc.pid))

    def _end_family(self) -> None:
        """SIGKILL the helpers the launcher left behind (each checked to be the same process first)."""
        signal_known(self._family, signal.SIGKILL)

    def _wait_readable(self, timeout_s: float) -> None:
        """Sleep until output (or EOF) arrives, at most ``timeout_s``: a launcher's exit is seen at once."""
        assert self._proc is not None and self._proc.stdout is not None
        if self._eof:  # every writer is gone: the launcher is exiting, its status is moments away
            time.sleep(min(timeout_s, 0.002))
        else:
            select.select([self._proc.stdout.fileno()], [], [], timeout_s)

    def _read(self) -> bytes:
        """What is available now (b"" if nothing); sets EOF once every writer has gone."""
        assert self._proc is not None and self._proc.stdout is not None and self._log is not None
        try:
            chunk = os.read(self._proc.stdout.fileno(), READ_BYTES)
        except BlockingIOError:
            return b""
        if not chunk:
            self._eof = True
            return b""
        self._log.write(chunk)
        self._log.flush()
        self._tail = (self._tail + chunk)[-TAIL_BYTES:]
        self.on_output(chunk)
        return chunk

    def _drain(self) -> bool:
        """After the launcher exited, read what is left in the pipe; True if there was any."""
        return bool(self._read())

    def stop(self, why: StopCause, grace_s: float) -> None:
        """End the attempt: SIGTERM to the launcher's group, SIGKILL after ``grace_s``."""
        assert self._proc is not None, "start() first"
        self.stopped_by = self.stopped_by or why
        kill_group(self._proc.pid, signal.SIGTERM)
        deadline = self.clock() + grace_s
        while self._proc.poll() is None and self.clock() < deadline:
            self.poll(0.05)
        # What the launcher did not end in the grace dies now, with the helpers that left its group.
        if self._proc.poll() is None:
            self._family.update(descendants(self._proc.pid))
        kill_group(self._proc.pid, signal.SIGKILL)
        self._end_family()

    def finish(self) -> Outcome:
        """Wait for the end (output drained), close the log, and report."""
        assert self._proc is not None, "start() first"
        rc = self.poll(0.0)
        while rc is None:
            rc = self.poll(1.0)
        # Children the launcher left behind die with it: those in its group, and the helpers seen outside it.
        kill_group(self._proc.pid, signal.SIGKILL)
        self._end_family()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        if self._log is not None:
            self._log.close()
        return Outcome(rc, self.clock() - self._started, self._tail, self.stopped_by)
