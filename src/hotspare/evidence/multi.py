"""Candidate lines of a block, at a cost that follows the log rather than the number of patterns.

The RE2 prefilter (:class:`Re2Lines`, one DFA over every pattern's escape-tolerant form) walks states that
every added pattern makes: with 262 patterns it read about 430 MB/s on one core. :class:`HyperscanLines`
asks two cheaper questions of each block instead:

1. Which patterns can match here at all? One pass of Hyperscan's literal matcher over the raw block for
   words every match of a pattern holds, each word reported once a block. A colouriser puts its escapes
   between words, never inside one, so a word stands verbatim in the raw bytes. Of the words of the literals
   a pattern's prefilter is made of, the rarest is taken (:func:`~hotspare.evidence.patterns.literals.rarest_word`,
   ranked by :func:`~hotspare.evidence.patterns.word_commonness`; the literals too are chosen for their rare
   words): a pattern keyed by a word ordinary output is full of costs a pass on every block.
2. Where? For each pattern flagged, one pass of that pattern's own escape-tolerant prefilter (the form the
   RE2 prefilter is built from), reporting where each match ends: those lines are its candidates.

A pattern some match of which holds no such word is keyed by a rare punctuation mark instead (a pasted
shell prompt's ``@``), looked for with a byte search; one with neither is searched on every block, in a pass of
its own: the probe holds literals only, which Hyperscan compiles in a tenth of the memory of any other set.
One Hyperscan cannot compile, or whose prefilter holds non-ASCII text (RE2 folds case by Latin-1 rules,
Hyperscan by ASCII ones), is searched by RE2. However many forms a block flags, each gets its pass: a block
that once flagged more than 64 was left to the RE2 prefilter of every pattern, whose one pass was meant to cost
less than many small ones, but at ~1,090 patterns that prefilter's automaton outgrows its memory and reads
tens of kB a second (the corpus's 5.6 MB of failure text as one log: 154 CPU seconds, against 9 with a pass per
flagged form; ``benchmarks/scan_vs_grep.py --dense``).

Compiled databases are kept between runs (:data:`CACHE_VAR`): a run then loads them instead of paying
Hyperscan's compiler in time and memory.

Where Hyperscan does not import, :class:`WordLines` asks the same two questions in RE2: the words are one RE2 set
(its automaton a trie of literals, which stays small where the prefilter of every pattern does not), each flagged
form an RE2 search. :class:`Re2Lines` stays as the reference the others are tested against.

Each candidate carries the patterns that flagged it. The scanner checks only those on a line holding no
escape, where the prefilter forms are exact supersets; a line holding an escape (which the forms tolerate
between words only) or an OSC string (which they do not skip) is checked against every pattern, as the RE2
engine checks every candidate line.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

import re2

from hotspare.evidence import cache
from hotspare.evidence import patterns as patterns_module
from hotspare.evidence.cache import cache_dir, digest, store
from hotspare.evidence.patterns import PatternSet, compile_bytes, prefilter_form, re2_options
from hotspare.evidence.patterns.literals import (
    NON_ASCII,
    is_mark,
    key_words,
    marked_words,
    rarest_mark,
    rarest_words,
    required_literals,
)

try:
    import hyperscan
except ImportError as exc:  # no wheel for this platform: RE2 does it all (WordLines)
    hyperscan = None  # type: ignore[assignment]  # tested before every use
    _IMPORT_ERROR: str | None = str(exc)
else:
    _IMPORT_ERROR = None

log = logging.getLogger(__name__)

#: Environment variable choosing the engine: ``auto`` (Hyperscan when it imports), ``hyperscan`` or ``re2``.
ENGINE_VAR = "HOTSPARE_SCAN_ENGINE"
Engine = Literal["auto", "hyperscan", "words", "re2"]
#: Compiled databases are kept between runs in the cache (:mod:`hotspare.evidence.cache`; Hyperscan's
#: compiler takes milliseconds a pattern and megabytes of memory): this variable names it, "" keeps none.
CACHE_VAR = cache.CACHE_VAR
#: (start, end) of a line in a block and the patterns that flagged it; None: check it against every pattern
#: (an OSC line, a line several prefilters flagged, or any line the RE2 engine found).
Candidate = tuple[int, int, frozenset[int] | None]

_OSC = b"\x1b]"


class LineFinder(Protocol):
    """Finds the lines of a block some event pattern may match (thread-safe: blocks are searched in parallel)."""

    name: str

    def candidates(self, text: bytes) -> list[Candidate]:
        """Candidate lines of ``text`` (segments ended by ``\\n``), in order, each once."""
        ...


def re2_lines(prefilter: Any, text: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each line holding a match of the RE2 ``prefilter``, in order, each once."""
    if prefilter is None:
        return
    pos = 0
    # pos <= len: re2 clamps a start past the end, where a prefilter that matches nothing at all would match
    # again and again.
    while pos <= len(text) and (match := prefilter.search(text, pos)) is not None:
        start = text.rfind(b"\n", 0, match.start()) + 1
        end = text.find(b"\n", match.start())
        end = len(text) if end < 0 else end
        yield start, end
        pos = end + 1


