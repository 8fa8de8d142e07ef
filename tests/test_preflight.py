"""Preflight: a launch is refused, with one actionable line, when the disk or any Lustre OST lacks room."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from hotspare.act.preflight import GIB, OstUsage, check_free_space, default_lfs, parse_lfs_df
from hotspare.errors import EXIT_USAGE, PreflightError

TIB = 1 << 40

# The seed postmortem's table, as pasted there (mount path dropped, annotations after the index).
SEED_H = """\
tegu-OST0000_UUID   581.4T  35.4T  540.2T   7% [OST:0]
tegu-OST0001_UUID   581.4T  30.8T  544.7T   6% [OST:1]
tegu-OST0002_UUID    25.2T  24.7T   254.7G 100% [OST:2]   <--
tegu-OST0003_UUID    25.2T  24.6T   398.0G  99% [OST:3]   <--
"""

# The same filesystem as real `lfs df -h` prints it: header, MDTs, mount path glued to the index, summary.
REAL_H = """\
UUID                       bytes        Used   Available Use% Mounted on
tegu-MDT0000_UUID          11.6T       42.1G       11.5T   1% /lus/tegu[MDT:0]
tegu-MDT0001_UUID          11.6T       40.0G       11.5T   1% /lus/tegu[MDT:1]
tegu-OST0000_UUID         581.4T       35.4T      540.2T   7% /lus/tegu[OST:0]
tegu-OST0001_UUID         581.4T       30.8T      544.7T   6% /lus/tegu[OST:1]
tegu-OST0002_UUID          25.2T       24.7T      254.7G 100% /lus/tegu[OST:2]
tegu-OST0003_UUID          25.2T       24.6T      398.0G  99% /lus/tegu[OST:3]
tegu-OST0004_UUID          : inactive device

filesystem_summary:         1.2P      115.5T        1.1P  10% /lus/tegu
"""

# Plain `lfs df`: KiB columns (header says 1K-blocks).
REAL_KIB = """\
UUID                   1K-blocks        Used   Available Use% Mounted on
tegu-MDT0000_UUID     12455405568    44145664 12348021760   1% /lus/tegu[MDT:0]
tegu-OST0000_UUID   624271982182  38010204979 580036236083   7% /lus/tegu[OST:0]
tegu-OST0001_UUID   624271982182  33071115059 584867574784   6% /lus/tegu[OST:1]
tegu-OST0002_UUID    27058293964  26521423052   267072307 100% /lus/tegu[OST:2]
tegu-OST0003_UUID    27058293964  26414048870   417333248  99% /lus/tegu[OST:3]

