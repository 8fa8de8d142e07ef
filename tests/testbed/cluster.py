"""Bring a real SLURM cluster up on one machine, break its nodes, tear it down.

One private ``munged`` (own key and socket), one ``slurmctld`` on 127.0.0.1,
and N ``slurmd`` (Debian builds slurmd with MULTIPLE_SLURMD, so each gets
``-N nX`` and its own port), each inside its own UTS+PID+mount namespace with
``node_init.py`` as PID 1: ``hostname`` in a job prints the node's name, and
killing that init kills slurmd, slurmstepd and the tasks at once (a crash).
No cgroups, no accounting database; ``jobcomp/filetxt`` logs job ends.

Only processes this module started are ever signalled, by the PIDs it
recorded. Needs root and the Debian packages slurmctld, slurmd,
slurm-client and munge.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

NODE_INIT = Path(__file__).with_name("node_init.py")
#: Bound on waiting for nodes to come up or change state.
UP_TIMEOUT_S = 60.0
#: How many times :meth:`Bed.freeze` looks for processes of the node it has not stopped yet.
FREEZE_LOOKS = 10
REQUIRED = ("slurmctld", "slurmd", "sinfo", "srun", "munged", "mungekey", "unshare", "nsenter", "mount")


class BedError(RuntimeError):
    """The test bed could not be brought up or driven."""


# Timing, measured on the bed (2 cores): slurmctld pings a node it has not heard from for SlurmdTimeout/3 s, every
# SlurmdTimeout/3 s, and a ping to a dead slurmd (connection refused) fails only after about MessageTimeout + 1 s;
# the node is then NOT_RESPONDING ("*"), and DOWN (its jobs NODE_FAIL) once silent for SlurmdTimeout. A crash was
# "*" after 11 s and DOWN after 19 s with SlurmdTimeout=10 and MessageTimeout=5; 8 s and 14 s with 6 and 3.
# batch_sched_delay=0: a batch job is scheduled at once (the default 3 s held each sbatch about 2 s).
def _conf(root: Path, nodes: int, ctld_port: int, node_port: int, slurmd_timeout_s: int) -> str:
    last = node_port + nodes
    return f"""# written by tests/testbed/cluster.py
