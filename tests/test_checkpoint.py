"""Checkpoints: only a complete one is ever offered for resuming, and the newest of those wins."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hotspare.act.checkpoint import (
    Checkpoint,
    find_latest,
    incomplete_reason,
    parse_step,
    write_manifest,
    written_since,
)
from hotspare.errors import InputError

SHARDS = {"model-0.pt": b"a" * 4096, "model-3.pt": b"b" * 4096, "optim/rank-0.pt": b"c" * 100}


def make_ckpt(root: Path, name: str, shards: dict[str, bytes] = SHARDS, *, manifest: object = "auto") -> Path:
    """A checkpoint dir holding ``shards``; ``manifest`` "auto" lists them, None writes none, else is written as-is."""
    path = root / name
    for rel, data in shards.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    path.mkdir(parents=True, exist_ok=True)
    if manifest == "auto":
        manifest = {"step": parse_step(name), "files": {rel: len(data) for rel, data in shards.items()}}
    if isinstance(manifest, str | bytes):
        (path / "manifest.json").write_bytes(manifest.encode() if isinstance(manifest, str) else manifest)
    elif manifest is not None:
        (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def test_newest_complete_is_chosen(tmp_path: Path) -> None:
    """Of several complete checkpoints the highest step wins, numerically (280 beats 40, not by string order)."""
    for name in ("step-40", "step-280", "step-100"):
        make_ckpt(tmp_path, name)
    assert find_latest(tmp_path) == Checkpoint(tmp_path / "step-280", 280)


def test_truncated_shard_in_newest_falls_back(tmp_path: Path) -> None:
    """A shard shorter than the manifest says (killed mid-save) disqualifies the newest; the previous good one wins."""
    make_ckpt(tmp_path, "step-40")
    newest = make_ckpt(tmp_path, "step-280")
    (newest / "model-3.pt").write_bytes(b"b" * 1024)
    assert find_latest(str(tmp_path)) == Checkpoint(tmp_path / "step-40", 40)
    assert incomplete_reason(newest) == "step-280: shard model-3.pt is 1024 bytes, manifest says 4096"


@pytest.mark.parametrize("marker", ["COMPLETE", ".complete", "DONE", ".done"])
def test_marker_only_checkpoint_is_complete(tmp_path: Path, marker: str) -> None:
    """Without a manifest, a completion marker file makes a checkpoint complete."""
    path = make_ckpt(tmp_path, "ckpt-7", manifest=None)
    (path / marker).touch()
    assert find_latest(tmp_path) == Checkpoint(path, 7)


def test_no_manifest_and_no_marker_is_incomplete(tmp_path: Path) -> None:
    """A directory with shards but neither manifest nor marker may be a save still in progress."""
    make_ckpt(tmp_path, "step-10")
    path = make_ckpt(tmp_path, "step-20", manifest=None)
    assert find_latest(tmp_path) == Checkpoint(tmp_path / "step-10", 10)
    assert incomplete_reason(path) == (
        "step-20: no manifest.json and no completion marker (COMPLETE, .complete, DONE, .done)"
    )


BAD_MANIFESTS = [
    ("{not json", "manifest.json is not JSON"),
    (b"\xff\xfe{}", "manifest.json unreadable"),
    ("[]", 'manifest.json has no "files" object'),
    ('{"step": 20}', 'manifest.json has no "files" object'),
    ('{"files": ["model-0.pt"]}', 'manifest.json has no "files" object'),
    ('{"files": {}}', "manifest.json lists no files"),
    ('{"files": {"model-0.pt": "4096"}}', "manifest.json entry 'model-0.pt': '4096' is not a byte count"),
    ('{"files": {"model-0.pt": -1}}', "manifest.json entry 'model-0.pt': -1 is not a byte count"),
    ('{"files": {"model-0.pt": true}}', "manifest.json entry 'model-0.pt': True is not a byte count"),
    ('{"files": {"model-0.pt": 4096.0}}', "manifest.json entry 'model-0.pt': 4096.0 is not a byte count"),
    ('{"files": {"model-9.pt": 4096}}', "shard model-9.pt is missing"),
    ('{"files": {"optim": 4096}}', "shard optim is not a regular file"),
    ('{"step": 40, "files": {"model-0.pt": 4096}}', "manifest.json says step 40, directory says 20"),
    ('{"step": "20", "files": {"model-0.pt": 4096}}', "manifest.json says step '20', directory says 20"),
]


@pytest.mark.parametrize(("manifest", "reason"), BAD_MANIFESTS)
def test_bad_manifest_is_skipped_with_a_reason(tmp_path: Path, manifest: str | bytes, reason: str) -> None:
    """A malformed, lying or disagreeing manifest makes the checkpoint incomplete (never an exception), with its reason."""
    make_ckpt(tmp_path, "step-10")
    path = make_ckpt(tmp_path, "step-20", manifest=manifest)
    assert find_latest(tmp_path) == Checkpoint(tmp_path / "step-10", 10)
    # JSON and decoding errors append the parser's own words after the reason.
    assert str(incomplete_reason(path)).startswith(f"step-20: {reason}")


def test_broken_manifest_is_not_rescued_by_a_marker(tmp_path: Path) -> None:
    """When a manifest exists it is the judge: a marker beside a failing manifest does not make it complete."""
    path = make_ckpt(tmp_path, "step-20", manifest='{"files": {"model-9.pt": 1}}')
    (path / "COMPLETE").touch()
    assert find_latest(tmp_path) is None


def test_entries_escaping_the_checkpoint_are_rejected(tmp_path: Path) -> None:
    """Absolute paths, ``..`` and symlinks leading out never vouch for a checkpoint, even with the right size."""
    root = tmp_path / "ckpts"
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x" * 10)
    for step, rel in [(1, "../../outside.bin"), (2, str(outside)), (3, "optim/../../../outside.bin"), (4, "link.bin")]:
        path = make_ckpt(root, f"step-{step}", manifest={"step": step, "files": {"model-0.pt": 4096, rel: 10}})
        (path / "link.bin").symlink_to(outside)
        assert incomplete_reason(path) == f"step-{step}: manifest.json entry {rel!r} points outside the checkpoint"
    assert find_latest(root) is None


def test_symlink_inside_the_checkpoint_is_followed(tmp_path: Path) -> None:
    """A link to a shard within the same checkpoint is fine: nothing outside is vouched for."""
    path = make_ckpt(tmp_path, "step-5", manifest={"files": {"model-0.pt": 4096, "alias.pt": 4096}})
    (path / "alias.pt").symlink_to("model-0.pt")
    assert find_latest(tmp_path) == Checkpoint(path, 5)


STEP_NAMES = [
    ("step-40", 40), ("step_40", 40), ("step40", 40), ("ckpt-40", 40), ("checkpoint-40", 40),
    ("checkpoint_40", 40), ("global_step40", 40), ("iter_0000040", 40), ("step-0", 0),
    ("latest", None), ("step-40.tmp", None), ("step-", None), ("steps-40", None), ("step 40", None),
    ("step-40;rm -rf", None), ("tmp-step-40", None), ("step-４0", None), ("model-40", None), ("step--40", None),
]


@pytest.mark.parametrize(("name", "step"), STEP_NAMES)
def test_step_names(name: str, step: int | None) -> None:
    """The trainers' directory conventions give their trailing step; anything else is not a checkpoint name."""
    assert parse_step(name) == step


