"""The ``local`` launcher: a multi-node launcher simulated on one machine.

``python -m hotspare.sim.local_launcher --hostfile F --ppn N [--pids FILE] -- CMD...``
starts, for each host of F in order, ``ppn`` ranks of CMD in ONE new process
group per host (killing the group is that host crashing), with the rank's
identity in its environment (:func:`rank_env`). ``--pids`` gets ``{host: pgid}``.

This module is the one exception to "only runner.py starts processes": it IS
a launcher, run by the runner as a child like mpiexec or srun. Argv lists
only, never a shell. Like mpiexec and srun, it forwards each rank's stdout
and stderr to its own a whole line at a time, so lines of ranks that print at
once never mix mid-line (two tracebacks written together would otherwise
read ``IndexErrorIndexError: : list index...``). Lines it prints (one per rank that ends badly, in the
order seen, then the teardown of every other rank)::

    hotspare-local: host <raw> rank <r> died from signal <n>
    hotspare-local: host <raw> rank <r> died from signal 9 during teardown
    hotspare-local: host <raw> rank <r> exited with code <c>
    hotspare-local: cannot reach host <raw>

The second is a rank that ignored SIGTERM and was SIGKILLed by this launcher:
it must never read as that host crashing. Exit status: the first failure's
(128 + signal), 255 for an unreachable host, 143/130 on SIGTERM/SIGINT, 0 when
all ranks exit 0, 2 for bad arguments, 127 if CMD cannot be started.

``$HOTSPARE_LOCAL_FAULTS`` may name a JSON file ``{"down": [...], "frozen": [...]}``:
a down host's ranks are never started; a frozen host's are SIGSTOPped at once
(a hung node: no output, no exit).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from hotspare.errors import HotspareError
from hotspare.hosts import Host, read_hostfile
from hotspare.record.files import write_atomic

PREFIX = "hotspare-local:"
FAULTS_ENV = "HOTSPARE_LOCAL_FAULTS"
#: How often ranks are polled.
POLL_S = 0.05
#: Ranks of one host die together; wait this long after the first death so its
#: host-mates are reported before the teardown lines, as the victims they are.
SETTLE_S = 0.2
#: SIGTERM to SIGKILL during teardown.
GRACE_S = 2.0
#: How long to wait for SIGKILLed ranks to be reaped before giving up on them.
REAP_S = 5.0
#: A line held back for want of its newline is written after this much quiet
#: (a progress bar, a prompt), so output is never withheld for long.
PARTIAL_LINE_S = 0.5
#: How long, at most, a rank's report waits for its last output to be forwarded
#: (a child of the rank may hold its stream open long after it ended).
FORWARD_WAIT_S = 0.5
#: One read from a rank; also the longest write: a pipe takes one of at most
#: PIPE_BUF bytes whole, so lines are batched up to that.
READ_BYTES = 65536
EXIT_UNREACHABLE = 255
EXIT_USAGE = 2
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class Faults:
    """Hosts to simulate as unreachable (``down``) or hung (``frozen``)."""

    down: frozenset[Host] = frozenset()
    frozen: frozenset[Host] = frozenset()


def parse_faults(text: str) -> Faults:
    """Faults from the JSON text ``{"down": [...], "frozen": [...]}``; ValueError if malformed."""
    data = json.loads(text)
    if not isinstance(data, dict) or set(data) - {"down", "frozen"}:
        raise ValueError('faults must be a JSON object with only "down" and "frozen" lists of hosts')
    lists = {key: data.get(key, []) for key in ("down", "frozen")}
    if not all(isinstance(v, list) and all(isinstance(h, str) for h in v) for v in lists.values()):
        raise ValueError('"down" and "frozen" must be lists of host names')
    return Faults(frozenset(map(Host, lists["down"])), frozenset(map(Host, lists["frozen"])))


def rank_env(
    base: Mapping[str, str], host: Host, index: int, local_rank: int, *, ppn: int, world: int
) -> dict[str, str]:
    """The environment of one rank: ``base`` plus the rank's identity (torchrun and PMI names)."""
    rank = index * ppn + local_rank
    env = {k: v for k, v in base.items() if k != FAULTS_ENV}
    env.update({
        "HOTSPARE_HOST": host.raw, "HOTSPARE_HOST_INDEX": str(index), "HOTSPARE_LOCAL_RANK": str(local_rank),
        "RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(ppn),
        "PMI_RANK": str(rank), "PMI_SIZE": str(world), "PMI_LOCAL_RANK": str(local_rank), "PMI_LOCAL_SIZE": str(ppn),
    })
    return env


def death_line(host: Host, rank: int, rc: int, *, killed_by_us: bool = False) -> str | None:
    """The report for a rank that ended with Popen return code ``rc``; None for a clean exit."""
    if rc == 0:
        return None
    if rc > 0:
        return f"{PREFIX} host {host.raw} rank {rank} exited with code {rc}"
    why = " during teardown" if killed_by_us and -rc == signal.SIGKILL else ""
    return f"{PREFIX} host {host.raw} rank {rank} died from signal {-rc}{why}"