ClusterName=hotspare
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/run/munge.sock
MailProg=/bin/true
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=sched_interval=5,batch_sched_delay=0
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.log
SlurmdParameters=config_overrides
SlurmdTimeout={slurmd_timeout_s}
SlurmctldTimeout=10
MessageTimeout=3
InactiveLimit=0
KillWait=2
MinJobAge=600
NodeName=n[1-{nodes}] NodeAddr=127.0.0.1 Port=[{node_port + 1}-{last}] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class Bed:
    """A running cluster and the PIDs it owns."""

    root: Path
    nodes: tuple[str, ...]
    pids: dict[str, int] = field(default_factory=dict)
    #: A node was crashed, frozen or drained: :meth:`settled` is False until the bed is rebuilt.
    disturbed: bool = False
    _children: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)

    @property
    def env(self) -> dict[str, str]:
        """The environment SLURM commands need to talk to this cluster."""
        return dict(os.environ, SLURM_CONF=str(self.root / "etc" / "slurm.conf"))

    # -- bring-up and teardown ---------------------------------------------------
    @classmethod
    def up(cls, root: Path, *, nodes: int = 4, ctld_port: int = 6817, node_port: int = 17000,
           slurmd_timeout_s: int = 6) -> Bed:
        """A fresh cluster in ``root`` (wiped first) with ``nodes`` idle nodes, or BedError."""
        missing = [tool for tool in REQUIRED if shutil.which(tool) is None]
        if missing:
            raise BedError(f"missing {', '.join(missing)}: apt-get install slurmctld slurmd slurm-client munge")
        if os.geteuid() != 0:
            raise BedError("the SLURM test bed needs root (slurmd, munged and namespaces)")
        shutil.rmtree(root, ignore_errors=True)
        for sub in ("etc", "log", "state", "spool", "munge", "run", "local", "nodelocal"):
            (root / sub).mkdir(parents=True)
        (root / "munge").chmod(0o700)
        root.chmod(0o755)
        (root / "run").chmod(0o755)  # munged refuses a socket dir others cannot traverse
        bed = cls(root, tuple(f"n{i}" for i in range(1, nodes + 1)))
        try:
            bed._start(ctld_port, node_port, slurmd_timeout_s)
        except BaseException:
            bed.down()
            raise
        return bed

    def _start(self, ctld_port: int, node_port: int, slurmd_timeout_s: int) -> None:
        r = self.root
        (r / "etc" / "slurm.conf").write_text(_conf(r, len(self.nodes), ctld_port, node_port, slurmd_timeout_s))
        (r / "etc" / "cgroup.conf").write_text("")
        _run(["mungekey", "-c", "-k", str(r / "munge" / "munge.key"), "-b", "1024"])
        _run(["munged", f"--socket={r}/run/munge.sock", f"--key-file={r}/munge/munge.key",
              f"--pid-file={r}/run/munged.pid", f"--log-file={r}/log/munged.log", f"--seed-file={r}/munge/seed"])
        self.pids["munged"] = _read_pid(r / "run" / "munged.pid")
        _run(["slurmctld", "-f", str(r / "etc" / "slurm.conf"), "-i"], env=self.env)
        self.pids["slurmctld"] = _read_pid(r / "run" / "slurmctld.pid")
        # slurmctld's script helper: recorded, so that down() can SIGKILL slurmctld without orphaning it.
        self.pids["slurmscriptd"] = self.wait_for(lambda: _child_of(self.pids["slurmctld"]), "slurmscriptd", 10)
        for node in self.nodes:
            self.start(node)
        self.wait_for(lambda: self.idle_nodes() == set(self.nodes), "every node idle")

    def down(self) -> None:
        """Stop everything this bed started (by recorded PID only). slurmctld is killed, not asked to stop: its
        state is wiped by the next :meth:`up`, and its orderly shutdown waited up to 3 s on RPCs to the nodes."""
        for node in self.nodes:
            self._signal(f"node:{node}", signal.SIGKILL)
        for name in ("slurmctld", "slurmscriptd"):
            self._signal(name, signal.SIGKILL)
        for name in ("munged",):
            self._signal(name, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in self.pids.values()):
            time.sleep(0.1)
        for name in list(self.pids):
            self._signal(name, signal.SIGKILL)
        for child in self._children:  # reap our unshare processes
            child.wait(timeout=10)

    def _signal(self, name: str, sig: int) -> bool:
        pid = self.pids.get(name)
        if pid is None or not _alive(pid):
            return False
        os.kill(pid, sig)
        return True

    # -- node controls -------------------------------------------------------------
    def start(self, node: str) -> None:
        """Boot a node: its namespace init starts slurmd (ReturnToService=2 brings it back to idle)."""
        r = self.root
        console = (r / "log" / f"node-{node}.console").open("ab")
        (r / "nodelocal" / node / "tmp").mkdir(parents=True, exist_ok=True)
        spec = {"binds": [[str(r / "nodelocal" / node), str(r / "local")]],
                "steps": [{"argv": ["slurmd", "-D", "-f", str(r / "etc" / "slurm.conf"), "-N", node], "wait": False}]}
        proc = subprocess.Popen(
            ["unshare", "--uts", "--pid", "--mount", "--fork", "--mount-proc", "--kill-child=SIGKILL",
             sys.executable, str(NODE_INIT), node, json.dumps(spec)],
            stdin=subprocess.DEVNULL, stdout=console, stderr=console, env=self.env, start_new_session=True,
        )
        self.pids[f"unshare:{node}"] = proc.pid
        self._children.append(proc)
        self.pids[f"node:{node}"] = self.wait_for(lambda: _child_of(proc.pid), f"{node}'s init to start")

    def crash(self, node: str) -> None:
        """Power off: SIGKILL the node's namespace init; slurmd, stepd and tasks die with it."""
        self.disturbed = True
        if not self._signal(f"node:{node}", signal.SIGKILL):
            raise BedError(f"{node} is not running")

    def freeze(self, node: str) -> list[int]:
        """Hang the node: SIGSTOP every process in it (sockets stay open, nothing answers); the PIDs stopped.

        A process forked while the node is being stopped is found by looking again until a look finds nothing
        new; returns once every one is stopped (SIGSTOP lands asynchronously) or gone."""
        self.disturbed = True
        stopped: list[int] = []
        for _ in range(FREEZE_LOOKS):  # bounded: a stopped process forks nothing, so the looks converge
            new = [pid for pid in self.node_pids(node) if pid not in stopped]
            if not new:
                break
            for pid in new:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            stopped += new
        self.wait_for(lambda: all(_state(pid) in {"T", "Z"} for pid in stopped), f"{node} to stop", 5)
        return stopped

    def thaw(self, node: str) -> None:
        """Undo :meth:`freeze`."""
        for pid in self.node_pids(node):
            os.kill(pid, signal.SIGCONT)

    def node_pids(self, node: str) -> list[int]:
        """Host PIDs of every process in the node (its init and all descendants)."""
        init = self.pids[f"node:{node}"]
        found, todo = [], [init]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(_children(pid))
        return found

    def kill_rank(self, node: str, marker: bytes = b"hotspare.sim.trainer") -> int:
        """SIGKILL one task on ``node``: the lowest PID whose command line contains ``marker``. Returns it."""
        ranks = []
        for pid in self.node_pids(node):
            try:
                if marker in Path(f"/proc/{pid}/cmdline").read_bytes():
                    ranks.append(pid)
            except OSError:  # ended meanwhile
                continue
        if not ranks:
            raise BedError(f"no task matching {marker!r} runs on {node}")
        os.kill(min(ranks), signal.SIGKILL)
        return min(ranks)

    def read_only(self, path: Path, writable: tuple[Path, ...] = ()) -> None:
        """Make ``path`` read-only inside every node (a bind mount in each node's own mount namespace), except
        the ``writable`` directories under it: what a compute node sees of a workflow directory whose shared
        files only the workflow process may write. The host's view is unchanged; the bed is rebuilt after the
        test (the mounts die with the nodes)."""
        self.disturbed = True
        for node in self.nodes:
            enter = ["nsenter", "-t", str(self.pids[f"node:{node}"]), "-m", "--"]
            _run([*enter, "mount", "--bind", str(path), str(path)])
            _run([*enter, "mount", "-o", "remount,bind,ro", str(path)])
            for sub in writable:
                _run([*enter, "mount", "--bind", str(sub), str(sub)])
                _run([*enter, "mount", "-o", "remount,bind,rw", str(sub)])

    def drain(self, node: str) -> None:
        self.disturbed = True
        self.scontrol("update", f"nodename={node}", "state=drain", "reason=hotspare-test")

    def resume(self, node: str) -> None:
        self.scontrol("update", f"nodename={node}", "state=resume")

    # -- queries -------------------------------------------------------------------
    def settled(self, timeout_s: float = 10.0) -> bool:
        """Cancel every job, then whether the bed is as new: no node ever disturbed, no job left, all idle (waiting
        up to ``timeout_s`` for cancelled jobs to end; 0: asked once)."""
        if self.disturbed or not all(f"node:{n}" in self.pids and _alive(self.pids[f"node:{n}"]) for n in self.nodes):
            return False
        try:
            jobs = _run(["squeue", "-h", "-o", "%i"], env=self.env).stdout.split()
            if jobs:
                _run(["scancel", *jobs], env=self.env)
        except BedError:
            return False
        deadline = time.monotonic() + timeout_s
        while True:  # bounded by the deadline
            left = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=self.env,
                                  timeout=10, check=False)
            if left.returncode == 0 and not left.stdout.split() and self.idle_nodes() == set(self.nodes):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)

    def scontrol(self, *args: str) -> str:
        return _run(["scontrol", *args], env=self.env).stdout

    def idle_nodes(self) -> set[str]:
        done = subprocess.run(["sinfo", "-h", "-N", "-t", "idle", "-o", "%N"], capture_output=True, text=True,
                              env=self.env, timeout=10, check=False)
        return set(done.stdout.split()) if done.returncode == 0 else set()

    def wait_for(self, predicate, what: str, timeout_s: float = UP_TIMEOUT_S):  # type: ignore[no-untyped-def]
        """Poll ``predicate`` until truthy (returned), or BedError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        tail = (self.root / "log" / "slurmctld.log").read_text(errors="replace")[-1500:]
        raise BedError(f"timed out waiting for {what}; slurmctld log ends:\n{tail}")


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=False)
    if done.returncode != 0:
        raise BedError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done


def _read_pid(path: Path) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip().isdigit():
            return int(path.read_text().strip())
        time.sleep(0.05)
    raise BedError(f"no pid in {path}")


def _alive(pid: int) -> bool:
    if pid <= 0:  # never let 0 or -1 reach kill(): they mean "a group" / "everyone"
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid``, the main thread's first. ``/proc/PID/task/TID/children`` lists
    only the processes that thread forked: a dask nanny starts its worker from a thread of its own, and slurmd
    forks from the thread serving the RPC, so the main thread's list alone misses them (a "frozen" node whose
    dask worker went on working)."""
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except (OSError, ValueError):
        return []
    kids: list[int] = []
    for tid in sorted(tids, key=lambda t: t != pid):
        try:
            kids += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except OSError:  # the thread ended meanwhile
            continue
    return kids


def _child_of(pid: int) -> int | None:
    kids = _children(pid)
    return kids[0] if kids else None


def end_session(proc: subprocess.Popen[bytes], grace_s: float = 15.0) -> None:
    """End a job started in a session of its own (``salloc ... hotspare launch``) that is still running: SIGTERM
    to its group first, so the supervisor under it ends its launcher and probes (whose helpers may have left the
    group), then SIGKILL after ``grace_s``. A SIGKILL alone would orphan them, and an orphaned ``srun`` keeps
    asking the next bed's controller for its step."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
