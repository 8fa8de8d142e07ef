"""HTEX's interchange with two more commands, so a block's node can be judged and its tasks failed over in seconds.

Started through the executor's own extension point, ``HighThroughputExecutor(interchange_launch_cmd=
INTERCHANGE_CMD)`` (:class:`hotspare_parsl.FailoverHTEX` sets it): the executor pipes the same pickled settings to
this module that it pipes to Parsl's ``interchange.py``, and every command Parsl sends is answered by Parsl's own
code. Added:

* ``HOTSPARE_MANAGERS``: each connected manager's block, host, task count and **heartbeat age** (seconds, on the
  interchange's clock). Parsl's ``MANAGERS`` reply (2026.10) leaves ``last_heartbeat`` out, and no other command
  tells a silent manager from a busy one;
* ``["HOTSPARE_EXPIRE", manager_id]``: the manager is treated as having missed ``heartbeat_threshold``: its
  ``last_heartbeat`` is set to 0, and the very next step of the interchange's own loop (``expire_bad_managers``,
  run right after the commands) fails each of its tasks with ``ManagerLost`` and unregisters it, exactly as it does
  after 120 s of silence. ``HOLD_MANAGER`` only stops new tasks (its running ones would wait out the threshold),
  and ``_hold_block`` is the same per block, so neither fails the lost tasks over.
"""

from __future__ import annotations

import pickle
import sys
import time
from typing import Any

import zmq
from parsl.executors.high_throughput.interchange import Interchange
from parsl.utils import setproctitle

#: ``interchange_launch_cmd`` for this module, run by the workflow's own Python.
INTERCHANGE_CMD = (sys.executable, "-c", "from hotspare_parsl.interchange import main; main()")
MANAGERS = "HOTSPARE_MANAGERS"
EXPIRE = "HOTSPARE_EXPIRE"
_NOT_OURS = object()


class _Replay:
    """The command channel with one request already read: Parsl's handler reads it again and replies through it."""

    def __init__(self, channel: Any, request: Any) -> None:
        self._channel, self._request = channel, request

    def recv_pyobj(self) -> Any:
        return self._request

    def send_pyobj(self, reply: Any) -> None:
        self._channel.send_pyobj(reply)


class FailoverInterchange(Interchange):
    """Parsl's interchange answering :data:`MANAGERS` and :data:`EXPIRE` too (see the module)."""

    def process_command(self, monitoring_radio: Any) -> None:
        channel = self.command_channel
        if self.socks.get(channel) != zmq.POLLIN:
            return
        request = channel.recv_pyobj()
        reply = self._hotspare_reply(request)
        if reply is not _NOT_OURS:
            channel.send_pyobj(reply)
            return
        replay = _Replay(channel, request)
        socks = self.socks
        self.command_channel, self.socks = replay, {**socks, replay: zmq.POLLIN}  # type: ignore[assignment]
        try:
            super().process_command(monitoring_radio)
        finally:
            self.command_channel, self.socks = channel, socks

    def _hotspare_reply(self, request: Any) -> Any:
        if request == MANAGERS:
            now = time.time()
            return [{"manager": mid.decode("utf-8"), "block_id": m.get("block_id"), "hostname": m.get("hostname"),
                     "heartbeat_age_s": now - m["last_heartbeat"], "tasks": len(m["tasks"]),
                     "active": m["active"]} for mid, m in self._ready_managers.items()]
        if isinstance(request, list) and len(request) == 2 and request[0] == EXPIRE:
            m = self._ready_managers.get(str(request[1]).encode("utf-8"))
            if m is None:
                return False
            m["last_heartbeat"] = 0.0  # expire_bad_managers, next in this loop turn, fails its tasks over
            return True
        return _NOT_OURS


def main() -> None:
    """What Parsl's ``interchange.py`` does, with :class:`FailoverInterchange`."""
    setproctitle("parsl: HTEX interchange (hotspare)")
    # The executor that started this process pipes its settings, as it does to Parsl's interchange.py.
    config = pickle.load(sys.stdin.buffer)  # noqa: S301 -- written by our own parent process
    FailoverInterchange(**config).start()


if __name__ == "__main__":
    main()
