"""``FailoverHTEX``: Parsl's HighThroughputExecutor whose blocks' nodes are watched, so a lost block's tasks run
again elsewhere in seconds and its replacement is asked for at once.

One class changes in a Parsl config (with :class:`hotspare_parsl.FailoverProvider` as its provider)::

    FailoverHTEX(label="htex", address="10.0.0.1", provider=FailoverProvider(SlurmProvider(...)))

A thin subclass: it sets three of HTEX's own settings and starts a :class:`hotspare_parsl.watch.BlockWatch` beside
the interchange. HTEX alone fails a lost block's tasks only after ``heartbeat_threshold`` (120 s by default) and
only then; nothing of the provider could shorten that from outside the interchange.

* ``interchange_launch_cmd``: :data:`hotspare_parsl.interchange.INTERCHANGE_CMD`, Parsl's interchange with two
  commands more (each manager's heartbeat age; expire one manager now);
* ``heartbeat_period``: 1 s unless given (a manager's heartbeat is one small message), so a silent manager is
  noticed after ``silence_floor_s`` (3 s) rather than minutes; ``heartbeat_threshold`` stays HTEX's own backstop;
* ``block_error_handler``: :func:`hotspare_parsl.block_error_handler` unless given (a block lost with its node is
  not the executor's failure).

``silence_s`` fixes the silence threshold (seconds) instead of ``max(silence_floor_s, 3 x heartbeat_period)``.
With another provider than FailoverProvider no watch runs: the executor is HTEX.
"""

from __future__ import annotations

from typing import Any

from parsl.executors import HighThroughputExecutor

from hotspare_parsl.interchange import INTERCHANGE_CMD
from hotspare_parsl.provider import FailoverProvider
from hotspare_parsl.retry import block_error_handler
from hotspare_parsl.silence import SILENCE_FLOOR_S, silence_threshold_s
from hotspare_parsl.watch import BlockWatch

#: A FailoverHTEX manager's heartbeat period unless given (seconds).
HEARTBEAT_PERIOD_S = 1


class FailoverHTEX(HighThroughputExecutor):
    """HighThroughputExecutor with the block watch (see the module)."""

    def __init__(self, *args: Any, silence_s: float | None = None, silence_floor_s: float = SILENCE_FLOOR_S,
                 **kwargs: Any) -> None:
        if silence_s is not None and silence_s <= 0:
            raise ValueError(f"silence_s={silence_s}: give a positive number of seconds, or None to use the "
                             f"heartbeat period")
        if silence_floor_s <= 0:
            raise ValueError(f"silence_floor_s={silence_floor_s}: give a positive number of seconds")
        kwargs.setdefault("interchange_launch_cmd", list(INTERCHANGE_CMD))
        kwargs.setdefault("heartbeat_period", HEARTBEAT_PERIOD_S)
        kwargs.setdefault("block_error_handler", block_error_handler)
        super().__init__(*args, **kwargs)
        self.silence_s = silence_s
        self.silence_floor_s = silence_floor_s
        self.block_watch: BlockWatch | None = None

    def start(self) -> None:
        super().start()  # type: ignore[no-untyped-call]
        if isinstance(self.provider, FailoverProvider):
            threshold_s = silence_threshold_s(self.heartbeat_period, self.silence_floor_s, self.silence_s)
            self.block_watch = BlockWatch(self, self.provider, threshold_s)
            self.block_watch.start()

    def shutdown(self, timeout: float = 10.0) -> None:
        if self.block_watch is not None:
            self.block_watch.stop()
        super().shutdown(timeout=timeout)