def exit_status(rc: int) -> int:
    """The shell-style exit status for a Popen return code (128 + signal for a signal)."""
    return 128 - rc if rc < 0 else rc


def whole_lines(data: bytes, limit: int = select.PIPE_BUF) -> tuple[list[bytes], bytes]:
    """``data`` cut into writes of whole lines (ended by ``\\n`` or ``\\r``) of at most ``limit`` bytes
    each, a longer line alone; and the unfinished last line, held back."""
    lines = data.splitlines(keepends=True)  # bytes split at \\n, \\r and \\r\\n only
    held = lines.pop() if lines and not lines[-1].endswith((b"\n", b"\r")) else b""
    writes: list[bytes] = []
    batch = b""
    for line in lines:
        if batch and len(batch) + len(line) > limit:
            writes.append(batch)
            batch = b""
        batch += line
    if batch:
        writes.append(batch)
    return writes, held


class Forwarder:
    """Copies one rank's stream (a pipe it writes) to one of the launcher's own, whole lines at a time."""

    def __init__(self, source: int, target: int) -> None:
        self.source, self.target = source, target
        self.thread = threading.Thread(target=self._run, name=f"forward-{source}", daemon=True)
        self._broken = False
        self._mid_line = False

    def _write(self, data: bytes) -> None:
        # A reader that went away (the runner ended) must not stop the draining:
        # a rank blocked on a full pipe would never end.
        self._mid_line = not data.endswith((b"\n", b"\r"))
        if not self._broken:
            try:
                os.write(self.target, data)
            except OSError:
                self._broken = True

    def _run(self) -> None:
        held = b""
        try:
            while True:
                ready, _, _ = select.select([self.source], [], [], PARTIAL_LINE_S if held else None)
                if not ready:
                    self._write(held)
                    held = b""
                    continue
                chunk = os.read(self.source, READ_BYTES)
                if not chunk:
                    break
                writes, held = whole_lines(held + chunk)
                if len(held) >= READ_BYTES:  # a line with no end in sight goes as it is
                    writes, held = [*writes, held], b""
                for data in writes:
                    self._write(data)
        finally:
            # The rank's last words, unended (held, or written after a quiet spell):
            # end them, or the next line would join them.
            if held or self._mid_line:
                self._write(held + b"\n")
            os.close(self.source)


