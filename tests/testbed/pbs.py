"""Bring a real OpenPBS cluster up on one machine, break its nodes, tear it down.

The whole cluster lives in a network namespace the bed creates (``ip netns add``; PBS refuses 127.x addresses,
see :mod:`testbed.pbs_layout`): ``lo`` up with the bed's own /32 addresses and a hosts file in
``/etc/netns/NAME/hosts``, no veth and no route out, so no PBS traffic leaves it. Inside it:

- the server host ``pbshead``: one UTS+PID+mount+IPC namespace whose init (``node_init.py``) creates the PBS
  home (``pbs_habitat``: the datastore, the server, queue ``workq``) on the first start and then starts
  ``pbs_comm``, ``pbs_sched`` and ``pbs_server``, which starts its own PostgreSQL (port 15007, user
  ``postgres``); that namespace's ``/run/postgresql`` is a directory of the bed's, so no socket or lock file of
  it is left on the host, and killing its init ends every one of those processes;
- nodes ``p1``..``p4``: one UTS+PID+mount namespace each, its init starting one ``pbs_mom`` with the node's own
  ``PBS_HOME``, ``pbs.conf`` and port pair (15011/15012, 15013/15014, ...). Killing a node's init is a crash
  (the MOM and its jobs die at once); SIGSTOP of every process of the node is a freeze.

Every daemon and command gets its ``PBS_CONF_FILE``: no ``/etc/pbs.conf`` is written. Anything that talks to the
cluster must run in the namespace: :meth:`Bed.exec` and :attr:`Bed.env` (the PBS prefix's ``bin`` first on
PATH, ahead of SLURM's Torque wrappers in /usr/bin). Jobs run as root: the server's ``acl_roots = root`` allows
it (PBS refuses root's jobs by default), and ``flatuid`` maps a user on any host of the bed to the same user.

PBS homes are created one at a time (PBS's habitat script, run for several homes at once, raced on a temp file);
later starts run in parallel. Only processes this module started are ever signalled, by the PIDs it recorded.
Needs root, ``ip`` (iproute2), util-linux and an OpenPBS install (:mod:`testbed.pbs_build`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from testbed.cluster import BedError, _alive, _children, _state
from testbed.pbs_layout import (
    HEAD,
    HOMES,
    SERVER_SETTINGS,
    Layout,
    LayoutError,
    build_create_node,
    build_hosts,
    build_mom_config,
    build_pbs_conf,
    check_block,
    parse_ip_addrs,
    parse_node_states,
)

NODE_INIT = Path(__file__).with_name("node_init.py")
UP_TIMEOUT_S = 60.0
REQUIRED = ("ip", "unshare", "mount")
#: The daemons recorded per namespace, by their command name (``/proc/PID/comm``, 15 characters at most).
HEAD_DAEMONS = ("pbs_comm", "pbs_sched", "pbs_server.bin", "postgres", "pbs_ds_monitor")
#: What the server's first start prints when making its datastore raced PostgreSQL's own start: OpenPBS's
#: pbs_db_utility runs createdb as soon as ``pg_ctl status`` says the server runs, which it says once the
#: postmaster's pid file exists, before its socket does ("createdb: error: connection to server on socket
#: .../.s.PGSQL.15007 failed: No such file or directory"; seen twice in a row on a loaded 2-core machine).
DATASTORE_RACE = ("Error creating PBS datastore", "Error starting PBS Data Service")
#: Boots of the server host before a datastore race is an error.
HEAD_BOOTS = 3
#: How long a mother superior keeps a job whose sister went silent; short, so node-loss tests end quickly.
MAX_POLL_DOWNTIME_S = 15


@dataclass
class Bed:
    """A running PBS cluster and the PIDs it owns."""

    layout: Layout
    pids: dict[str, int] = field(default_factory=dict)
    #: A node was crashed, frozen or restarted: :meth:`settled` is False until the bed is rebuilt.
    disturbed: bool = False
    _children: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.layout.nodes

    @property
    def env(self) -> dict[str, str]:
        """The environment PBS commands need (run them through :meth:`exec`, inside the bed's namespace)."""
        path = f"{self.layout.prefix / 'bin'}:{self.layout.prefix / 'sbin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        return dict(os.environ, PATH=path, PBS_CONF_FILE=str(self.layout.conf(HEAD)))

    def argv(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the bed's network namespace (give it :attr:`env`)."""
        return ["ip", "netns", "exec", self.layout.netns, *argv]

    def exec(self, argv: list[str], timeout_s: float = 60.0, env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
        """Run a command inside the bed (its network namespace, the PBS commands first on PATH); never raises
        on a non-zero exit (see :meth:`run`)."""
        return subprocess.run(self.argv(argv), capture_output=True, text=True, env=env or self.env,
                              timeout=timeout_s, check=False)

    def run(self, argv: list[str], timeout_s: float = 60.0) -> str:
        """:meth:`exec`, its stdout, or BedError naming the command and its stderr."""
        done = self.exec(argv, timeout_s)
        if done.returncode != 0:
            raise BedError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        return done.stdout

    def qmgr(self, command: str) -> str:
        return self.run(["qmgr", "-c", command])

    @property
    def state_file(self) -> Path:
        return self.root / "bed.json"

    def save(self) -> None:
        """Record the bed (layout and PIDs) in ``root/bed.json``, for a later command to drive it."""
        data = {"prefix": str(self.layout.prefix), "netns": self.layout.netns, "nodes": self.nodes,
                "pids": self.pids, "disturbed": self.disturbed}
        self.state_file.write_text(json.dumps(data))

    @classmethod
    def load(cls, root: Path) -> Bed:
        """The bed recorded in ``root`` by :meth:`save`."""
        try:
            data = json.loads((root / "bed.json").read_text())
        except OSError as exc:
            raise BedError(f"no PBS bed in {root}: run `python -m testbed pbs up` first") from exc
        layout = Layout(root, Path(data["prefix"]), data["netns"], tuple(data["nodes"]))
        return cls(layout, {k: int(v) for k, v in data["pids"].items()}, bool(data["disturbed"]))

    # -- bring-up and teardown ---------------------------------------------------
    @classmethod
    def up(cls, root: Path, prefix: Path, *, nodes: int = 4) -> Bed:
        """A fresh cluster in ``root`` (wiped first) with ``nodes`` free nodes, or BedError. On failure every
        part started is stopped and the half-made PBS homes (datastore included) are wiped."""
        missing = [tool for tool in REQUIRED if shutil.which(tool) is None]
        if missing:
            raise BedError(f"missing {', '.join(missing)}: apt-get install iproute2 util-linux")
        if os.geteuid() != 0:
            raise BedError("the PBS test bed needs root (network namespaces, daemons, setuid pbs_iff)")
        try:
            layout = Layout(root, prefix, f"hotspare-pbs-{os.getpid()}-{time.time_ns() % 10**6}",
                            tuple(f"p{i}" for i in range(1, nodes + 1)))
            check_block(layout.block, parse_ip_addrs(_host(["ip", "-o", "-4", "addr", "show"])))
        except LayoutError as exc:
            raise BedError(str(exc)) from exc
        bed = cls(layout)
        try:
            bed._start()
        except BaseException:
            bed.down()  # which wipes the half-made PBS homes, datastore included
            raise
        return bed

    def _start(self) -> None:
        self._write_files()
        self.pids["netns"] = 0  # a marker: down() deletes the namespace even if making it failed half-way
        self._make_netns()
        for node in self.nodes:  # one at a time: pbs_habitat is not safe to run concurrently
            self._habitat(node)
        self._boot_head()
        self.wait_for(lambda: self.exec(["qstat", "-B"], 10).returncode == 0, "the server to answer")
        for setting in SERVER_SETTINGS:
            self.qmgr(setting)
        for node in self.nodes:
            self.start(node)
        for node in self.nodes:
            self.qmgr(build_create_node(self.layout, node))
        self.wait_for(lambda: self.free_nodes() == set(self.nodes), "every node free")
        self.disturbed = False

    def _write_files(self) -> None:
        r = self.root
        shutil.rmtree(r, ignore_errors=True)
        for sub in ("etc", "log", "nodelocal", "local", "pgrun"):
            (r / sub).mkdir(parents=True)
        _remove_stale_homes()
        self.layout.homes.mkdir(parents=True)
        for path in (HOMES, self.layout.homes):  # whatever the umask: PBS refuses group-writable parents
            path.chmod(0o755)
        (r / "homes").symlink_to(self.layout.homes)  # for humans: the PBS logs are in homes/*/*_logs
        r.chmod(0o755)  # postgres (the datastore's user) must traverse it
        shutil.chown(r / "pgrun", "postgres", "postgres")
        for name in (HEAD, *self.nodes):
            self.layout.conf(name).write_text(build_pbs_conf(self.layout, name))
        (r / "etc" / "hosts").write_text(build_hosts(self.layout, socket.gethostname()))

    def _make_netns(self) -> None:
        name = self.layout.netns
        etc = Path("/etc/netns") / name
        etc.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.root / "etc" / "hosts", etc / "hosts")
        _host(["ip", "netns", "add", name])
        _host(self.argv(["ip", "link", "set", "lo", "up"]))
        for host in (HEAD, *self.nodes):
            _host(self.argv(["ip", "addr", "add", f"{self.layout.address(host)}/32", "dev", "lo"]))

    def _habitat(self, node: str) -> None:
        """Create a node's PBS home (the server's is made by its own init, inside its namespaces)."""
        env = dict(self.env, PBS_CONF_FILE=str(self.layout.conf(node)))
        done = self.exec([str(self.layout.prefix / "libexec" / "pbs_habitat")], 120, env)
        (self.root / "log" / f"habitat-{node}.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise BedError(f"pbs_habitat for {node} exited {done.returncode}; see {self.root / 'log'}")
        with (self.layout.home(node) / "mom_priv" / "config").open("a") as config:
            config.write(build_mom_config(MAX_POLL_DOWNTIME_S))

    def _steps(self, name: str) -> dict[str, list[object]]:
        sbin = self.layout.prefix / "sbin"
        if name != HEAD:
            return {"binds": [[str(self.root / "nodelocal" / name), str(self.root / "local")]],
                    "steps": [{"argv": [str(sbin / "pbs_mom")], "wait": True}]}
        steps: list[object] = [{"argv": [str(sbin / daemon)], "wait": True}
                               for daemon in ("pbs_comm", "pbs_sched", "pbs_server")]
        if not (self.layout.home(HEAD) / "datastore").exists():
            steps.insert(0, {"argv": [str(self.layout.prefix / "libexec" / "pbs_habitat")], "wait": True})
        return {"binds": [[str(self.root / "pgrun"), "/run/postgresql"]], "steps": steps}

    def _boot_head(self) -> None:
        """Boot the server host; when its first start lost the datastore race (:data:`DATASTORE_RACE`), wipe the
        half-made datastore and PostgreSQL's run directory (its init's death ended every process of it) and boot
        again, up to :data:`HEAD_BOOTS` times. Any other failure is raised at once."""
        for boot in range(1, HEAD_BOOTS + 1):
            try:
                self._boot(HEAD)
                return
            except BedError as exc:
                if boot == HEAD_BOOTS or not any(mark in str(exc) for mark in DATASTORE_RACE):
                    raise
            with (self.root / "log" / f"{HEAD}.console").open("a") as console:
                console.write(f"--- testbed: the datastore's creation raced PostgreSQL's start (boot {boot} of "
                              f"{HEAD_BOOTS}); wiping it and booting {HEAD} again\n")
            shutil.rmtree(self.layout.home(HEAD) / "datastore", ignore_errors=True)
            for left in (self.root / "pgrun").iterdir():  # the socket's lock file names a PID of the dead namespace
                shutil.rmtree(left) if left.is_dir() and not left.is_symlink() else left.unlink()

    def _ready_file(self, name: str) -> Path:
        return self.root / "log" / f"{name}.ready"

    def _boot(self, name: str) -> None:
        """Start a host's namespace init (in the bed's network namespace); record its PID and its daemons'."""
        console = (self.root / "log" / f"{name}.console").open("ab")
        ready = self._ready_file(name)
        ready.unlink(missing_ok=True)
        spec = dict(self._steps(name), ready=str(ready))
        unshare = ["unshare", "--uts", "--pid", "--mount", "--ipc", "--fork", "--mount-proc",
                   "--kill-child=SIGKILL", sys.executable, str(NODE_INIT), name, json.dumps(spec)]
        env = dict(self.env, PBS_CONF_FILE=str(self.layout.conf(name)))
        proc = subprocess.Popen(self.argv(unshare), stdin=subprocess.DEVNULL, stdout=console, stderr=console,
                                env=env, start_new_session=True)
        console.close()
        self.pids[f"unshare:{name}"] = proc.pid  # ip netns exec execs unshare: the same process
        self._children.append(proc)
        init = self.wait_for(lambda: proc.poll() is None and _first_child(proc.pid), f"{name}'s init", 10)
        self.pids[f"node:{name}"] = init
        # Only after its steps: the server's first start runs a server and a PostgreSQL that stop again.
        self.wait_for(lambda: self._alive_or_fail(name, proc) and ready.exists(), f"{name}'s daemons to start")
        daemons = HEAD_DAEMONS if name == HEAD else ("pbs_mom",)
        for daemon in daemons:
            self.pids[f"{daemon}:{name}"] = self.wait_for(
                lambda d=daemon: self._alive_or_fail(name, proc) and _named_child(init, d), f"{daemon} on {name}")

    def _alive_or_fail(self, name: str, proc: subprocess.Popen[bytes]) -> bool:
        if proc.poll() is not None:
            tail = (self.root / "log" / f"{name}.console").read_text(errors="replace")[-800:]
            raise BedError(f"{name}'s init exited {proc.returncode}; its console ends:\n{tail}")
        return True

    def down(self) -> None:
        """Stop everything this bed started (by recorded PID only) and delete its network namespace. Every
        namespace init is killed, so the kernel ends what runs in it (MOMs, jobs, server, PostgreSQL); the
        datastore is wiped by the next :meth:`up`."""
        inits = [n for n in self.pids if n.startswith("node:")]
        for name in inits:
            self._signal(name, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in self.pids.values()):
            time.sleep(0.1)
        for name in list(self.pids):
            self._signal(name, signal.SIGKILL)
        for child in self._children:
            child.wait(timeout=10)
        if "netns" in self.pids:
            subprocess.run(["ip", "netns", "delete", self.layout.netns], capture_output=True, timeout=30,
                           check=False)
        shutil.rmtree(Path("/etc/netns") / self.layout.netns, ignore_errors=True)
        shutil.rmtree(self.layout.homes, ignore_errors=True)
        with contextlib.suppress(OSError):  # the parent too, once no bed has homes in it
            HOMES.rmdir()
        self.pids.clear()

    def _signal(self, name: str, sig: int) -> bool:
        pid = self.pids.get(name)
        if pid is None or not _alive(pid):
            return False
        os.kill(pid, sig)
        return True

    # -- node controls -------------------------------------------------------------
    def start(self, node: str) -> None:
        """Boot a node: its init starts pbs_mom, which reports to the server (``free`` ~2-3 s later)."""
        if node not in self.nodes:
            raise BedError(f"no node {node!r}: the nodes are {', '.join(self.nodes)}")
        if f"node:{node}" in self.pids and _alive(self.pids[f"node:{node}"]):
            raise BedError(f"{node} is running")
        self._boot(node)

    def crash(self, node: str) -> None:
        """Power off: SIGKILL the node's namespace init; the MOM and its jobs die with it."""
        self.disturbed = True
        if not self._signal(f"node:{node}", signal.SIGKILL):
            raise BedError(f"{node} is not running")
        # Gone, not only dead: a PID namespace's init finishes exiting only once every process of the namespace is
        # reaped, and unshare (its parent) reaps it at once; until then the MOM may linger as a zombie (seen under
        # load: its /proc entry still there after crash returned).
        init = self.pids[f"node:{node}"]
        self.wait_for(lambda: not Path(f"/proc/{init}").exists(), f"{node}'s processes to be gone", 10)

    def freeze(self, node: str) -> None:
        """Hang the node: SIGSTOP every process in it (sockets stay open; the kernel still answers TCP)."""
        self.disturbed = True
        pids = self.node_pids(node)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        # SIGSTOP lands asynchronously: return once every process of the node is stopped (T) or gone.
        self.wait_for(lambda: all(_state(pid) in {"T", "Z"} for pid in pids), f"{node} to stop", 5)

    def thaw(self, node: str) -> None:
        """Undo :meth:`freeze`."""
        for pid in self.node_pids(node):
            os.kill(pid, signal.SIGCONT)

    def node_pids(self, node: str) -> list[int]:
        """Host PIDs of every process in the node (its init and all descendants)."""
        found, todo = [], [self.pids[f"node:{node}"]]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(_children(pid))
        return found

    # -- queries -------------------------------------------------------------------
    def node_states(self) -> dict[str, str]:
        """{node: state} from ``pbsnodes -av -F json``; {} when the server does not answer."""
        done = self.exec(["pbsnodes", "-av", "-F", "json"], 10)
        return parse_node_states(done.stdout) if done.returncode == 0 else {}

    def free_nodes(self) -> set[str]:
        return {n for n, state in self.node_states().items() if state == "free"}

    def heal(self, timeout_s: float = 20.0) -> bool:
        """After a test crashed or froze nodes: reboot each node whose init or MOM is dead or any of whose processes
        is stopped (SIGKILL of its init ends everything in it, stopped or not; the MOM starts afresh, with no job of
        the test left on it), then :meth:`settled`. A few seconds, against ~15 for a new bed (a new datastore).
        False when the server host itself is not whole or the bed does not settle: the caller builds a new one."""
        head = [pid for name, pid in self.pids.items() if name.endswith(f":{HEAD}")]
        if not head or not all(_alive(pid) and _state(pid) != "T" for pid in head):
            return False
        for node in self.nodes:
            init, mom = self.pids.get(f"node:{node}", 0), self.pids.get(f"pbs_mom:{node}", 0)
            if _alive(init) and _alive(mom) and all(_state(pid) != "T" for pid in self.node_pids(node)):
                continue
            self._signal(f"node:{node}", signal.SIGKILL)
            gone = Path(f"/proc/{self.pids.get(f'node:{node}', 0)}")  # its init reaped: every process of it is
            self.wait_for(lambda g=gone: not g.exists(), f"{node}'s old namespace to end", 10)
            self._boot(node)
        self.disturbed = False
        return self.settled(timeout_s)

    def settled(self, timeout_s: float = 10.0) -> bool:
        """Delete every job, then whether the bed is as new: no node disturbed, every daemon alive, no job left
        (waiting up to ``timeout_s``), every node free."""
        if self.disturbed or not all(_alive(pid) for name, pid in self.pids.items() if name != "netns"):
            return False
        jobs = self.exec(["qselect"], 10).stdout.split()
        if jobs and self.exec(["qdel", "-W", "force", *jobs], 30).returncode != 0:
            return False
        deadline = time.monotonic() + timeout_s
        while True:  # bounded by the deadline
            if not self.exec(["qselect"], 10).stdout.split() and self.free_nodes() == set(self.nodes):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)

    def wait_for(self, predicate, what: str, timeout_s: float = UP_TIMEOUT_S):  # type: ignore[no-untyped-def]
        """Poll ``predicate`` until truthy (returned), or BedError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        raise BedError(f"timed out after {timeout_s:.0f} s waiting for {what}; logs in {self.root / 'log'} "
                       f"and {self.root / 'homes'}/*/*_logs")


def _host(argv: list[str]) -> str:
    """Run a setup command on the host (the bed's own ``ip`` calls); its stdout, or BedError."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise BedError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done.stdout


def _remove_stale_homes() -> None:
    """Remove the PBS homes of beds whose network namespace is gone (a bed killed before its teardown): a
    live bed's namespace exists, so its homes are kept."""
    if not HOMES.is_dir():
        return
    live = {line.split()[0] for line in _host(["ip", "netns", "list"]).splitlines() if line.strip()}
    for homes in HOMES.iterdir():
        if homes.name.startswith("hotspare-pbs-") and homes.name not in live:
            shutil.rmtree(homes, ignore_errors=True)


def _first_child(pid: int) -> int | None:
    kids = _children(pid)
    return kids[0] if kids else None


def _named_child(pid: int, comm: str) -> int | None:
    """The first child of ``pid`` whose command name is ``comm`` (for postgres: the postmaster, whose parent is
    the namespace's init; its own workers are its children)."""
    for kid in _children(pid):
        try:
            if Path(f"/proc/{kid}/comm").read_text().strip() == comm:
                return kid
        except OSError:
            continue
    return None