def test_non_step_names_are_ignored(tmp_path: Path) -> None:
    """Complete-looking directories without a step name (``latest``, temp dirs) and plain files are never chosen."""
    for name in ("latest", "step-900.tmp", "best", "tmp-step-999"):
        make_ckpt(tmp_path, name, manifest={"files": {"model-0.pt": 4096}})
    (tmp_path / "step-500").write_text("a file, not a directory")
    make_ckpt(tmp_path, "iter_0000040")
    assert find_latest(tmp_path) == Checkpoint(tmp_path / "iter_0000040", 40)
    assert incomplete_reason(tmp_path / "latest") == "latest: name carries no step number"


def test_equal_steps_prefer_the_later_mtime(tmp_path: Path) -> None:
    """Two complete checkpoints of one step (``step-40``, ``step_40``): the later-modified one wins."""
    older, newer = make_ckpt(tmp_path, "step_40"), make_ckpt(tmp_path, "step-40")
    os.utime(older, (2_000_000_000, 2_000_000_000))
    os.utime(newer, (1_000_000_000, 1_000_000_000))
    assert find_latest(tmp_path) == Checkpoint(older, 40)


def test_empty_or_missing_directory_gives_none(tmp_path: Path) -> None:
    """No checkpoint yet (empty or not created) is None, not an error: it is a first attempt."""
    assert find_latest(tmp_path) is None
    assert find_latest(tmp_path / "not-yet") is None