class Re2Lines:
    """The RE2 prefilter over all patterns; its candidate lines are checked against every pattern."""

    name = "re2"

    def __init__(self, patterns: PatternSet) -> None:
        self._patterns = patterns

    def candidates(self, text: bytes) -> list[Candidate]:
        """Candidate lines of ``text``, each to be checked against every pattern."""
        return [(start, end, None) for start, end in re2_lines(self._patterns.event_prefilter, text)]


class KeyedLines:
    """A word pass, then a pass per flagged prefilter form (see the module docstring); how each pass is made is
    the subclass's (:class:`HyperscanLines`, :class:`WordLines`)."""

    name = "keyed"

    def __init__(self, patterns: PatternSet) -> None:
        self._patterns = patterns
        # Patterns sharing a prefilter form (one format's variants) share its pass and its reports.
        derived = _derived([p.regex for p in patterns.event_patterns], patterns.commonness)
        forms: dict[str, set[int]] = {}
        for index, (form, _) in enumerate(derived):
            forms.setdefault(form, set()).add(index)
        self._forms = list(forms)
        self._form_patterns = [frozenset(indices) for indices in forms.values()]
        # Each form's alternatives: the words a block must hold, one or two (two when one alone would turn up by
        # chance: see key_words); a form is flagged when every word of one alternative is in the block. An
        # alternative may be a mark instead (a byte no word holds: a prompt's "@"), looked for with bytes.find.
        alternatives: list[tuple[tuple[tuple[str, bool], ...], ...]] = []
        unkeyed: list[int] = []
        for form_index, indices in enumerate(self._form_patterns):
            found = derived[min(indices)][1]  # the form's words: the same for every pattern it is made from
            if found is None:
                unkeyed.append(form_index)
                alternatives.append(())
                continue
            keys, ignore_case = found
            alternatives.append(tuple(
                tuple((w, False) if is_mark(w) else (w.lower() if ignore_case else w, ignore_case) for w in key)
                for key in keys))
        # Only one word of each alternative is probed for (see probe_word): the probe's cost follows its shortest
        # and commonest words ("rank" in every line of a training log halved its speed as a pair's second word).
        # The others are looked for in a block only once their alternative's probed word is there. Marks are not
        # probed: one one-byte literal costs Hyperscan's compiler some 30 MB more (it leaves its literal-only
        # path), where memchr finds the byte at memory speed.
        common = patterns.commonness
        probed_words = {min(alt, key=lambda w: probe_rank(w[0], common))
                        for alts in alternatives for alt in alts if not _marked(alt)}
        words: dict[tuple[str, bool], int] = {}  # probe ids first (a hit's index is its word's id), then the rest
        for word in sorted(probed_words):
            words[word] = len(words)
        for alts in alternatives:
            for alt in alts:
                for word in alt:
                    words.setdefault(word, len(words))
        self._osc = len(probed_words)
        needs = [tuple(frozenset(words[w] for w in alt) for alt in alts) for alts in alternatives]
        word_forms: list[set[int]] = [set() for _ in range(self._osc)]
        mark_forms: dict[bytes, set[int]] = {}
        for form_index, alts in enumerate(alternatives):
            for alt in alts:
                if _marked(alt):
                    mark_forms.setdefault(alt[0][0].encode(), set()).add(form_index)
                else:
                    word_forms[words[min(alt, key=lambda w: probe_rank(w[0], common))]].add(form_index)
        self._word_forms = [tuple(sorted(forms_)) for forms_ in word_forms]
        self._mark_forms = [(mark, tuple(sorted(forms_))) for mark, forms_ in mark_forms.items()]
        self._needs = needs
        #: Forms some alternative of which needs more than one word: flagged only once all are seen.
        self._paired = frozenset(i for i, alts in enumerate(needs) if any(len(alt) > 1 for alt in alts))
        #: How to look for a word the probe does not (by its id): a literal, or a regex ignoring case.
        self._confirm: dict[int, bytes | Any] = {
            index: (compile_bytes("(?i)" + re.escape(word)) if ignore_case else word.encode())
            for (word, ignore_case), index in words.items() if index >= self._osc
        }
        # Forms with neither word nor mark are searched on every block, each in a pass of its own (in the probe,
        # an expression that is not a literal would cost the compiler the same 30 MB as a mark).
        # Compiled when first flagged: a log flags few of the forms, and each costs milliseconds.
        self._searchers: dict[int, _Searcher] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._always = [self._compile(i) for i in unkeyed]
        self._make_probe([word for word, index in words.items() if index < self._osc])

    def _make_probe(self, words: list[tuple[str, bool]]) -> None:
        """Build the pass that says which of ``words`` (their ids are their positions; each with whether it
        ignores case) a block holds."""
        raise NotImplementedError

    def _seen(self, text: bytes) -> tuple[set[int], bool]:
        """The probed words ``text`` holds (their ids), and whether it holds an OSC introducer."""
        raise NotImplementedError

    def _compile(self, form: int) -> _Searcher:
        raise NotImplementedError

    def _scratch(self, database: Any) -> Any:
        """What a search needs of this thread for ``database`` (Hyperscan's scratch space; RE2's: nothing)."""
        del database
        return None

    def candidates(self, text: bytes) -> list[Candidate]:
        """Candidate lines of ``text`` with the patterns that flagged each."""
        osc, flagged = self._probe_block(text)
        return self._search(text, osc, flagged)

    def line_patterns(self, line: bytes) -> frozenset[int] | None:
        """The patterns one line (no break in it) may match, however many it flags; None for an OSC string, for
        then every pattern is to be checked."""
        text = line + b"\n"
        osc, flagged = self._probe_block(text)
        found = self._search(text, osc, flagged)
        return found[0][2] if len(found) == 1 else frozenset() if not found else None

    def _search(self, text: bytes, osc: bool, flagged: set[int]) -> list[Candidate]:
        """The candidate lines of ``text`` the passes of the ``flagged`` forms find (``osc``: the probe saw an
        OSC introducer)."""
        lines = _Lines(text)
        for searcher in [*self._always, *(self._searcher(i) for i in sorted(flagged))]:
            searcher.search(text, lines, self._scratch)
        at = text.find(_OSC) if osc else -1
        while at >= 0:
            lines.add_all(at)
            at = text.find(_OSC, text.find(b"\n", at) + 1 or len(text))
        return lines.result()

    def always_searched(self) -> list[str]:
        """The patterns no word or mark keys: each costs a pass over every block of every log."""
        patterns = self._patterns.event_patterns
        return sorted(patterns[i].qualname for form, alts in enumerate(self._needs) if not alts
                      for i in self._form_patterns[form])

    def flagged(self, text: bytes) -> list[str]:
        """The patterns (qualified names) whose forms a block of ``text`` makes the finder search for: each costs a
        pass over the block, so ordinary output should flag none."""
        _, flagged = self._probe_block(text)
        patterns = self._patterns.event_patterns
        return sorted(patterns[i].qualname for form in flagged for i in self._form_patterns[form])

    def _probe_block(self, text: bytes) -> tuple[bool, set[int]]:
        """The probe pass: whether it saw an OSC introducer, and the forms flagged (every word of one of their
        alternatives seen, or a mark of theirs in the block)."""
        seen, osc = self._seen(text)
        flagged: set[int] = set()
        for index in seen:
            flagged.update(self._word_forms[index])
        for mark, forms in self._mark_forms:
            if (not text.isascii()) if mark == _NON_ASCII_MARK else mark in text:
                flagged.update(forms)
        if flagged & self._paired:
            looked: dict[int, bool] = {}
            for form in flagged & self._paired:
                if not any(all(self._holds(text, word, seen, looked) for word in alt) for alt in self._needs[form]):
                    flagged.discard(form)
        return osc, flagged

    def _holds(self, text: bytes, word: int, seen: set[int], looked: dict[int, bool]) -> bool:
        """Whether the block holds word ``word``: the probe says for its own words; the others are looked for
        once a block."""
        if word < self._osc:
            return word in seen
        held = looked.get(word)
        if held is None:
            confirm = self._confirm[word]
            held = looked[word] = confirm in text if isinstance(confirm, bytes) else confirm.search(text) is not None
        return held

    def _searcher(self, form: int) -> _Searcher:
        searcher = self._searchers.get(form)
        if searcher is None:
            # One compile at a time, and each form once: the search threads are handed neighbouring blocks, which
            # flag the same forms, and two compiles at once doubled the first run's peak of compiler memory.
            with self._lock:
                searcher = self._searchers.get(form)
                if searcher is None:
                    searcher = self._searchers[form] = self._compile(form)
        return searcher



