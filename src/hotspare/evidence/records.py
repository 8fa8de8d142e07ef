"""Evidence records: what a scan found, kept first-occurrence-with-count so
memory stays bounded however many ranks repeat a line."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hotspare.evidence.patterns import HostMeaning, Role
from hotspare.failures import FailureClass
from hotspare.hosts import Host

#: Distinct (pattern, host) records kept; beyond this only counts grow.
MAX_RECORDS = 20_000


@dataclass(frozen=True, slots=True)
class Evidence:
    """A matched line: where, which pattern, what it says, which host it names."""

    line: int
    pattern: str
    role: Role
    failure_class: FailureClass | None
    host: Host | None
    host_text: str | None
    text: str
    #: How many lines matched the same pattern naming the same host.
    count: int = 1
    #: What the line says about the host it names (the pattern's ``host_means``).
    host_means: HostMeaning = HostMeaning.MENTION

    @property
    def host_invalid(self) -> bool:
        """The pattern captured a host, but the text is not a usable host name."""
        return self.host_text is not None and self.host is None


@dataclass(frozen=True, slots=True)
class Progress:
    """The first and last progress lines seen (``step=N``, ``iter=N``)."""

    first_line: int
    last_line: int
    last_text: str
    last_step: int | None


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Everything one input yielded."""

    evidence: tuple[Evidence, ...]
    lines: int
    bytes_read: int
    progress: Progress | None = None
    truncated_lines: int = 0
    dropped_records: int = 0


@dataclass(slots=True)
class Records:
    """First occurrence of each (pattern, host), with counts; bounded."""

    first: dict[tuple[str, str | None], Evidence] = field(default_factory=dict)
    counts: dict[tuple[str, str | None], int] = field(default_factory=dict)
    dropped: int = 0
    #: The keys first recorded at each (pattern, line), so a retraction costs one look-up.
    at_line: dict[tuple[str, int], list[tuple[str, str | None]]] = field(default_factory=dict)

    def add(self, ev: Evidence) -> None:
        key = (ev.pattern, ev.host.name if ev.host else ev.host_text)
        if key in self.first:
            self.counts[key] += 1
        elif len(self.first) < MAX_RECORDS:
            self.first[key] = ev
            self.counts[key] = 1
            self.at_line.setdefault((ev.pattern, ev.line), []).append(key)
        else:
            self.dropped += 1

    def bump(self, key: tuple[str, str | None]) -> bool:
        """Count one more line for ``key`` if it is already kept (True), else change nothing (False)."""
        if key in self.counts:
            self.counts[key] += 1
            return True
        return False

    def bump_all(self, pattern: str, named: list[tuple[Host | None, str | None]]) -> bool:
        """:meth:`bump` for each (host, host text) a line names, only when every one is already kept."""
        keys = [(pattern, host.name if host else text) for host, text in named]
        if not all(key in self.counts for key in keys):
            return False
        for key in keys:
            self.counts[key] += 1
        return True

    def retract(self, pattern: str, line: int) -> None:
        """Forget what ``pattern`` recorded first at ``line`` (a fragment of a rejoined line), when that was
        its only occurrence; a record seen again elsewhere stays."""
        for key in self.at_line.pop((pattern, line), []):
            if self.counts.get(key) == 1:
                del self.first[key], self.counts[key]

    def result(self) -> tuple[Evidence, ...]:
        out = [replace(ev, count=self.counts[key]) for key, ev in self.first.items()]
        return tuple(sorted(out, key=lambda e: e.line))
