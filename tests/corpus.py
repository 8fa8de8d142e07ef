"""Reading the labelled corpus files in tests/data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data"

# Template entries write variable parts as <...>; these stand-ins make them
# concrete lines (hosts chosen so the expected blame is checkable).
PLACEHOLDERS = {
    "<hostlist>": "compute[3-4]",
    "<host>": "compute7",
    "<prefix>": "compute7",
    "<jobid>": "4242",
    "<stepid>": "0",
    "<time>": "2026-11-29T09:28:02",
    "<n>": "0",
    "<slurm error text>": "Invalid job id specified",
    "<details>": "failed to read 1 block",
}


@dataclass(frozen=True)
class Case:
    expect_class: str
    expect_blamed: tuple[str, ...]
    entry: str
    line: str

    @property
    def names_failed_host(self) -> str:
        """The ezpz corpus's NAMES_FAILED_HOST field (second field of the entry)."""
        fields = self.entry.split(" | ")
        return fields[1] if len(fields) > 3 else ""


def load(name: str, line_field: int) -> list[Case]:
    cases = []
    for raw in (DATA / name).read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        expect_class, blamed, entry = raw.split(" | ", 2)
        text = entry.split(" | ", line_field + 1)[line_field] if line_field else entry.split(" | ", 1)[0]
        for key, value in PLACEHOLDERS.items():
            text = text.replace(key, value)
        hosts = tuple(h for h in blamed.split(",") if h != "-")
        cases.append(Case(expect_class, hosts, entry, text.replace("\\x1b", "\x1b")))
    return cases