filesystem_summary:  1302660552292 124016791960 1165454356614  10% /lus/tegu
"""


def human(value: float, unit: int) -> int:
    return round(value * unit)


SEED_OSTS = [
    OstUsage("tegu-OST0000", human(581.4, TIB), human(35.4, TIB), human(540.2, TIB), 7),
    OstUsage("tegu-OST0001", human(581.4, TIB), human(30.8, TIB), human(544.7, TIB), 6),
    OstUsage("tegu-OST0002", human(25.2, TIB), human(24.7, TIB), human(254.7, GIB), 100),
    OstUsage("tegu-OST0003", human(25.2, TIB), human(24.6, TIB), human(398.0, GIB), 99),
]


@pytest.mark.parametrize("text", [SEED_H, REAL_H], ids=["as-pasted", "real"])
def test_parse_human_table(text: str) -> None:
    """`lfs df -h` OST rows parse to bytes (binary units), with or without the mount path; MDTs, inactive OSTs and the summary are skipped."""
    assert parse_lfs_df(text) == SEED_OSTS


def test_parse_kib_table() -> None:
    """Plain `lfs df` counts KiB: each column is multiplied by 1024."""
    osts = parse_lfs_df(REAL_KIB)
    assert [o.name for o in osts] == [f"tegu-OST000{i}" for i in range(4)]
    assert osts[2] == OstUsage("tegu-OST0002", 27058293964 * 1024, 26521423052 * 1024, 267072307 * 1024, 100)


def test_bare_numbers_in_a_human_table_are_bytes() -> None:
    """`lfs df -h` prints values under 1 KiB without a suffix, in bytes (an empty OST's Used is `0`)."""
    text = "fs-OST000a_UUID  1.0T  512  1.0T  0% /fs[OST:10]\n"
    assert parse_lfs_df(text) == [OstUsage("fs-OST000a", TIB, 512, TIB, 0)]


@pytest.mark.parametrize("text", ["", "lfs: /tmp is not a Lustre filesystem\n", "filesystem_summary: 1.2P 116T 1.1P 10% /lus/tegu\n"])
def test_parse_nothing_useful(text: str) -> None:
    """Output with no OST rows gives no OSTs, never an exception."""
    assert parse_lfs_df(text) == []


@pytest.fixture
def roomy_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """statvfs reports 1 PiB free, so only the OST check can refuse."""
    monkeypatch.setattr(os, "statvfs", lambda _path: SimpleNamespace(f_bavail=1 << 38, f_frsize=4096))


def test_short_disk_raises_one_line(tmp_path: Path) -> None:
    """statvfs below the minimum refuses the launch with one line: the path, free and required GiB, and the fix."""
    with pytest.raises(PreflightError) as info:
        check_free_space(tmp_path, 1e9)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{str(tmp_path)!r}: ")
    assert message.endswith(" GiB free, 1000000000 GiB required; free space or lower --min-free-gb")
    assert info.value.exit_code == EXIT_USAGE


def test_short_disk_message_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A not-yet-created output path is measured at its nearest existing parent, and both are named."""
    monkeypatch.setattr(os, "statvfs", lambda _path: SimpleNamespace(f_bavail=5 * GIB // 4096, f_frsize=4096))
    target = tmp_path / "out dir;x" / "ckpt"
    with pytest.raises(PreflightError) as info:
        check_free_space(target, 10)
    assert str(info.value) == (
        f"{str(target)!r} (measured at {str(tmp_path)!r}): 5.0 GiB free, 10 GiB required; free space or lower --min-free-gb"
    )


SEED_CASES = [
    (300, "1 of 4 OSTs under 300 GiB free: tegu-OST0002 (254.7 GiB free, 100% used)"),
    (500, "2 of 4 OSTs under 500 GiB free: tegu-OST0002 (254.7 GiB free, 100% used), tegu-OST0003 (398.0 GiB free, 99% used)"),
]


@pytest.mark.usefixtures("roomy_disk")
@pytest.mark.parametrize(("min_free_gb", "listed"), SEED_CASES)
@pytest.mark.parametrize("table", [SEED_H, REAL_H, REAL_KIB], ids=["as-pasted", "real-h", "real-kib"])
def test_full_osts_refuse_the_launch(tmp_path: Path, min_free_gb: float, listed: str, table: str) -> None:
    """The seed's case: a filesystem 10 % full whose small OSTs are full is refused, naming each short OST and the stripe fix."""
    seen: list[Path] = []

    def lfs(path: Path) -> str:
        seen.append(path)
        return table

    with pytest.raises(PreflightError) as info:
        check_free_space(tmp_path, min_free_gb, lfs=lfs)
    assert seen == [tmp_path]
    message = str(info.value)
    assert "\n" not in message
    assert message == (
        f"{str(tmp_path)!r}: {listed}; a single-stripe file landing there fails with ENOSPC: "
        "stripe wider (lfs setstripe -c -1 on the output directory) or free space on those OSTs"
    )


@pytest.mark.usefixtures("roomy_disk")
@pytest.mark.parametrize(("min_free_gb", "lfs_text"), [(200, SEED_H), (200, REAL_KIB), (10**6, None), (10**6, ""), (0, SEED_H)])
def test_passes_when_there_is_room(tmp_path: Path, min_free_gb: float, lfs_text: str | None) -> None:
    """Enough room everywhere, or no Lustre to ask (None/empty), passes silently."""
    check_free_space(tmp_path, min_free_gb, lfs=lambda _p: lfs_text)


def test_real_disk_passes_a_zero_minimum(tmp_path: Path) -> None:
    """The real statvfs path with a zero minimum never refuses (and without lfs never asks it)."""
    check_free_space(str(tmp_path), 0)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_minimum_names_the_option(tmp_path: Path, bad: float) -> None:
    """A negative or non-finite minimum is a bad setting, reported with the option to fix."""
    with pytest.raises(PreflightError, match="--min-free-gb must be a number >= 0"):
        check_free_space(tmp_path, bad)


def test_default_lfs_is_none_without_lustre(tmp_path: Path) -> None:
    """Where `lfs` is not installed (or the path is not Lustre) default_lfs gives None, so the OST check is skipped."""
    assert default_lfs(tmp_path) is None