class HyperscanLines(KeyedLines):
    """Hyperscan's literal matcher for the word pass, then a Hyperscan pass per flagged form (RE2 for a form
    Hyperscan cannot take)."""

    name = "hyperscan"

    def __init__(self, patterns: PatternSet) -> None:
        if hyperscan is None:
            raise RuntimeError(f"hyperscan is not importable ({_IMPORT_ERROR})")
        super().__init__(patterns)

    def _make_probe(self, words: list[tuple[str, bool]]) -> None:
        self._probe = _probe_database(words)

    def _seen(self, text: bytes) -> tuple[set[int], bool]:
        hits: list[tuple[int, int]] = []
        self._probe.scan(text, match_event_handler=_note_hit, context=hits, scratch=self._scratch(self._probe))
        seen = {index for index, _ in hits}
        osc = self._osc in seen
        seen.discard(self._osc)
        return seen, osc

    def _compile(self, form: int) -> _Searcher:
        return _compile_searcher(self._form_patterns[form], self._forms[form])

    def _scratch(self, database: Any) -> Any:
        """This thread's scratch space for ``database`` (Hyperscan's per-scan memory is not shareable)."""
        scratches: dict[int, Any] = self._local.__dict__.setdefault("scratches", {})
        scratch = scratches.get(id(database))
        if scratch is None:
            scratch = scratches[id(database)] = hyperscan.Scratch(database)
        return scratch


