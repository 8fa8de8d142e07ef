"""Finding the newest COMPLETE checkpoint to resume from.

A trainer killed mid-save leaves a directory that looks like a checkpoint but
holds truncated shards; resuming from it fails (or worse, loads garbage) and
burns an attempt. So a checkpoint only counts once it proves it is whole:
either a ``manifest.json`` whose every listed file exists with its recorded
size, or (for trainers that write no manifest) a completion marker file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from hotspare.errors import InputError
from hotspare.record.files import write_atomic

MANIFEST = "manifest.json"
#: Files trainers drop after the last shard is flushed (used only when there is no manifest).
MARKERS = ("COMPLETE", ".complete", "DONE", ".done")

# step-40, step_40, step40, ckpt-40, checkpoint_40, global_step40 (DeepSpeed), iter_0000040 (Megatron).
# ASCII digits only: \d would also take e.g. fullwidth digits, which no trainer writes.
_STEP_NAME = re.compile(r"(?:step|ckpt|checkpoint|global_step|iter)[-_]?([0-9]+)")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A complete checkpoint directory and the training step it holds."""

    path: Path
    step: int


def parse_step(name: str) -> int | None:
    """The step number a checkpoint directory name carries, or None if it is not a checkpoint name."""
    match = _STEP_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def find_latest(directory: str | Path) -> Checkpoint | None:
    """The complete checkpoint with the highest step under ``directory`` (ties: newest mtime), or None.

    A missing directory means no checkpoint yet (a first attempt); one that
    cannot be listed raises InputError, since resuming from scratch silently
    would throw away the run's progress.
    """
    root = Path(directory)
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(str(root), exc.strerror or str(exc)) from exc
    # Newest first, so only the candidates above the answer are ever verified.
    for step, _, path in sorted(_candidates(entries), reverse=True):
        if incomplete_reason(path) is None:
            return Checkpoint(path, step)
    return None


def written_since(directory: str | Path, *, above_step: int | None, since_s: float) -> list[tuple[int, float]]:
    """(step, write time) of each complete checkpoint under ``directory`` written at or after ``since_s`` with
    a step above ``above_step``, in step order (for the run's timeline). A missing directory yields none (nothing
    written yet); one that cannot be listed raises InputError; a checkpoint rotated away meanwhile is skipped."""
    root = Path(directory)
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(str(root), exc.strerror or str(exc)) from exc
    floor = -1 if above_step is None else above_step
    return sorted((step, mtime) for step, mtime, path in _candidates(entries)
                  if step > floor and mtime >= since_s and incomplete_reason(path) is None)


def _candidates(entries: list[Path]) -> list[tuple[int, float, Path]]:
    """(step, mtime, path) of the step-named subdirectories; unstat-able entries are skipped."""
    found = []
    for path in entries:
        step = parse_step(path.name)
        if step is None:
            continue
        try:
            info = path.stat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            found.append((step, info.st_mtime, path))
    return found


def incomplete_reason(path: Path) -> str | None:
    """One line saying why ``path`` is not a complete checkpoint, or None when it is.

    Never raises for a bad checkpoint: whatever is wrong with it becomes the reason.
    """
    why = _why_incomplete(path)
    return None if why is None else f"{_show(path.name)}: {why}"


def _show(name: str) -> str:
    """A file name as written, or quoted if it holds a newline or other unprintable (reasons are one line)."""
    return name if name.isprintable() else repr(name)


def _why_incomplete(path: Path) -> str | None:
    step = parse_step(path.name)
    if step is None:
        return "name carries no step number"
    manifest = path / MANIFEST
    try:
        text = manifest.read_text(encoding="utf-8")
    except FileNotFoundError:
        return _marker_reason(path)
    except (OSError, UnicodeDecodeError) as exc:
        return f"{MANIFEST} unreadable ({exc})"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return f"{MANIFEST} is not JSON ({exc})"
    return _manifest_reason(path, step, data)


def _marker_reason(path: Path) -> str | None:
    if any((path / name).is_file() for name in MARKERS):
        return None
    return f"no {MANIFEST} and no completion marker ({', '.join(MARKERS)})"


def _manifest_reason(path: Path, step: int, data: Any) -> str | None:
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return f'{MANIFEST} has no "files" object'
    if "step" in data and (type(data["step"]) is not int or data["step"] != step):
        return f"{MANIFEST} says step {data['step']!r}, directory says {step}"
    files: dict[Any, Any] = data["files"]
    # A manifest listing nothing proves nothing was written.
    if not files:
        return f"{MANIFEST} lists no files"
    for rel, size in files.items():
        why = _file_reason(path, rel, size)
        if why is not None:
            return why
    return None


def _file_reason(path: Path, rel: Any, size: Any) -> str | None:
    if not isinstance(rel, str) or type(size) is not int or size < 0:
        return f"{MANIFEST} entry {rel!r}: {size!r} is not a byte count"
    full = _inside(path, rel)
    if full is None:
        return f"{MANIFEST} entry {rel!r} points outside the checkpoint"
    try:
        info = full.stat()
    except OSError:
        return f"shard {_show(rel)} is missing"
    if not stat.S_ISREG(info.st_mode):
        return f"shard {_show(rel)} is not a regular file"
    if info.st_size != size:
        return f"shard {_show(rel)} is {info.st_size} bytes, manifest says {size}"
    return None


def _inside(path: Path, rel: str) -> Path | None:
    """Where manifest entry ``rel`` resolves, or None if that is outside ``path``.

    The manifest is data from disk: it must not make us vouch for files
    elsewhere, whether by an absolute path, ``..`` or a symlink leading out.
    """
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        return None
    try:
        full = path.joinpath(*parts).resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before 3.13)
        return None
    return full if full.is_relative_to(path.resolve()) else None


def write_manifest(checkpoint_dir: Path, step: int) -> Path:
    """Write ``manifest.json`` listing every regular file under ``checkpoint_dir`` (sizes in bytes).

    Written to a temp file in the same directory and renamed over, so a reader
    sees either no manifest or a whole one, never a half-written one.
    """
    files = _regular_files(checkpoint_dir)
    body = json.dumps({"step": step, "files": files}, indent=1, sort_keys=True) + "\n"
    # Durable before it is visible: a manifest must never outlive a crash that lost its own bytes.
    target = checkpoint_dir / MANIFEST
    write_atomic(target, body)
    return target


def _regular_files(checkpoint_dir: Path) -> dict[str, int]:
    """Relative POSIX path -> size of each regular file (symlinks not followed), manifest and temps excluded."""
    files: dict[str, int] = {}
    for dirpath, _, names in os.walk(checkpoint_dir):
        for name in names:
            full = Path(dirpath, name)
            rel = full.relative_to(checkpoint_dir).as_posix()
            if rel == MANIFEST or rel.startswith(f".{MANIFEST}."):
                continue
            info = full.lstat()
            if stat.S_ISREG(info.st_mode):
                files[rel] = info.st_size
    return files
