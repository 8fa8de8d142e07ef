"""PID 1 of a test-bed node: run inside its own UTS, PID and mount namespaces.

It names the node, gives it a private ``local`` directory, starts ``slurmd``
in the foreground, reaps orphans (slurmstepd double-forks and its children
are re-parented here), and on SIGTERM stops slurmd and exits. When it exits
the kernel kills everything left in the namespace: killing it from outside
is a node losing power.
Usage: python node_init.py NAME SLURM_CONF BED_DIR
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time


def main() -> int:
    name, conf, bed = sys.argv[1:4]
    socket.sethostname(name)
    private = os.path.join(bed, "nodelocal", name)
    os.makedirs(os.path.join(private, "tmp"), exist_ok=True)
    subprocess.run(["mount", "--bind", private, os.path.join(bed, "local")], check=True)
    slurmd = subprocess.Popen(["slurmd", "-D", "-f", conf, "-N", name])
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        slurmd.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    deadline = None
    while True:
        try:
            pid, _ = os.waitpid(-1, 0)  # reap every child, slurmd's orphans included
        except ChildProcessError:
            time.sleep(0.2)
            pid = 0
        except InterruptedError:
            pid = 0
        if stopping:
            deadline = deadline or time.monotonic() + 2
            if pid == slurmd.pid or slurmd.poll() is not None or time.monotonic() > deadline:
                return 0


if __name__ == "__main__":
    sys.exit(main())
