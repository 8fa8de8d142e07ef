"""Free-space checks before launch.

A launch that dies of ENOSPC at its first checkpoint wastes the allocation's
startup and an attempt. On Lustre, ``df`` is not enough: a filesystem 10 %
full can still have full OSTs, and a single-stripe shard that lands on one of
them fails (the seed's run: two of four OSTs full, ``[Errno 28]`` on some ranks
only). So the check reads ``lfs df`` per OST as well as statvfs.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hotspare.act.runner import capture
from hotspare.errors import PreflightError

GIB = 1 << 30
#: ``lfs df -h`` divides by 1024 per step: K is KiB, M is MiB, ...
_UNITS = {suffix: 1 << (10 * (i + 1)) for i, suffix in enumerate("KMGTPEZY")}

# UUID, three sizes, use%, then the mount path glued to "[OST:n]" (state flags may follow).
# `lfs df` prints the mount path before the index; copies in notes often drop it, so it is optional.
_OST_ROW = re.compile(
    r"^\s*(?P<name>\S+-OST[0-9a-fA-F]+)_UUID\s+(?P<total>\S+)\s+(?P<used>\S+)\s+(?P<avail>\S+)"
    r"\s+(?P<pct>\d+)%\s.*?\[OST:\d+\]"
)
_SIZE = re.compile(r"(?P<number>\d+(?:\.\d+)?)(?P<unit>[KMGTPEZY]?)")


@dataclass(frozen=True, slots=True)
class OstUsage:
    """One Lustre OST's space as ``lfs df`` reports it, in bytes; ``name`` is the UUID without ``_UUID``."""

    name: str
    total_bytes: int
    used_bytes: int
    avail_bytes: int
    use_percent: int


def parse_lfs_df(text: str) -> list[OstUsage]:
    """The OST rows of ``lfs df`` (KiB columns) or ``lfs df -h`` (``581.4T``) output.

    MDT rows, the ``filesystem_summary:`` line and inactive OSTs are skipped.
    """
    rows = [m for m in map(_OST_ROW.match, text.splitlines()) if m and _is_size_row(m)]
    # Plain `lfs df` counts KiB; `-h` prints bytes below 1 KiB with no suffix, so one
    # suffix anywhere means the bare numbers in that table are bytes.
    human = any(m[col][-1].isalpha() for m in rows for col in ("total", "used", "avail"))
    bare_unit = 1 if human else 1024
    return [
        OstUsage(
            m["name"], _bytes(m["total"], bare_unit), _bytes(m["used"], bare_unit),
            _bytes(m["avail"], bare_unit), int(m["pct"]),
        )
        for m in rows
    ]


def _is_size_row(match: re.Match[str]) -> bool:
    return all(_SIZE.fullmatch(match[col]) for col in ("total", "used", "avail"))


def _bytes(token: str, bare_unit: int) -> int:
    match = _SIZE.fullmatch(token)
    assert match is not None  # rows were filtered by _is_size_row
    unit = _UNITS[match["unit"]] if match["unit"] else bare_unit
    return round(float(match["number"]) * unit)


def short_osts(osts: Sequence[OstUsage], min_free_bytes: int) -> list[OstUsage]:
    """The OSTs with less than ``min_free_bytes`` available."""
    return [ost for ost in osts if ost.avail_bytes < min_free_bytes]


def build_ost_message(shown: str, short: Sequence[OstUsage], total: int, min_free_gb: float) -> str:
    """The one-line PreflightError message for OSTs short of space; ``shown`` names the path checked."""
    listed = ", ".join(f"{o.name} ({o.avail_bytes / GIB:.1f} GiB free, {o.use_percent}% used)" for o in short)
    return (
        f"{shown}: {len(short)} of {total} OSTs under {min_free_gb:.10g} GiB free: {listed}; "
        f"a single-stripe file landing there fails with ENOSPC: stripe wider "
        f"(lfs setstripe -c -1 on the output directory) or free space on those OSTs"
    )


def check_free_space(
    path: str | Path, min_free_gb: float, *, lfs: Callable[[Path], str | None] | None = None
) -> None:
    """Raise PreflightError unless ``path`` (and, given ``lfs``, every OST) has ``min_free_gb`` GiB free.

    ``path`` need not exist yet: its nearest existing parent is checked.
    ``lfs`` returns ``lfs df`` text for a path, or None where Lustre is absent.
    """
    if not (math.isfinite(min_free_gb) and min_free_gb >= 0):
        raise PreflightError(f"--min-free-gb must be a number >= 0, got {min_free_gb!r}")
    where = _existing(Path(path))
    shown = _shown(Path(path), where)
    min_free_bytes = math.ceil(min_free_gb * GIB)
    free_bytes = _statvfs_free(where)
    if free_bytes < min_free_bytes:
        raise PreflightError(
            f"{shown}: {free_bytes / GIB:.1f} GiB free, {min_free_gb:.10g} GiB required; "
            f"free space or lower --min-free-gb"
        )
    text = lfs(where) if lfs is not None else None
    osts = parse_lfs_df(text) if text else []
    short = short_osts(osts, min_free_bytes)
    if short:
        raise PreflightError(build_ost_message(shown, short, len(osts), min_free_gb))


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing ancestor (an output directory is often made by the job itself)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _shown(path: Path, where: Path) -> str:
    """The path as given (quoted: it is one line whatever it holds), and where it was measured if elsewhere."""
    given = repr(str(path))
    return given if where == path.absolute() else f"{given} (measured at {str(where)!r})"


def _statvfs_free(path: Path) -> int:
    """Bytes an unprivileged writer may use (f_bavail: root's reserve does not count for the job)."""
    try:
        st = os.statvfs(path)
    except OSError as exc:
        raise PreflightError(f"{str(path)!r}: cannot read free space ({exc.strerror}); check the path") from exc
    return st.f_bavail * st.f_frsize


def default_lfs(path: Path) -> str | None:
    """``lfs df PATH`` output, or None when ``lfs`` is not installed (rc 127) or fails (not Lustre)."""
    done = capture(["lfs", "df", str(path)], timeout_s=10)
    return done.stdout if done.ok else None