class WordLines(KeyedLines):
    """The same word keys without Hyperscan (where no wheel installs it): the word pass is one RE2 set of the
    probed words, whose automaton is a literal trie (a few megabytes, read at hundreds of MB/s where the RE2
    prefilter of every pattern outgrows its memory), and each flagged form is an RE2 search of its own. Every
    block is searched so, however many forms it flags: each costs a pass, but the prefilter of every pattern
    costs more."""

    name = "words"

    def _make_probe(self, words: list[tuple[str, bool]]) -> None:
        options = re2_options()
        options.max_mem = _PROBE_MEMORY
        probe = re2.Set.SearchSet(options)
        for word, caseless in words:
            probe.Add((("(?i)" if caseless else "") + re.escape(word)).encode("utf-8"))
        if words:
            probe.Compile()
        self._probe = probe if words else None

    def _seen(self, text: bytes) -> tuple[set[int], bool]:
        found = self._probe.Match(text) if self._probe is not None else None
        return set(found or ()), _OSC in text

    def _compile(self, form: int) -> _Searcher:
        return _Re2Searcher(self._form_patterns[form], compile_bytes(f"(?m){self._forms[form]}", capture=False))


#: Memory the RE2 word set may take for its automaton (its default, 8 MB, makes it rebuild states on a big log).
_PROBE_MEMORY = 32 << 20


