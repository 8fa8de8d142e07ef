"""Where hotspare keeps what it worked out once and can reuse (compiled Hyperscan databases, packs already
checked): ``$HOTSPARE_CACHE``, else ``$XDG_CACHE_HOME/hotspare``, else ``~/.cache/hotspare``. Set the variable
empty to keep nothing. Every entry is keyed by a hash of all it was made from, and written whole or not at all,
so a stale or half-written entry is never read; losing the cache costs time, nothing else."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

#: The environment variable naming the cache directory ("" keeps nothing).
CACHE_VAR = "HOTSPARE_CACHE"

log = logging.getLogger(__name__)


def cache_dir() -> Path | None:
    """The cache directory (perhaps not made yet), or None when caching is off."""
    value = os.environ.get(CACHE_VAR)
    if value == "":
        return None
    return Path(value) if value else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hotspare"


def digest(*parts: bytes) -> str:
    """A key for what ``parts`` make (40 hex digits of their SHA-256, each part length-prefixed)."""
    import hashlib  # noqa: PLC0415 -- here, not at start-up: it loads OpenSSL

    sha = hashlib.sha256()
    for part in parts:
        sha.update(len(part).to_bytes(8, "little"))
        sha.update(part)
    return sha.hexdigest()[:40]


def store(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (runs in parallel may write the same file)."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError as exc:  # a read-only home costs the work again next run, nothing else
        log.debug("cannot keep %s in the cache: %s", path.name, exc)
        temporary.unlink(missing_ok=True)
