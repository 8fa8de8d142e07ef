"""Bytes to evidence.

The scanner streams input of any size in bounded memory: it works on blocks
of complete lines, treats ``\\r`` as a segment break (progress bars redraw a
line many times), drops NULs, and reads bytes as Latin-1 so invalid UTF-8
cannot raise. Escape-tolerant prefilters (linear time, see
:mod:`hotspare.evidence.patterns.relax`) find candidate lines in a whole raw block,
and which patterns each may match (:mod:`hotspare.evidence.multi`: Hyperscan where it
imports, else one RE2 prefilter); only those lines are stripped of terminal escapes
(they sit inside tokens, e.g. ``\\x1b[36miter\\x1b[0m=42``) and matched exactly, with
RE2. A line longer than ``max_line_bytes`` is matched on its head only and the rest
skipped, so a 100 MB line costs one bounded match. Blocks are searched on helper
threads (:data:`SEARCH_THREADS`) while this one reads and records.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import stat
import threading
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Literal

from hotspare.errors import InputError
from hotspare.evidence.multi import Candidate, Engine, KeyedLines, line_finder, re2_lines
from hotspare.evidence.naming import (
    ANONYMOUS,
    TEXT_CHARS,
    line_evidence,
    make_record,
    named_hosts,
    prefix_host,
    shown,
    takes_prefix,
)
from hotspare.evidence.patterns import LAST_RESORT, Pattern, PatternSet, Role, build_set, load_patterns
from hotspare.evidence.records import LAST_KEPT, Evidence, Progress, Records, ScanResult
from hotspare.hosts import Host

#: Narrowest terminal width accepted for rejoining wrapped lines.
MIN_WRAP_WIDTH = 20
#: Lines that must end exactly at the widest width before it counts as a wrap.
MIN_WRAPPED_LINES = 5

#: Input up to this size is read as a paste too: lines wrapped at a terminal or mail width are rejoined
#: (see :meth:`Scanner._paste_unwrap`); beyond it only an explicit or detected ``wrap_width`` is used.
PASTE_BYTES = 1 << 20
#: How much of the input's start and end :attr:`ScanResult.sample` keeps: a paste or a job's tail whole, a big
#: log's opening and its last lines, where it says how it ended.
SAMPLE_HEAD = 8 << 10
SAMPLE_TAIL = 24 << 10
#: Widths pastes are wrapped at (terminals, mail, Markdown renderers); a line exactly this wide was cut.
PASTE_WIDTHS = frozenset({72, 80, 100, 120, 132})
#: Shortest line taken to be a soft (word) wrap of a longer one.
MIN_SOFT_WRAP = 40
#: Most pieces one wrapped line is rejoined from.
MAX_WRAP_PIECES = 4
#: A mail reply's quote marks at the start of a line ('> ', '> > ', '>>').
_QUOTE = re.compile(rb"[ \t]*>(?:[ \t]*>)*[ \t]?")
#: How a logger or a collector opens each line it writes: a date and time (ISO, a CI runner's, syslog's), a time of
#: day, a bracketed tag ('[rank3]:', '[2024-05-01 12:00:00]', '[pod/x/y]'), behind a quote's marks or an indent.
#: Narrower than LINE_PREFIX on purpose: its host, level and gutter items are words a program's line opens with too.
_STAMP = re.compile(rb"[ \t>]*(?:\[[^\]\n]{1,80}\]|[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}[0-9.,]*Z?"
                    rb"|[A-Z][a-z]{2} +[0-9]{1,2} [0-9]{2}:[0-9]{2}:[0-9]{2}|[0-9]{2}:[0-9]{2}:[0-9]{2})")
_DIGITS = bytes.maketrans(b"123456789", b"000000000")

#: Bytes read per block from a file.
BLOCK_BYTES = 1 << 20
#: Longest segment matched in full; longer ones are matched on this head.
MAX_LINE_BYTES = 64 << 10
#: Threads searching blocks of a file or stream while the calling thread reads and records (the searches
#: spend their time in Hyperscan or RE2, which release the GIL): two where there are two cores or more (the
#: calling thread waits on reads and on the searches much of the time: on 2 cores, 512 MB took 1.10 s with
#: two against 1.36 s with one), at most two (its share of the work, which holds the GIL, then bounds the
#: time; more blocks in flight would only cost memory).
SEARCH_THREADS = max(1, min(2, os.cpu_count() or 1))

# CSI (colours, cursor moves), OSC (titles, ended by BEL or ST), and the
# two-byte escapes. None of these can contain \n or \r, so a block cut at a
# line break never splits one.
_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n\r]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CR_TO_LF = bytes.maketrans(b"\r", b"\n")


class Scanner:
    """Incremental scanner: ``feed()`` bytes as they arrive, ``close()`` for the result."""

    def __init__(
        self,
        patterns: PatternSet | None = None,
        *,
        max_line_bytes: int = MAX_LINE_BYTES,
        wrap_width: int | Literal["auto"] | None = None,
        engine: Engine | None = None,
        size_hint: int | None = None,
    ) -> None:
        """``size_hint``: the whole input's size, when known (a file): input larger than :data:`PASTE_BYTES`
        is no paste, and its first megabyte is not read as one."""
        if max_line_bytes < 256:
            raise ValueError(f"max_line_bytes={max_line_bytes} is too small; use at least 256")
        if isinstance(wrap_width, int) and wrap_width < MIN_WRAP_WIDTH:
            raise ValueError(f"wrap_width={wrap_width} is not a terminal width; use {MIN_WRAP_WIDTH} or more")
        self.patterns = patterns if patterns is not None else load_patterns()
        self._finder = line_finder(self.patterns, engine)
        self.max_line_bytes = max_line_bytes
        self.wrap_width: int | None = None if wrap_width == "auto" else wrap_width
        self._detect_wrap = wrap_width == "auto"
        self._pending = b""
        self._skipping = False
        self._lines = 0
        self._bytes = 0
        self._head = b""
        self._tail = bytearray()
        self._size_hint = size_hint
        self._truncated = 0
        self._records = Records()
        self._progress: Progress | None = None
        self._wrap_prev: tuple[int, bytes] | None = None
        # Last line and host of each pattern some other pattern takes its host from.
        self._recent: dict[str, tuple[int, Host | None, str | None]] = {}
        self._sources = {ref for p in self.patterns.patterns for ref in (p.host_from, p.after) if ref}
        self._groups: dict[int, int | None] = {}
        self._plains: dict[int, bool] = {}
        self._prefix_takers: dict[int, bool] = {}
        self._hots: dict[int, _Hot] = {}
        self._last_resort = frozenset(
            i for i, p in enumerate(self.patterns.event_patterns) if p.qualname in LAST_RESORT)

    @property
    def lines(self) -> int:
        """Complete lines scanned so far."""
        return self._lines

    @property
    def progress(self) -> Progress | None:
        """The progress seen so far (for hang watchdogs)."""
        return self._progress

    def feed(self, data: bytes) -> list[Evidence]:
        """Scan ``data``; return the evidence found in the lines it completed."""
        found: list[Evidence] = []
        for block in self.blocks(data):
            self.apply(block, self.search(block), found)
        return found

    def blocks(self, data: bytes) -> Iterator[Block]:
        """Cut ``data`` (with what is pending) into prepared blocks of whole segments.

        Stage one of three: ``blocks`` and ``apply`` run in order on one thread;
        ``search`` is pure and spends its time in Hyperscan or RE2 without the
        GIL, so :func:`scan` runs it on helper threads while preparing the next.
        """
        self._bytes += len(data)
        if len(self._head) < SAMPLE_HEAD:
            self._head += data[: SAMPLE_HEAD - len(self._head)]
        self._tail += data[-SAMPLE_TAIL:]
        if len(self._tail) > 2 * SAMPLE_TAIL:  # trimmed now and then: a feed costs what it brings, not the tail
            del self._tail[:-SAMPLE_TAIL]
        if self._detect_wrap and data:
            self.wrap_width, self._detect_wrap = detect_wrap_width(self._pending + data), False
        strip = self.wrap_width is not None
        buf = self._pending + data if self._pending else data
        cut = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
        if cut >= 0:
            head, buf = buf[: cut + 1], buf[cut + 1 :]
            if self._skipping:
                head = self._end_skip(head)
            if head:
                yield _prepare(head, count_lines=True, strip=strip, small=self._small())
        if self._skipping:
            buf = b""
        elif len(buf) > self.max_line_bytes:
            self._truncated += 1
            yield _prepare(buf[: self.max_line_bytes] + b"\n", count_lines=False, strip=strip,
                           small=self._small())
            buf, self._skipping = b"", True
        self._pending = buf

    def _small(self) -> bool:
        """Whether the input so far (or the whole input, when its size is known) may be a paste."""
        return (self._bytes if self._size_hint is None else max(self._bytes, self._size_hint)) <= PASTE_BYTES

    def search(self, block: Block) -> Spans:
        """Candidate lines and progress lines of a block (pure; no scanner state)."""
        candidates = self._finder.candidates(block.text)
        newlines = _newlines(block.raw, 0, len(block.raw))
        progress = self.patterns.progress_prefilter
        first = progress.search(block.text) if progress is not None else None
        if first is None:
            return Spans(candidates, None, None, newlines)
        return Spans(candidates, first.start(), _last_candidate(progress, block.text), newlines)

    def apply(self, block: Block, spans: Spans, found: list[Evidence] | None) -> None:
        """Match the candidate lines, in order, and advance the line count; what they yield goes to ``found``
        too, unless it is None."""
        text = block.text
        counter = _LineCounter(block.raw, self._lines, spans.newlines)
        match, at = self._match_candidate, counter.at
        for start, end, ids in spans.candidates:
            raw = text[start:end]
            if b"\x1b" in raw:  # the prefilters tolerate escapes between words only: the line is checked in full
                match(_clean(raw), at(start), found, None)
            else:
                match(raw.replace(b"\x00", b"") if b"\x00" in raw else raw, at(start), found, ids)
        if self.wrap_width:
            self._unwrap(text, counter, found)
        elif block.small:
            self._paste_unwrap(text, _LineCounter(block.raw, self._lines), found)
        if spans.progress_first is not None and spans.progress_last is not None:
            self._track_progress(text, counter, spans.progress_first, spans.progress_last)
        if block.count_lines:
            self._lines = counter.at(len(block.raw)) - 1

    def close(self) -> ScanResult:
        """Scan what is left (a last line without a newline) and return the result."""
        if self._pending:
            block = _prepare(self._pending + b"\n", count_lines=True, strip=self.wrap_width is not None,
                             small=self._small())
            self.apply(block, self.search(block), None)
            self._pending = b""
        return ScanResult(
            evidence=self._records.result(),
            lines=self._lines,
            bytes_read=self._bytes,
            progress=self._progress,
            truncated_lines=self._truncated,
            dropped_records=self._records.dropped,
            sample=self._sample(),
        )

    def _sample(self) -> bytes:
        """The first :data:`SAMPLE_HEAD` and last :data:`SAMPLE_TAIL` bytes read, once each (all when fewer)."""
        tail = bytes(self._tail[-SAMPLE_TAIL:])
        overlap = len(self._head) - (self._bytes - len(tail))
        return self._head + (tail[overlap:] if overlap > 0 else tail)

    def _end_skip(self, head: bytes) -> bytes:
        """Drop the tail of an over-long line up to (not including) its first break,
        so the break is still counted, in order, by :meth:`apply`."""
        self._skipping = False
        return head[min(i for i in (head.find(b"\n"), head.find(b"\r")) if i >= 0) :]

    def _match_candidate(
        self, line: bytes, lineno: int, found: list[Evidence] | None, ids: frozenset[int] | None
    ) -> None:
        """Match a candidate line; ``ids``, when known, are the only patterns that may match it.

        Hot in a dense log (a teardown prints a line a rank). One pattern with a host to capture flagged: its
        search with captures says whether it matches. Otherwise one match of an RE2 set of those flagged says
        which match (a set's match costs a third of a search: no match object is made; see :meth:`_among`); not
        known (a line holding an escape, a block flagging too many, or the RE2 engine's): the line alone is put to
        the line finder (:meth:`_line_matches`). Only those with a host to capture are searched again. When
        nobody takes the evidence line by line (``found`` None: a whole file scanned), a line that repeats a
        record already kept only counts.
        """
        if ids is None:
            indices: Iterable[int] = self._line_matches(line)
            exact = True
        elif len(ids) > 1:
            indices, exact = self._among(ids, line), True
        else:
            indices = ids
            exact = self._hot(next(iter(ids)))[2] is None  # one with a host to capture: its search is the check
            if exact:
                indices = self._among(ids, line)
        records = self._records
        if self._last_resort:
            indices = self._yield_last_resort(indices)
        for index in indices:
            pattern, qualname, group, plain, prefixed = self._hot(index)
            plain = plain and found is None
            if exact and group is None:
                host, text = prefix_host(line, len(line)) if prefixed else ANONYMOUS
                name = host.name if host is not None else text
                if plain and records.bump((qualname, name) if name is not None or pattern.role is not Role.ROOT
                                          else records.key(qualname, Role.ROOT, None, line[:TEXT_CHARS].strip())):
                    continue
                evidence = [make_record(pattern, lineno, line, host, text)]
            else:
                match = pattern.compiled.search(line)
                if match is None:
                    continue
                if plain and (
                        records.bump(records.key(qualname, pattern.role, None, line[:TEXT_CHARS].strip()))
                        if group is None else records.bump_all(qualname, self._named(index, match, line, group))):
                    continue
                evidence = line_evidence(pattern, match, line, lineno, group)
            self._add(evidence, pattern, found)

    def _yield_last_resort(self, indices: Iterable[int]) -> Iterable[int]:
        """``indices`` without the last-resort patterns (LAST_RESORT) when any other pattern matched the line too."""
        found = list(indices)
        if len(found) > 1 and not self._last_resort.isdisjoint(found):
            return [i for i in found if i not in self._last_resort]
        return found

    def _hot(self, index: int) -> _Hot:
        """What the hot path asks of event pattern ``index``, looked up once (a dense log asks per line): the
        pattern, its name, its host group's number, whether it is plain (:meth:`_plain`) and whether it takes a
        prefix's host (:meth:`_prefixed`)."""
        hot = self._hots.get(index)
        if hot is None:
            pattern = self.patterns.event_patterns[index]
            hot = self._hots[index] = (pattern, pattern.qualname, self._host_group(index), self._plain(index),
                                       self._prefixed(index))
        return hot

    def _among(self, ids: frozenset[int], line: bytes) -> list[int]:
        """Which of the event patterns ``ids`` match ``line`` (indices, ascending).

        An RE2 set of them answers in one match a third as dear as a search, but costs milliseconds to build and
        its automaton is made by its first matches: it is built only for a combination asked for
        :data:`SUBSET_AFTER` times (a dense log's teardown lines: thousands), and kept for the pattern set, so
        the scans of many logs share it. Until then each pattern is searched (a small log asks for dozens of
        combinations, most once).
        """
        with _SUBSETS_LOCK:
            built, asked = _SUBSETS.setdefault(self.patterns, ({}, {}))
            subset = built.get(ids)
            if subset is None:
                if len(asked) >= MAX_ASKED:
                    asked.clear()
                times = asked[ids] = asked.get(ids, 0) + 1
        if subset is None:
            if times < SUBSET_AFTER:
                patterns = self.patterns.event_patterns
                return [i for i in sorted(ids) if patterns[i].compiled.search(line) is not None]
            subset = _Subset(self.patterns.event_patterns, ids)  # two threads may both build one: one is kept
            with _SUBSETS_LOCK:
                if len(built) >= MAX_SUBSETS:
                    built.clear()
                subset = built.setdefault(ids, subset)
                asked.pop(ids, None)
        return subset.match(line)

    def _line_matches(self, line: bytes) -> list[int]:
        """The event patterns (indices, ascending) matching one whole line (a rejoined one, or one whose block's
        search did not say which): the line finder flags the few that may (the RE2 set of every pattern costs
        milliseconds a line with some 800 patterns: its automaton outgrows its memory), unless the line holds
        what the finder reads differently from the patterns (an escape, a NUL) or the finder names none (RE2's,
        whose one prefilter would cost the set's time again)."""
        if isinstance(self._finder, KeyedLines) and b"\x1b" not in line and b"\x00" not in line:
            ids = self._finder.line_patterns(line)
            if ids is not None:
                return self._among(ids, line) if ids else []
        return sorted(self.patterns.event_set.Match(line) or ())  # None when nothing matches

    def _plain(self, index: int) -> bool:
        """Whether event pattern ``index`` records a line on its own (no ``after``, no ``host_from``, and no
        other pattern takes its host) and only its first line matters (not in :data:`LAST_KEPT`): then a repeat of
        a record already kept changes nothing but a count."""
        plain = self._plains.get(index)
        if plain is None:
            pattern = self.patterns.event_patterns[index]
            plain = self._plains[index] = not (pattern.after or pattern.host_from or pattern.qualname in self._sources
                                               or pattern.qualname in LAST_KEPT)
        return plain

    def _add(self, evidence: list[Evidence], pattern: Pattern, found: list[Evidence] | None) -> None:
        if pattern.after or pattern.host_from or pattern.qualname in self._sources:
            evidence = list(self._adopt_host(evidence, pattern))
        for ev in evidence:
            self._records.add(ev)
            if found is not None:
                found.append(ev)

    def _match_line(
        self, line: bytes, lineno: int, found: list[Evidence] | None, *, only_across: int | tuple[int, ...],
        whole: bytes | None = None,
    ) -> list[tuple[str, int]]:
        """Match a rejoined line, keeping only matches spanning ``only_across`` (or one of those offsets), and
        none of a pattern that already reads ``whole`` (the first piece) by itself the same way: with the same
        captures. A capture the join changes (a host name the cut split: 'on compute1' / '7') is the line's.
        With ``whole``, a match must also begin in that first piece: one that begins in a later piece is that
        piece's line, read when the rejoining starts there (recorded here, it would stand lines before its place).

        Returns ``(pattern name, match end)`` for each pattern that matched.
        """
        joins = (only_across,) if isinstance(only_across, int) else only_across
        matched: list[tuple[str, int]] = []
        for index in self._yield_last_resort(self._line_matches(line)):
            pattern = self.patterns.event_patterns[index]
            match = pattern.compiled.search(line)
            if match is None or (joins != (-1,) and not any(match.start() < j < match.end() for j in joins)):
                continue
            if whole is not None and match.start() >= joins[0]:
                continue
            if whole is not None:
                alone = pattern.compiled.search(whole)
                if alone is not None and alone.groups() == match.groups():
                    continue
            matched.append((pattern.qualname, match.end()))
            self._add(line_evidence(pattern, match, line, lineno, self._host_group(index)), pattern, found)
        return matched

    def _named(self, index: int, match: Any, line: bytes, group: int) -> list[tuple[Host | None, str | None]]:
        """The hosts a match names, as :func:`line_evidence` records them: a host group that took no part in the
        match leaves the line's prefix host, where the pattern takes one (so repeats from two nodes count apart)."""
        named = named_hosts(match, line, group, self.patterns.event_patterns[index].hostlist)
        if named == [ANONYMOUS] and self._prefixed(index):
            named = [prefix_host(line, match.start())]
        return named

    def _prefixed(self, index: int) -> bool:
        """Whether event pattern ``index``'s lines that name no host take a pdsh-style prefix's (looked up once)."""
        taken = self._prefix_takers.get(index)
        if taken is None:
            taken = self._prefix_takers[index] = takes_prefix(self.patterns.event_patterns[index])
        return taken

    def _host_group(self, index: int) -> int | None:
        """The number of event pattern ``index``'s host group (looked up once: a dense log asks per line)."""
        number = self._groups.get(index, -1)
        if number == -1:
            pattern = self.patterns.event_patterns[index]
            group = pattern.host_group.encode() if pattern.host_group else None
            number = self._groups[index] = pattern.compiled.groupindex[group] if group else None
        return number

    def _adopt_host(self, evidence: Iterable[Evidence], pattern: Pattern) -> Iterator[Evidence]:
        """Apply ``host_from`` (take the host of a line just above) and ``after``
        (count only under a heading just above)."""
        for ev in evidence:
            if pattern.after and not self._near(pattern.after, ev.line, pattern.within):
                continue
            if ev.pattern in self._sources:
                self._recent[ev.pattern] = (ev.line, ev.host, ev.host_text)
            recent = self._recent.get(pattern.host_from) if pattern.host_from else None
            if recent is not None and ev.host_text is None and 0 <= ev.line - recent[0] <= pattern.within:
                yield replace(ev, host=recent[1], host_text=recent[2])
            else:
                yield ev

    def _near(self, name: str, line: int, within: int) -> bool:
        recent = self._recent.get(name)
        return recent is not None and 0 <= line - recent[0] <= within

    def _unwrap(self, text: bytes, counter: _LineCounter, found: list[Evidence] | None) -> None:
        """Match lines a terminal wrapped at exactly ``wrap_width`` joined to the next line.

        Only matches that cross the join are new; the rest were found already.
        A line can also end at exactly that width without being wrapped, so the
        unjoined reading is kept too: with an allocation, the classifier blames
        only the reading that names one of its hosts.
        """
        width = self.wrap_width or 0
        starts = [0] + [m.end() for m in re.finditer(rb"\n", text)]
        for a, b in itertools.pairwise(starts):
            prev = self._wrap_prev
            self._wrap_prev = None
            line = text[a : b - 2] if text[b - 2 : b - 1] == b"\x00" and b - 2 >= a else text[a : b - 1]  # \r\n's NUL
            if prev is not None:
                joined = prev[1] + line
                self._match_line(joined, prev[0], found, only_across=len(prev[1]))
            if len(line) == width:
                self._wrap_prev = (counter.at(a), line)

    def _paste_unwrap(self, text: bytes, counter: _LineCounter, found: list[Evidence] | None) -> None:
        """Rejoin lines of a paste that a terminal or a mail/Markdown renderer wrapped, when no width is known.

        A line exactly one of :data:`PASTE_WIDTHS` wide was cut there (joined as is); a line of
        :data:`MIN_SOFT_WRAP` up to the widest width may have been wrapped at a space (joined with one). Only
        matches that cross a join are new, and only of patterns the first piece does not match alone: a
        line whole by itself needs no rest (a table's rows padded to one width, sinfo's or qstat's, one of
        the cut widths or not, are each a line, and the next row is not retracted as a fragment). Bounded:
        pastes are small (:data:`PASTE_BYTES`), and one line is rejoined from at most :data:`MAX_WRAP_PIECES`
        pieces.
        """
        starts = [0] + [m.end() for m in re.finditer(rb"\n", text)]
        pieces = [_clean(text[a : b - 1]) for a, b in itertools.pairwise(starts)]
        widest = max(PASTE_WIDTHS)
        for i, piece in enumerate(pieces[:-1]):
            if not MIN_SOFT_WRAP <= len(piece) <= widest:
                continue
            joined, joins, last = piece, list[int](), len(piece)
            for nxt in pieces[i + 1 : i + MAX_WRAP_PIECES]:
                if not nxt.strip() or not MIN_SOFT_WRAP <= last <= widest or _opens_alike(piece, nxt):
                    break
                # A mail reply quotes every line it wrapped: the next piece's own quote marks (the ones this
                # line opened with) are the renderer's, not the program's words.
                quote, again = _QUOTE.match(piece), _QUOTE.match(nxt)
                words = nxt[again.end():] if quote and again and _marks(again) == _marks(quote) else nxt
                # Blanks at the cut (a wrap at a space the renderer kept, a paste's padding, an indented block's
                # indent on the next piece) stand for the one space of the line as printed.
                bare, rest = joined.rstrip(b" \t"), words.lstrip(b" \t")
                blanks = len(bare) < len(joined) or len(rest) < len(nxt)
                joined = bare
                sep = b" " if blanks or last not in PASTE_WIDTHS else b""
                joins.append(len(joined) + len(sep))
                joined, last = joined + sep + rest, len(nxt)  # the piece's width as the renderer cut it
                if len(nxt) < MIN_SOFT_WRAP:
                    break
            if not joins:
                continue
            for name, end in self._match_line(joined, counter.at(starts[i]), found, only_across=tuple(joins),
                                              whole=piece):
                # The pieces the whole line's match ran into were read as lines of their own too: what the
                # same pattern made of a fragment ("0n0: rank 5 died ...") is not a second event.
                for k, join in enumerate(joins, start=1):
                    if join < end:
                        self._records.retract(name, counter.at(starts[i + k]))

    def _track_progress(self, text: bytes, counter: _LineCounter, first: int, last: tuple[int, int]) -> None:
        line = _clean(text[last[0] : last[1]])
        step = _step(self.patterns.progress_patterns, line)
        if step is None and not any(p.compiled.search(line) for p in self.patterns.progress_patterns):
            return  # the relaxed prefilter over-matched
        first_line = self._progress.first_line if self._progress else counter.at(first)
        self._progress = Progress(first_line, counter.at(last[0]), shown(line), step)


@dataclass(frozen=True, slots=True)
class Block:
    """Whole segments ready to match: ``raw`` as read (escapes kept unless the
    scanner rejoins wrapped lines, which needs visible widths), and ``text``, the
    same bytes with a lone ``\\r`` turned into ``\\n`` so every segment is a line (``\\r\\n``'s ``\\r`` into a
    NUL)."""

    raw: bytes
    text: bytes
    count_lines: bool
    #: Whether the input was still small enough, up to this block, to be a paste worth rejoining (decided when
    #: the block is made: blocks are applied after later ones were read).
    small: bool = False


@dataclass(frozen=True, slots=True)
class Spans:
    """What the prefilters found in a block: candidate lines and progress lines."""

    candidates: list[Candidate]
    progress_first: int | None
    progress_last: tuple[int, int] | None
    #: The block's line breaks (``\n`` in ``raw``), counted on the searching thread.
    newlines: int | None = None


def _prepare(raw: bytes, *, count_lines: bool, strip: bool, small: bool = False) -> Block:
    """Make a block. Escapes stay in place: the prefilters tolerate them (see
    :mod:`hotspare.evidence.patterns.relax`) and only candidate lines are cleaned."""
    raw = _as_printed(raw, whole=small, strip=strip)
    # A lone \r (a progress bar's redraw) breaks a segment; \r\n (a Windows file, a web form's paste) is one line
    # break: its \r becomes a NUL, which matching drops, so no blank segment parts the lines (rejoining, "within").
    text = raw.replace(b"\r\n", b"\x00\n").translate(_CR_TO_LF) if b"\r" in raw else raw
    return Block(raw, text, count_lines, small)


def _as_printed(raw: bytes, *, whole: bool, strip: bool) -> bytes:
    """``raw`` as the program printed it: NULs dropped; a container engine's or a journal's JSON lines unwrapped to
    their messages (``whole``: look for them in all of ``raw``, else in its head); terminal escapes removed if
    ``strip`` (then the escapes a JSON string carried too); UTF-8's curly quotes, as forums, mail archives and word
    processors turn quotes, and no-break spaces made plain; HTML's escapes of quotes, <, > and & (a log copied from a
    web page's source) undone; in a paste, colour codes that lost their ESC byte dropped; then a JSON array of output
    lines read as its lines."""
    raw = raw.replace(b"\x00", b"") if b"\x00" in raw else raw
    raw = _json_messages(raw, whole=whole)
    raw = _clean(raw) if strip else raw
    raw = _drop_residue(raw) if whole else raw
    return _json_array_lines(_unescape_html(_plain_quotes(_plain_spaces(raw))), whole=whole)


#: Colour codes a copy kept without their ESC byte (a web page, an issue form or a notebook's committed output drops
#: it: "[0;31mKeyboardInterrupt[0m: ") or showed in caret notation, as a pager or ``cat -v`` does ("^[[36m"). Bare
#: residue is taken for a colour only as SGR ("[...m": other CSI finals are too like ordinary bracketed text) and
#: only in a paste that also holds a reset ("[0m", "[m", "[39m"), which every coloured span ends with; the caret
#: form is unambiguous, so every CSI sequence in it goes, as in syslog's octal form ("#033[0m", rsyslog's escape of
#: a control character). Only a paste is read so: a program writing a log keeps its ESC bytes.
_RESIDUE = re.compile(rb"(?:\^\[|#033)\[[0-?]*[ -/]*[@-~]|(?<!\x1b)\[(?:[0-9]{1,3}(?:;[0-9]{1,3})*m(?!\])|m(?![\w\]]))")
_RESETS = (b"[0m", b"[m", b"[39m", b"^[[", b"#033[")


def _drop_residue(raw: bytes) -> bytes:
    if any(reset in raw for reset in _RESETS):
        return _RESIDUE.sub(b"", raw)
    return raw


#: Curly quotes (U+2018, U+2019, U+201C, U+201D, in UTF-8) and the ASCII quote each stands for: a program printed
#: the ASCII one ("instance of 'std::bad_alloc'", "No module named 'x'"); a forum or a mail archive curled it.
_CURLY_QUOTE = re.compile(rb"\xe2\x80([\x98\x99\x9c\x9d])")
_CURLY_PLAIN = {b"\x98": b"'", b"\x99": b"'", b"\x9c": b'"', b"\x9d": b'"'}
#: The escapes a web page's source writes for the characters programs print in their messages ("&lt;stderr&gt;",
#: "instance of &#39;std::bad_alloc&#39;"), undone in one pass (so "&amp;lt;" is "&lt;", as the page meant).
_HTML_ESCAPE = re.compile(rb"&(quot|#39|#x27|lt|gt|amp);")
_HTML_PLAIN = {b"quot": b'"', b"#39": b"'", b"#x27": b"'", b"lt": b"<", b"gt": b">", b"amp": b"&"}


#: A line that is a JSON object carrying a program's output line as a string: Docker's json-file log driver
#: (``{"log":"...\\n","stream":"stderr","time":"..."}``, moby daemon/logger/jsonfilelog: one object per line the
#: container wrote, its newline kept inside the string, written by Go's encoding/json, which escapes <, > and & as
#: \\u003c, \\u003e, \\u0026) and ``journalctl -o json``'s ``"MESSAGE"`` (the rest are the journal's own fields).
#: A JSON logger's ``"msg"`` is not taken: it is one field of a record whose others hold the error (NVIDIA
#: NVSentinel's health events), and the unanchored patterns read the record as it is. Group 1 is the string's
#: text, still escaped.
_JSON_LINE = re.compile(
    rb'^[ \t>]*\{[^\n]*?"(?:log|MESSAGE)" ?: ?"((?:[^"\\\n]|\\[^\n])*)"[^\n]*?\}[ \t\r]*$', re.MULTILINE)
#: How far into a large block the look for JSON lines goes: a log written as JSON lines is JSON from its first line
#: (a pasted excerpt, small, is searched whole).
_JSON_HEAD = 4096


def _json_messages(raw: bytes, *, whole: bool) -> bytes:
    """Each JSON log line of ``raw`` replaced by the message it carries, unescaped, one line for one line: the
    message's own line break goes (the JSON line's is kept), a break inside it becomes a ``\\r``, so line numbers
    stay the file's. A line that is not such an object is kept as it is (a JSON array of output lines written one
    string to a line: :func:`_json_array_lines`)."""
    if b'":' in (raw if whole else raw[:_JSON_HEAD]):
        raw = _JSON_LINE.sub(_json_message, raw)
    return raw


def _json_array_lines(raw: bytes, *, whole: bool) -> bytes:
    """Each line of ``raw`` that is one string of a JSON array of output lines (:data:`_JSON_ARRAY_LINE`) replaced
    by the line it holds, when the block's head holds several. Read after a paste's quotes and HTML escapes are made
    plain (a forum curls the array's quotes as it curls any), and with a CR LF line end as with a LF one."""
    head = raw if whole else raw[:_JSON_HEAD]
    if b'",' in head and len(_JSON_ARRAY_LINE.findall(head, 0, 65536)) >= _JSON_ARRAY_LINES:
        return _JSON_ARRAY_LINE.sub(_json_message, raw)
    return raw


#: A program's output kept as a JSON array of its lines, pretty-printed one string to a line ('"=   KILLED BY
#: SIGNAL: 9 (Killed)",'): what a tool that collects a job's log into a JSON record writes (the Flux and metrics
#: operators' result files, Python's json.dump(..., indent=4) of a list of lines) and a notebook's raw source keeps
#: for a cell's output ("text": [ then '"line\\n",' one a line). The string is the line the program printed. Read
#: only in a block with several such lines near its head: a log's one quoted line is the program's own quoting.
_JSON_ARRAY_LINE = re.compile(rb'^[ \t]*"((?:[^"\\\n]|\\[^\n])*)",?[ \t\r]*$', re.MULTILINE)
_JSON_ARRAY_LINES = 3


def _json_message(line: re.Match[bytes]) -> bytes:
    try:
        text: str = json.loads(b'"' + line.group(1) + b'"')
    except ValueError:  # not a JSON string after all (a bad escape, invalid UTF-8): the line as it stands
        return line.group()
    message = text.encode("utf-8", "replace")
    message = message[:-1] if message.endswith(b"\n") else message
    message = message[:-1] if message.endswith(b"\r") else message
    return message.replace(b"\n", b"\r")


def _plain_quotes(raw: bytes) -> bytes:
    # Gate on a byte only a curly quote's last byte (or another non-ASCII character's) is: a byte search is a
    # hundredth of a pattern search, and a log's other UTF-8 (a progress bar's blocks) holds none of them.
    if b"\x99" in raw or b"\x98" in raw or b"\x9d" in raw or b"\x9c" in raw:
        return _CURLY_QUOTE.sub(lambda m: _CURLY_PLAIN[m.group(1)], raw)
    return raw


def _plain_spaces(raw: bytes) -> bytes:
    # A no-break space (U+00A0, in UTF-8 C2 A0) where the program printed a space: a web page's rendering of a
    # log (a forum post, a mail archive, a wiki) keeps the line but not always its spaces.
    # Gate on the lone byte first: a one-byte search is memchr, many times faster than a two-byte one.
    return raw.replace(b"\xc2\xa0", b" ") if b"\xa0" in raw and b"\xc2\xa0" in raw else raw


def _unescape_html(raw: bytes) -> bytes:
    if b"&" in raw and b";" in raw:
        return _HTML_ESCAPE.sub(lambda m: _HTML_PLAIN[m.group(1)], raw)
    return raw


def detect_wrap_width(sample: bytes) -> int | None:
    """The terminal width a capture was wrapped at, if ``sample`` shows one.

    A terminal capture (``script``, ``tmux capture-pane``) never has a line
    wider than the terminal, and every long line ends exactly at that width;
    ordinary logs have one widest line, not many. So: the widest visible line
    length, if at least MIN_WRAPPED_LINES lines (and 2 % of them) reach it.
    """
    visible = _as_printed(sample, whole=False, strip=True)
    lines = visible.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")[:-1]
    if not lines:
        return None
    widths = [len(line.rstrip(b" ")) for line in lines]
    widest = max(widths)
    at_widest = widths.count(widest)
    if widest < MIN_WRAP_WIDTH or at_widest < max(MIN_WRAPPED_LINES, len(lines) // 50):
        return None
    return widest


def _opens_alike(line: bytes, nxt: bytes) -> bool:
    """Whether ``nxt`` opens as ``line`` does, with a logger's stamp or tag of the same shape (digits aside: each
    line's own time, rank or counter): a line of its own, not the rest of a wrapped one. A renderer's wrap leaves no
    stamp on the piece it cut off; a host at the end of one line is not glued to the date of the next."""
    stamp, again = _STAMP.match(line), _STAMP.match(nxt)
    return (stamp is not None and again is not None
            and stamp.group().translate(_DIGITS) == again.group().translate(_DIGITS))


def _marks(quote: re.Match[bytes]) -> bytes:
    """A quote's marks without its blanks: '> > ' and '>>' are the same depth."""
    return quote.group().replace(b" ", b"").replace(b"\t", b"")


def _clean(line: bytes) -> bytes:
    """Bytes as a terminal shows them: escapes and NULs removed."""
    if b"\x1b" in line:
        line = _ANSI.sub(b"", line)
    return line.replace(b"\x00", b"") if b"\x00" in line else line


class _LineCounter:
    """Line numbers for offsets visited in increasing order (counts ``\n`` once). With the block's total
    known, an offset nearer the end is counted back from there (the last progress line of a block is)."""

    def __init__(self, raw: bytes, base: int, total: int | None = None) -> None:
        self._raw = raw
        self._offset = 0
        self._first = self._line = base + 1
        self._total = total

    def at(self, offset: int) -> int:
        last = self._offset
        if last <= offset < last + 4096:  # the next candidate of a dense block: the commonest call
            self._line += self._raw.count(b"\n", last, offset)
            self._offset = offset
            return self._line
        if offset >= self._offset:
            if self._total is not None and len(self._raw) - offset < offset - self._offset:
                self._line = self._first + self._total - _newlines(self._raw, offset, len(self._raw))
            else:
                self._line += _newlines(self._raw, self._offset, offset)
            self._offset = offset
            return self._line
        return self._line - self._raw.count(b"\n", offset, self._offset)


def _newlines(raw: bytes, start: int, end: int) -> int:
    """``raw.count(b"\\n", start, end)``, faster on long spans: count() tests byte by byte (2 GB/s here),
    replace() jumps between newlines with memchr (4 GB/s on log lines, a copy included)."""
    if end - start < 1 << 16:
        return raw.count(b"\n", start, end)
    span = raw if start == 0 and end >= len(raw) else raw[start:end]
    return len(span) - len(span.replace(b"\n", b""))


def _last_candidate(prefilter: Any, text: bytes) -> tuple[int, int]:
    """The last matching line, searching back from the end in growing windows."""
    window = 4096
    while True:
        lo = max(0, len(text) - window)
        if lo:
            lo = text.find(b"\n", lo) + 1 or len(text)
        spans = list(re2_lines(prefilter, text[lo:]))
        if spans:
            return lo + spans[-1][0], lo + spans[-1][1]
        if lo == 0:
            raise AssertionError("unreachable: the caller saw a match")
        window *= 8


def _step(patterns: Iterable[Pattern], line: bytes) -> int | None:
    for pattern in patterns:
        match = pattern.compiled.search(line)
        if match is not None and b"step" in pattern.compiled.groupindex:
            value = match.group(b"step")
            if value is not None and value.isdigit():
                return int(value)
    return None


#: An event pattern as the hot path needs it: see :meth:`Scanner._hot`.
_Hot = tuple[Pattern, str, int | None, bool, bool]

#: Most pattern subsets kept per pattern set (a log flags a few dozen combinations; this bounds a pathological
#: run of them, and the memory their automata take).
MAX_SUBSETS = 256
#: Most combinations counted while not yet worth a set (see :data:`SUBSET_AFTER`).
MAX_ASKED = 4096

#: How often a combination of flagged patterns is asked for before an RE2 set of them is built (see
#: :meth:`Scanner._among`).
SUBSET_AFTER = 8

#: For each pattern set, the subsets built and how often each other combination was asked for so far (see
#: :meth:`Scanner._among`), shared by its scanners and their threads.
_SUBSETS: weakref.WeakKeyDictionary[PatternSet, tuple[dict[frozenset[int], _Subset], dict[frozenset[int], int]]] = (
    weakref.WeakKeyDictionary())
_SUBSETS_LOCK = threading.Lock()


class _Subset:
    """An RE2 set over some of the event patterns, answering with their indices in the pattern set."""

    def __init__(self, patterns: Sequence[Pattern], ids: frozenset[int]) -> None:
        self._ids = sorted(ids)
        self._set = build_set([patterns[i] for i in self._ids])

    def match(self, line: bytes) -> list[int]:
        """The indices (in the pattern set, ascending) of the patterns of this set that match ``line``."""
        ids = self._ids
        return sorted(ids[i] for i in self._set.Match(line) or ())


def scan(
    source: str | Path | bytes | IO[bytes],
    patterns: PatternSet | None = None,
    *,
    wrap_width: int | Literal["auto"] | None = None,
    engine: Engine | None = None,
) -> ScanResult:
    """Scan a whole input: a path, raw bytes, or a binary stream (e.g. ``sys.stdin.buffer``).

    ``engine`` picks how candidate lines are found (see :func:`hotspare.evidence.multi.line_finder`);
    the evidence is the same either way.
    """
    if isinstance(source, bytes):
        scanner = Scanner(patterns, wrap_width=wrap_width, engine=engine, size_hint=len(source))
        scanner.feed(source)
        return scanner.close()
    if isinstance(source, (str, Path)):
        try:
            with Path(source).open("rb") as stream:
                info = os.fstat(stream.fileno())
                size = info.st_size if stat.S_ISREG(info.st_mode) else None  # a FIFO says 0
                return _scan_stream(Scanner(patterns, wrap_width=wrap_width, engine=engine, size_hint=size), stream)
        except OSError as exc:
            raise InputError(str(source), exc.strerror or str(exc)) from exc
    return _scan_stream(Scanner(patterns, wrap_width=wrap_width, engine=engine), source)


#: Inputs at least this big are worth :func:`keep_freed_blocks` (a ctypes call: milliseconds at start-up).
BIG_INPUT_BYTES = 64 << 20


@functools.cache
def keep_freed_blocks() -> bool:
    """Ask glibc's malloc to serve the scanner's megabyte blocks from its heap and keep freed ones for reuse,
    rather than map and unmap each (the search threads' arenas returned their freed blocks to the kernel:
    33,000 page faults per 512 MB scanned, against 500 with this, and a tenth of a second of system time).
    One heap for every thread, too: each search thread's own arena kept the pages it freed (Hyperscan's compiler
    runs there on a first run, for the forms a log flags), which the other threads could not reuse: a cold first
    run peaked at 63 MB with an arena a thread, 57 MB with one (medians of runs on the benchmark's log), at the
    same speed (the threads allocate little outside the GIL). Call it before the search threads start.
    Process-wide, so for processes that are the scanner (the CLI), not for a library's host. False where the
    C library has no ``mallopt``."""
    import ctypes  # noqa: PLC0415 -- only for big inputs

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8
    return (bool(mallopt(m_mmap_threshold, 4 * BLOCK_BYTES)) and bool(mallopt(m_trim_threshold, 32 * BLOCK_BYTES))
            and bool(mallopt(m_arena_max, 1)))


def _whole_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """Blocks of about :data:`BLOCK_BYTES` from ``stream``. From a file that can seek, each ends at a line
    break where it can: the partial line is read again with the next block, which spares the scanner a copy
    of every block to join it to what follows (a third of its time in a big log)."""
    seekable = stream.seekable()
    while data := stream.read(BLOCK_BYTES):
        if seekable and len(data) == BLOCK_BYTES:
            cut = data.rfind(b"\n") + 1
            if 0 < cut < len(data):
                stream.seek(cut - len(data), os.SEEK_CUR)
                data = data[:cut]
        yield data


def _scan_stream(scanner: Scanner, stream: IO[bytes], threads: int = SEARCH_THREADS) -> ScanResult:
    """Read, prepare and apply, in order, on this thread while ``threads`` helpers
    search the blocks ahead. At most ``threads + 1`` blocks are in flight, so
    memory stays bounded."""
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="hotspare-scan") as pool:
        inflight: deque[tuple[Block, Future[Spans]]] = deque()
        for data in _whole_lines(stream):
            for block in scanner.blocks(data):
                inflight.append((block, pool.submit(scanner.search, block)))
                if len(inflight) > threads:
                    done, spans = inflight.popleft()
                    scanner.apply(done, spans.result(), None)
        while inflight:
            done, spans = inflight.popleft()
            scanner.apply(done, spans.result(), None)
    return scanner.close()
