"""hotspare's interchange commands against a real HTEX interchange and real managers (LocalProvider, loopback): each
manager's heartbeat age is read, and expiring a manager fails its running task over to the other block at once,
as a free retry, through the interchange's own expiry."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import parsl
import pytest
from parsl.config import Config
from parsl.providers import LocalProvider

from hotspare import Fault
from hotspare_parsl import FailoverHTEX, FailoverProvider, retry_handler
from hotspare_parsl.interchange import EXPIRE, MANAGERS


@parsl.python_app
def nap(seconds: float) -> int:
    import os  # noqa: PLC0415 -- runs on the worker
    import time  # noqa: PLC0415

    time.sleep(seconds)
    return os.getppid()  # the manager's pid: which block ran it


def test_expiring_a_manager_fails_its_task_over_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two local blocks; an 8 s task on one; HOTSPARE_MANAGERS gives both managers with fresh heartbeats; after
    HOTSPARE_EXPIRE of the busy one, the interchange drops it and the task runs again on the other block long before
    HTEX's 120 s threshold, and the retry handler records it as a free node failure."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    provider = FailoverProvider(LocalProvider(init_blocks=2, min_blocks=2, max_blocks=2), run_dir=tmp_path / "wf")
    executor = FailoverHTEX(label="htex", address="127.0.0.1", loopback_address="127.0.0.1", provider=provider,
                            max_workers_per_node=1)
    config = Config(executors=[executor], run_dir=str(tmp_path / "runinfo"), retries=1, retry_handler=retry_handler)
    with parsl.load(config):
        deadline = time.monotonic() + 60
        while len(executor.connected_managers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        future = nap(8)
        time.sleep(2)
        managers = executor.command_client.run(MANAGERS)
        assert len(managers) == 2 and all(m["heartbeat_age_s"] < 3 for m in managers), managers
        busy = next(m["manager"] for m in managers if m["tasks"])
        expired_at = time.monotonic()
        assert executor.command_client.run([EXPIRE, busy]) is True
        assert executor.command_client.run([EXPIRE, "no-such-manager"]) is False
        assert busy not in [m["manager"] for m in executor.command_client.run(MANAGERS)]
        assert future.result(timeout=60)
        assert time.monotonic() - expired_at < 30  # the rerun's 8 s, not the 120 s threshold
    rows = provider.retries()
    assert [(r.fault, r.cost) for r in rows] == [(Fault.NODE, 0.0)], rows
    provider.close()