#: Each regex's prefilter form, and the words keying it: alternatives (a block holding every word of one may hold
#: a match) and whether they ignore case; None for a form no word keys.
Keys = tuple[tuple[tuple[str, ...], ...], bool]
Derived = list[tuple[str, Keys | None]]


def _derived(regexes: list[str], common: dict[str, int]) -> Derived:
    """Each regex's prefilter form and the words keying it (:func:`form_words`): from the cache when the same
    regexes were read before by the same code (the forms come from a parse of each regex: a tenth of a
    millisecond each, which a site's hundreds of rules would pay on every run), else worked out and kept."""
    base = cache_dir()
    path = None
    if base is not None:
        package = Path(patterns_module.__file__ or "").parent  # the code the forms come from
        sources = b"".join((package / name).read_bytes() for name in ("__init__.py", "literals.py", "relax.py"))
        key = json.dumps([regexes, sorted(common.items())]).encode()
        path = base / "forms" / f"{digest(key, sources, Path(__file__).read_bytes())}.json"
        try:
            cached = json.loads(path.read_bytes())
            return [(form, None if words is None else (tuple(tuple(alt) for alt in words[0]), bool(words[1])))
                    for form, words in cached]
        except (OSError, ValueError, TypeError, IndexError):
            pass  # not kept yet, or damaged: work it out again
    derived: Derived = []
    for regex in regexes:
        form = prefilter_form(regex, common)
        derived.append((form, form_words(regex, form, common)))
    if path is not None:
        store(path, json.dumps(derived).encode())
    return derived


def form_words(regex: str, form: str, common: dict[str, int] | None = None) -> Keys | None:
    """Words that stand verbatim in every raw line ``form`` (the prefilter of ``regex``) matches: alternatives,
    each one word or two that a line must both hold, and whether they ignore case.

    A form made of ``regex``'s required literals, relaxed, holds each literal's words unbroken (escapes go
    between words), so any word of each literal will do; that reuses the parse the form was made from. The
    rarest by ``common`` are taken (:func:`~hotspare.evidence.patterns.literals.key_words`,
    :func:`~hotspare.evidence.patterns.word_commonness`), so that a block of ordinary output flags few patterns.
    A form that is the whole regex relaxed is asked directly (slower: its text is long), one word an
    alternative. Where some choice holds no word, a rare punctuation mark keys it instead
    (:func:`~hotspare.evidence.patterns.literals.marked_words`: a shell prompt's ``@``).
    """
    table = common or {}

    def count(word: str) -> int:
        return table.get(word, 0)

    literals = required_literals(regex, count)  # what prefilter_form(regex, common) is made of
    if literals is None:
        found = rarest_words(form, count) or marked_words(form, count)
        return None if found is None else (tuple((word,) for word in found[0]), found[1])
    alternatives, ignore_case = literals
    keys = [key_words(literal, count) or _mark_key(literal) for literal in alternatives]
    if any(key is None for key in keys):
        return None
    return tuple(dict.fromkeys(key for key in keys if key)), ignore_case


def _mark_key(literal: str) -> tuple[str, ...] | None:
    mark = rarest_mark(literal)
    return None if mark is None else (mark,)


class _Searcher(Protocol):
    def search(self, text: bytes, lines: _Lines, scratch: Any) -> None: ...


class _HyperscanSearcher:
    """A prefilter form as a Hyperscan database: where every match ends, in one pass."""

    def __init__(self, patterns: frozenset[int], database: Any) -> None:
        self.patterns = patterns
        self.database = database

    def search(self, text: bytes, lines: _Lines, scratch: Any) -> None:
        ends: list[int] = []
        self.database.scan(text, match_event_handler=_note_end, context=ends, scratch=scratch(self.database))
        lines.add_ends(ends, self.patterns)


