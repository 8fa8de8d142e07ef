"""PID 1 of a test-bed node: run inside its own UTS, PID and mount namespaces.

It names the node, makes its bind mounts (private directories over shared paths, seen only in this node), runs
its steps in order and then reaps orphans for ever (slurmstepd double-forks, PBS daemons daemonize: all are
re-parented here). A step either runs to completion (``"wait": true``: a setup command, or a daemon that forks
into the background; a failure ends the node) or is started and kept (``"wait": false``: a daemon in the
foreground). On SIGTERM it sends SIGTERM to every other process of the node, waits up to 5 s, and exits. When it
exits the kernel kills everything left in the namespace: killing it from outside is a node losing power.

Usage: python node_init.py NAME SPEC_JSON, where SPEC_JSON is
``{"binds": [[source, target], ...], "steps": [{"argv": [...], "wait": bool}, ...], "ready": path}``; the
optional ``ready`` file is written once every step has run (or started), so the bed can tell a daemon a setup
step started and stopped again from the one that stays.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

STOP_GRACE_S = 5.0


def _prepare(name: str, spec: dict[str, list]) -> None:  # type: ignore[type-arg]
    socket.sethostname(name)
    for source, target in spec.get("binds", []):
        os.makedirs(source, exist_ok=True)
        subprocess.run(["mount", "--bind", source, target], check=True)


def _run_steps(steps: list[dict[str, object]]) -> int:
    """Run the steps in order; 0, or the exit status of the first waited step that failed."""
    for step in steps:
        argv = [str(a) for a in step["argv"]]  # type: ignore[attr-defined]
        if step.get("wait"):
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, check=False)
            if done.returncode != 0:
                print(f"node_init: {' '.join(argv)} exited {done.returncode}", file=sys.stderr, flush=True)
                return done.returncode or 1
        else:
            subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    return 0


def _reap_until_stopped() -> int:
    stopping: list[float] = []

    def stop(signum: int, frame: object) -> None:
        if not stopping:
            stopping.append(time.monotonic() + STOP_GRACE_S)
            # kill(-1) from a namespace's PID 1 reaches every process of the node but the init; anywhere else it
            # would reach every process of the machine, so outside a PID namespace nothing is signalled.
            if os.getpid() == 1:
                os.kill(-1, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:  # poll, not block: a blocking waitpid would outlast the stop deadline
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)  # reap every child, the daemons' orphans included
        except ChildProcessError:  # no child at all
            if stopping:
                return 0
            pid = 0
        if stopping and time.monotonic() > stopping[0]:
            return 0
        if pid == 0:
            time.sleep(0.1)


def main() -> int:
    name, spec = sys.argv[1], json.loads(sys.argv[2])
    _prepare(name, spec)
    status = _run_steps(spec.get("steps", []))
    if status:
        return status
    if spec.get("ready"):
        with open(spec["ready"], "w") as ready:
            ready.write(f"{name}\n")
    return _reap_until_stopped()


if __name__ == "__main__":
    sys.exit(main())