@dataclass(slots=True)
class HostGroup:
    """The ranks of one host (rank number to process): one process group, led by its first rank."""

    host: Host
    pgid: int
    ranks: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: Each rank's stdout and stderr forwarders, started once every host is.
    forwarders: dict[int, tuple[Forwarder, Forwarder]] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)
    #: Whether this launcher SIGKILLed the group (teardown), so its signal-9 deaths are ours.
    killed: bool = False

    @property
    def alive(self) -> bool:
        """Whether any rank is unreaped: only then does ``pgid`` still name our group.

        An unreaped rank (even a zombie) pins the group id, so it cannot have
        been reused by an unrelated group we would then signal.
        """
        return len(self.done) < len(self.ranks)

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the whole group, if it is still ours."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, sig)


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook so ranks are SIGKILLed if the launcher itself is SIGKILLed (Linux only).

    The runner SIGKILLs the launcher's own group after its grace period; ranks
    live in other groups, and without this they would be orphaned.
    """
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before the hook ran
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def start_host(host: Host, index: int, ppn: int, command: Sequence[str], world: int) -> HostGroup:
    """Start ``ppn`` ranks of ``command`` for ``host`` in one new process group."""
    hook = _die_with_parent()
    group: HostGroup | None = None
    try:
        for local in range(ppn):
            env = rank_env(os.environ, host, index, local, ppn=ppn, world=world)
            proc = subprocess.Popen(
                list(command), env=env, stdin=subprocess.DEVNULL, process_group=group.pgid if group else 0,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                preexec_fn=hook,  # noqa: PLW1509 - no thread runs until every rank is started
            )
            group = group or HostGroup(host, proc.pid)
            rank = index * ppn + local
            group.ranks[rank] = proc
            assert proc.stdout is not None and proc.stderr is not None
            group.forwarders[rank] = (Forwarder(os.dup(proc.stdout.fileno()), sys.stdout.fileno()),
                                      Forwarder(os.dup(proc.stderr.fileno()), sys.stderr.fileno()))
            proc.stdout.close()
            proc.stderr.close()
    except BaseException:
        if group is not None:  # never leave a half-started host behind
            group.signal(signal.SIGKILL)
        raise
    assert group is not None
    return group


class Launcher:
    """Starts the host groups, watches them, and tears them all down on the first failure."""

    def __init__(
        self, hosts: Sequence[Host], ppn: int, command: Sequence[str], faults: Faults, *,
        pids_path: Path | None = None, sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hosts, self.ppn, self.command, self.faults = tuple(hosts), ppn, tuple(command), faults
        self.pids_path, self.sleep, self.clock = pids_path, sleep, clock
        self.groups: list[HostGroup] = []
        self.stop_signal: int | None = None

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM/SIGINT handler: only records it; the poll loop acts within POLL_S."""
        self.stop_signal = self.stop_signal or signum

    def run(self) -> int:
        """Launch and supervise; the exit status (see the module docstring)."""
        world = len(self.hosts) * self.ppn
        for index, host in enumerate(self.hosts):
            if host not in self.faults.down and self.stop_signal is None:
                self.groups.append(start_host(host, index, self.ppn, self.command, world))
                if host in self.faults.frozen:
                    self.groups[-1].signal(signal.SIGSTOP)
        for group in self.groups:  # only now: forking while threads run is unsafe
            for pair in group.forwarders.values():
                for forwarder in pair:
                    forwarder.thread.start()
        if self.pids_path is not None:
            write_atomic(self.pids_path, json.dumps({g.host.raw: g.pgid for g in self.groups}))
        down = [h for h in self.hosts if h in self.faults.down]
        for host in down:
            _say(f"{PREFIX} cannot reach host {host.raw}")
        if not down:
            return self.supervise()
        self.teardown()
        return EXIT_UNREACHABLE

    def supervise(self) -> int:
        """Poll until a rank fails, all exit 0, or a signal asks us to stop.

        Unbounded only as the job itself is: every pass is one poll and a POLL_S sleep.
        """
        while True:
            if self.stop_signal is not None:
                self.teardown()
                return 128 + self.stop_signal
            first = self.report()
            if first is not None:
                self.sleep(SETTLE_S)
                self.report()
                self.teardown()
                return exit_status(first)
            if not any(g.alive for g in self.groups):
                return 0
            self.sleep(POLL_S)

    def report(self) -> int | None:
        """Reap ranks that ended, print one line per bad end; the first bad return code, if any."""
        first: int | None = None
        deadline = self.clock() + FORWARD_WAIT_S
        for group in self.groups:
            for rank, proc in group.ranks.items():
                rc = None if rank in group.done else proc.poll()
                if rc is None:
                    continue
                group.done.add(rank)
                line = death_line(group.host, rank, rc, killed_by_us=group.killed)
                if line is not None:
                    # What the rank said before it ended comes before the word of its end.
                    for forwarder in group.forwarders.get(rank, ()):
                        if forwarder.thread.is_alive():
                            forwarder.thread.join(max(0.0, deadline - self.clock()))
                    _say(line)
                    first = rc if first is None else first
        return first

    def teardown(self) -> None:
        """SIGTERM every group (SIGCONT wakes frozen ones), SIGKILL after GRACE_S; report as ranks end."""
        # TERM before CONT: a stopped rank handles the TERM the moment it
        # resumes, before it can print anything.
        self.signal_all(signal.SIGTERM)
        self.signal_all(signal.SIGCONT)
        if not self._wait(GRACE_S):
            for group in self.groups:
                group.killed = group.killed or group.alive
            self.signal_all(signal.SIGKILL)
            self._wait(REAP_S)

    def signal_all(self, sig: int) -> None:
        """Send ``sig`` to every host group still ours."""
        for group in self.groups:
            group.signal(sig)

    def _wait(self, limit_s: float) -> bool:
        """Report ranks as they end, for at most ``limit_s``; True once none is left."""
        deadline = self.clock() + limit_s
        while True:
            self.report()
            if not any(g.alive for g in self.groups):
                return True
            if self.clock() >= deadline:
                return False
            self.sleep(POLL_S)


def _say(line: str) -> None:
    # One write call: ranks share this stdout, and print() writes the text and
    # the newline separately, so a rank's output could land between them.
    os.write(sys.stdout.fileno(), f"{line}\n".encode())


def _parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Options before ``--``, the command after it (exits 2 with usage if wrong)."""
    parser = argparse.ArgumentParser(prog="python -m hotspare.sim.local_launcher")
    parser.add_argument("--hostfile", type=Path, required=True, help="one host a line (extra columns ignored)")
    parser.add_argument("--ppn", type=int, required=True, help="ranks per host (1 or more)")
    parser.add_argument("--pids", type=Path, help="write {host: process group id} JSON here")
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    if cut >= len(argv) - 1 or args.ppn < 1:
        parser.error("needs --ppn 1 or more and a command after '--' (... -- python train.py)")
    return args, argv[cut + 1 :]


def _read_faults(environ: Mapping[str, str]) -> Faults:
    path = environ.get(FAULTS_ENV)
    return parse_faults(Path(path).read_text(encoding="utf-8")) if path else Faults()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args, command = _parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        hosts = read_hostfile(args.hostfile)
        faults = _read_faults(os.environ)
    except (HotspareError, ValueError, OSError) as exc:
        print(f"{PREFIX} error: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    launcher = Launcher(hosts, args.ppn, command, faults, pids_path=args.pids)
    signal.signal(signal.SIGTERM, launcher.on_signal)
    signal.signal(signal.SIGINT, launcher.on_signal)
    try:
        return launcher.run()
    except OSError as exc:  # CMD missing or not executable: like a shell, 127
        print(f"{PREFIX} error: cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        launcher.teardown()
        return 127
    finally:
        launcher.signal_all(signal.SIGKILL)  # whatever way out, no rank outlives the launcher


if __name__ == "__main__":
    sys.exit(main())