class _Re2Searcher:
    """A prefilter form in RE2, where Hyperscan cannot take it."""

    def __init__(self, patterns: frozenset[int], regex: Any) -> None:
        self.patterns = patterns
        self.regex = regex

    def search(self, text: bytes, lines: _Lines, scratch: Any) -> None:
        del scratch
        for start, end in re2_lines(self.regex, text):
            lines.add(start, end, self.patterns)


def _compile_searcher(patterns: frozenset[int], form: str) -> _Searcher:
    if form.isascii():
        # PREFILTER: a construct Hyperscan lacks is widened, never narrowed; MULTILINE: a kept ^ is a line start.
        choices = top_alternatives(form)
        try:
            database = _database(choices, [hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_PREFILTER] * len(choices))
        except hyperscan.error as exc:
            log.debug("patterns %s stay in RE2: hyperscan rejects their prefilter (%s)", sorted(patterns), exc)
        else:
            return _HyperscanSearcher(patterns, database)
    return _Re2Searcher(patterns, compile_bytes(f"(?m){form}", capture=False))


def top_alternatives(regex: str) -> list[str]:
    r"""``regex``'s top-level choices, as regexes of their own (a leading ``(?i)``, or a group around the whole,
    such as ``(?i:a|b)``, carried into each, and a choice that is such a group split in turn): ``a|(?:b|c)d|^e``
    gives ``a``, ``(?:b|c)d``, ``^e``; ``x|(?i:y|z)`` gives ``x``, ``(?i:y)``, ``(?i:z)``.

    A form's choices go to Hyperscan as the expressions of one database (one pass still; a match of any is a
    match of the form) rather than as one alternation: its compiler's graph of a big alternation took 10-38 MB
    of memory for the largest forms (generic.program_fatal_words: 38 MB and 0.35 s), where the same choices
    apart took 3 MB and 0.06 s, and a cold first scan, compiling while blocks are in flight, went over the
    scanner's 64 MB budget. Escapes, classes and groups are skipped whole: only a ``|`` outside all of them
    splits."""
    wrapper = _WHOLE_GROUP.fullmatch(regex)
    if wrapper is not None and _closing(regex) == len(regex) - 1:
        flags = wrapper["flags"]
        return [f"(?{flags}:{choice})" for choice in top_alternatives(regex[len(wrapper["open"]):-1])]
    lead = _LEADING_FLAGS.match(regex)
    if lead is not None:
        return [lead[0] + choice for choice in top_alternatives(regex[lead.end():])]
    choices: list[str] = []
    start = 0
    for at, char, depth in _structure(regex):
        if char == "|" and depth == 0:
            choices.append(regex[start:at])
            start = at + 1
    if not choices:
        return [regex]
    choices.append(regex[start:])
    return [part for choice in choices for part in top_alternatives(choice)]  # a choice may be a group of choices


#: A group opening the regex with flags (``(?i:``, ``(?:``): when it closes at the regex's end, its choices are
#: the regex's.
_WHOLE_GROUP = re.compile(r"(?P<open>\(\?(?P<flags>[a-zA-Z]*):).*\)", re.DOTALL)
#: Flags set for the whole regex at its start: ``(?i)``.
_LEADING_FLAGS = re.compile(r"\(\?[a-zA-Z]+\)")


def _closing(regex: str) -> int:
    """Where the group that opens ``regex`` closes; -1 when it does not."""
    return next((at for at, char, depth in _structure(regex) if char == ")" and depth == 0), -1)


def _structure(regex: str) -> Iterator[tuple[int, str, int]]:
    """Each ``(``, ``)`` and ``|`` of ``regex`` outside escapes and classes: its position, itself, and the depth of
    groups after it (a class's ``]`` first after ``[`` or ``[^`` is a member, not its end)."""
    depth, at, class_start = 0, 0, -1
    while at < len(regex):
        char = regex[at]
        if char == "\\":
            at += 2
            continue
        if class_start >= 0:
            if char == "]" and at > class_start + 1 and regex[class_start + 1:at] != "^":
                class_start = -1
        elif char == "[":
            class_start = at
        elif char in "()|":
            depth += (char == "(") - (char == ")")
            yield at, char, depth
        at += 1


