"""One bounded wait for the bed tests and the workflow scripts they run inside the PBS bed (on PYTHONPATH there)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, predicate: Callable[[], Any], timeout_s: float, *, every_s: float = 0.2) -> Any:
    """Poll ``predicate`` every ``every_s`` until it returns something truthy (returned), or AssertionError naming
    ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"not within {timeout_s} s: {what}")