def test_unlistable_directory_raises_input_error(tmp_path: Path) -> None:
    """A checkpoint path that cannot be listed raises InputError naming it, rather than silently restarting."""
    not_a_dir = tmp_path / "ckpts"
    not_a_dir.write_text("")
    with pytest.raises(InputError) as info:
        find_latest(not_a_dir)
    assert str(info.value) == f"cannot read {str(not_a_dir)!r}: Not a directory"


HOSTILE = ["with space", "quote'\"", "semi;colon", "nœud-ünï", "$(reboot)"]


def test_write_manifest_round_trips(tmp_path: Path) -> None:
    """write_manifest lists every shard (nested, hostile names) but itself; find_latest then accepts the checkpoint."""
    root = tmp_path / "run ck'pts"
    shards = {**SHARDS, **{f"{name}/{name}.pt": name.encode() * 3 for name in HOSTILE}}
    path = make_ckpt(root, "checkpoint-12", shards, manifest=None)
    assert find_latest(root) is None
    manifest = write_manifest(path, 12)
    assert manifest == path / "manifest.json"
    assert json.loads(manifest.read_text()) == {"step": 12, "files": {rel: len(data) for rel, data in shards.items()}}
    assert find_latest(root) == Checkpoint(path, 12)
    write_manifest(path, 12)  # rewriting never lists the manifest or a leftover temp file
    assert sorted(os.listdir(path)) == sorted({rel.split("/")[0] for rel in shards} | {"manifest.json"})
    (path / "model-0.pt").write_bytes(b"")
    assert find_latest(root) is None


def test_reasons_stay_on_one_line(tmp_path: Path) -> None:
    """A shard name holding a newline is quoted in the reason, so a postmortem line is never split."""
    path = make_ckpt(tmp_path, "step-8", manifest={"files": {"evil\nname.pt": 1}})
    assert incomplete_reason(path) == "step-8: shard 'evil\\nname.pt' is missing"


def test_write_manifest_skips_symlinks(tmp_path: Path) -> None:
    """Only regular files are listed: a link is not a shard the trainer wrote."""
    path = make_ckpt(tmp_path, "step-3", {"model-0.pt": b"abc"}, manifest=None)
    (path / "link.pt").symlink_to(tmp_path)
    write_manifest(path, 3)
    assert json.loads((path / "manifest.json").read_text())["files"] == {"model-0.pt": 3}


def test_written_since_reads_the_new_checkpoints_and_says_when_it_cannot_list(tmp_path: Path) -> None:
    """The run's timeline: complete checkpoints above a step and written since a time; a missing directory is none
    yet, one that cannot be listed (here a file) is an InputError, never a silent empty answer."""
    assert written_since(tmp_path / "nothing-yet", above_step=None, since_s=0.0) == []
    for step in (5, 10):
        (tmp_path / f"step-{step}").mkdir()
        (tmp_path / f"step-{step}" / "shard0").write_bytes(b"w" * 8)
        write_manifest(tmp_path / f"step-{step}", step)
    found = written_since(tmp_path, above_step=5, since_s=0.0)
    assert [s for s, _ in found] == [10]
    (tmp_path / "plain").write_text("x")
    with pytest.raises(InputError):
        written_since(tmp_path / "plain", above_step=None, since_s=0.0)