def _database(expressions: list[str], flags: list[int]) -> Any:
    """A block-mode database of ``expressions`` (ids are their positions): what an earlier run compiled from
    the same input, from the cache (:data:`CACHE_VAR`), else compiled now and cached."""
    encoded = [e.encode() for e in expressions]
    path = _cache_path(encoded, flags)
    if path is not None:
        try:
            return hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
        except (OSError, hyperscan.error):
            pass  # not cached yet, unreadable, or from another Hyperscan: compile it again
    database = hyperscan.Database()
    database.compile(expressions=encoded, ids=list(range(len(encoded))), flags=flags)
    if path is not None:
        store(path, hyperscan.dumpb(database))
    _release_freed_memory()
    return database


def _cache_path(expressions: list[bytes], flags: list[int]) -> Path | None:
    base = cache_dir()
    if base is None:
        return None
    return base / "hyperscan" / f"{digest(repr((_host_key(), expressions, flags)).encode())}.db"


@functools.cache
def _host_key() -> str:
    """What a serialized database depends on besides its input: the Hyperscan release and the CPU (a
    database built where AVX-512 is, refuses or misbehaves where it is not; a shared home is common)."""
    import platform  # noqa: PLC0415 -- here, not at start-up

    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            flags = next((line for line in info if line.startswith("flags")), "")
    except OSError:
        flags = ""
    return f"{getattr(hyperscan, '__version__', '?')} {platform.machine()} {flags}"


def _release_freed_memory() -> None:
    """Hand the heap's free pages back to the system. Hyperscan's compiler allocates and frees megabytes,
    which glibc keeps for reuse; the scanner's resident size is part of its budget. (A no-op where the C
    library has no malloc_trim.)"""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache  # looked up when first needed: ctypes costs milliseconds of every start-up
def _malloc_trim() -> Any:
    import ctypes  # noqa: PLC0415

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # no C library to ask, or no malloc_trim in it
        return None




def probe_rank(word: str, commonness: dict[str, int]) -> tuple[bool, bool, int, int]:
    """How dear a word is to probe for, lowest first: a number or a word under 5 letters costs Hyperscan's literal
    matcher most (short literals share its buckets with much of any text, and logs are full of them), then the
    commoner word in the packs' examples, then the shorter."""
    return word.isdigit(), len(word) < 5, commonness.get(word.lower(), 0), -len(word)


#: How :data:`~hotspare.evidence.patterns.literals.NON_ASCII` stands among the marks' bytes: a block holds it when
#: it is not all ASCII.
_NON_ASCII_MARK = NON_ASCII.encode()


def _marked(alternative: tuple[tuple[str, bool], ...]) -> bool:
    """Whether a form's alternative is a mark (looked for with bytes.find) rather than words to probe for."""
    return len(alternative) == 1 and is_mark(alternative[0][0])


def _probe_database(words: list[tuple[str, bool]]) -> Any:
    """One pass over a block for each word (reported once: that it is there is enough) and the OSC
    introducer (once). Literals only: Hyperscan compiles a set of literals in a tenth of the memory a set
    holding any other expression takes."""
    single = hyperscan.HS_FLAG_SINGLEMATCH
    expressions = [re.escape(word) for word, _ in words] + [re.escape(_OSC.decode())]
    flags = [single | (hyperscan.HS_FLAG_CASELESS if caseless else 0) for _, caseless in words] + [single]
    return _database(expressions, flags)


def _note_hit(index: int, start: int, end: int, flags: int, sink: list[tuple[int, int]]) -> None:
    sink.append((index, end))


def _note_end(index: int, start: int, end: int, flags: int, sink: list[int]) -> None:
    sink.append(end)


class _Lines:
    """Candidate lines of one block being gathered: start -> (start, end, patterns, or None for every pattern).

    Kept small, for a dense block (a teardown: a flagged line in every one) holds some ten thousand of them and
    three blocks are in flight: each entry is the candidate itself, and a line flagged by two forms shares the
    union of their patterns with every other line so flagged (one frozenset a pair, not one a line)."""

    def __init__(self, text: bytes) -> None:
        self._text = text
        self._found: dict[int, Candidate] = {}
        self._unions: dict[tuple[frozenset[int], frozenset[int]], frozenset[int]] = {}

    def _union(self, have: frozenset[int], patterns: frozenset[int]) -> frozenset[int]:
        union = self._unions.get((have, patterns))
        if union is None:
            union = self._unions[have, patterns] = have | patterns
        return union

    def add(self, start: int, end: int, patterns: frozenset[int] | None) -> None:
        have = self._found.get(start)
        if have is None:
            self._found[start] = (start, end, patterns)
        elif have[2] is not None and have[2] != patterns:
            # The line is checked against each pattern that flagged it (None, from an OSC line, stays).
            self._found[start] = (start, end, None if patterns is None else self._union(have[2], patterns))

    def add_all(self, at: int) -> None:
        """The line holding offset ``at``, to be checked against every pattern."""
        text = self._text
        end = text.find(b"\n", at)
        self.add(text.rfind(b"\n", 0, at) + 1, len(text) if end < 0 else end, None)

    def add_ends(self, ends: list[int], patterns: frozenset[int]) -> None:
        """The lines where matches end (one ending with its newline is on that line). Hot in dense logs:
        Hyperscan reports ends in increasing order, so each line costs one pair of searches."""
        text, found = self._text, self._found
        first = last = -2
        for end in ends:
            at = end - 1 if end else 0
            if first <= at <= last:
                continue
            first = text.rfind(b"\n", 0, at) + 1
            last = text.find(b"\n", at)
            if last < 0:
                last = len(text)
            have = found.get(first)
            if have is None:
                found[first] = (first, last, patterns)
            elif have[2] is not None and have[2] != patterns:
                found[first] = (first, last, self._union(have[2], patterns))  # as in add()

    def result(self) -> list[Candidate]:
        found = self._found
        return [found[start] for start in sorted(found)]


_FINDERS: weakref.WeakKeyDictionary[PatternSet, dict[str, LineFinder]] = weakref.WeakKeyDictionary()
_FINDERS_LOCK = threading.Lock()


def line_finder(patterns: PatternSet, engine: Engine | None = None) -> LineFinder:
    """The line finder for ``patterns`` (built once per pattern set and engine).

    ``engine`` None reads :data:`ENGINE_VAR` (default ``auto``: Hyperscan when it imports, else RE2).
    """
    choice = engine or _engine_from_env()
    name = "words" if choice == "auto" and hyperscan is None else "hyperscan" if choice == "auto" else choice
    with _FINDERS_LOCK:
        built = _FINDERS.setdefault(patterns, {})
        if name not in built:
            if name == "words" and choice == "auto":
                log.debug("scanning with RE2 word keys: %s", engine_note())
            built[name] = _ENGINES[name](patterns)
        return built[name]


#: Each engine's line finder.
_ENGINES: dict[str, Callable[[PatternSet], LineFinder]] = {
    "re2": Re2Lines, "hyperscan": HyperscanLines, "words": WordLines,
}


def _engine_from_env() -> Engine:
    value = os.environ.get(ENGINE_VAR, "auto")
    if value not in ("auto", "hyperscan", "words", "re2"):
        raise ValueError(f"{ENGINE_VAR}={value!r}: use auto, hyperscan, words or re2")
    return value  # type: ignore[return-value]  # checked against the four just above


def engine_note() -> str:
    """One line saying which engine ``auto`` picks here, and why."""
    if hyperscan is None:
        return f"RE2 word keys (hyperscan not importable: {_IMPORT_ERROR}; pip install hyperscan)"
    version = getattr(hyperscan, "__version__", "?")  # the stub omits it
    return f"Hyperscan {version}: a word pass, then a pass per flagged pattern"
