"""Required literals: what every match of a regex must contain, for a small fast prefilter.

A prefilter that is the alternation of every pattern grows with the packs: each ``.*`` and optional group
multiplies the states RE2's DFA must track, and past its memory budget the DFA falls back to a scan a
hundred times slower. Every match of ``srun: error: Node failure on (?P<host>\\S+)`` contains the text
``srun: error: Node failure on``, so the prefilter only needs that literal: an alternation of literals is a
compact automaton whose cost does not grow with how the patterns are written. Candidate lines are then
matched exactly (:meth:`hotspare.evidence.scan.Scanner._match_line`), so a prefilter may over-match, never
under-match. A regex with no literal long enough (a bare ``(?P<host>\\S+): (?:A|B)``) keeps its whole
relaxed form in the prefilter.

:func:`required_words` asks the same of whole words (letters, digits, ``_``): a colouriser puts its escapes
between words, never inside one (see relax.py), so a required word stands verbatim in the raw bytes and a
plain literal search for it, the fastest search there is, tells which patterns can match in a block at all.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable
from typing import Any

with warnings.catch_warnings():  # Python 3.11 keeps the parser as re._parser; these names are its public aliases
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants as C
    import sre_parse

#: Shortest literal worth prefiltering on; shorter ones make most lines candidates.
MIN_LITERAL = 6
#: Shortest word worth keying a pattern on (:func:`required_words`); shorter ones are in most blocks.
MIN_WORD = 4
#: Words this long and longer are preferred keys (:func:`rarest_words`).
RARE_WORD = 6
#: Punctuation rare enough in log lines to key a pattern that holds no word (a pasted shell prompt's ``@``, a
#: terminal's ``^C``), rarest first: a block is asked for one with a byte search (:func:`marked_words`).
MARKS = "@^~`"
#: The mark of a required run in another script: a localised shell's ``段错误`` or ``Убито`` holds no ASCII word and
#: none of :data:`MARKS`, but a block of plain ASCII cannot hold it, and most logs are plain ASCII throughout
#: (:mod:`hotspare.evidence.multi` asks ``bytes.isascii()``, one pass at memory speed). Ranked after the marks.
NON_ASCII = "\x80"

Alternatives = tuple[str, ...]
#: What a run of literal text offers as a requirement: the run itself, or one of its words; None if too short.
_Pick = Callable[[str], str | None]
#: How a requirement ranks against another: the lower key is kept.
_Key = Callable[[Alternatives], Any]
#: How common a word (in lower case) is in log lines: a count, higher is commoner.
Commonness = Callable[[str], int]

_WORD = re.compile(r"[A-Za-z0-9_]+")


def required_literals(regex: str, commonness: Commonness | None = None) -> tuple[Alternatives, bool] | None:
    """Literals of which every match of ``regex`` holds at least one, and whether they ignore case;
    None when no choice of literals at least :data:`MIN_LITERAL` long exists (or the regex is not one
    Python's parser reads the same way as RE2).

    Of the choices, the longest literals; with ``commonness`` (how common a word is in log lines: see
    :func:`hotspare.evidence.patterns.word_commonness`), first those whose rarest words are rarest
    (:func:`rarest_word`): the scanner's first question of a block is whether such a word is in it at all.
    """
    if commonness is None:
        return _longest_literals(regex)

    def key(alts: Alternatives) -> tuple[tuple[bool, bool, int, int], int, int]:
        worst = max(_literal_rarity(a, commonness) for a in alts)
        return (worst, *_longest_key(alts))

    return _required(regex, _whole_run, key)


@functools.lru_cache(maxsize=4096)  # the scanner's engines ask again what the pattern set asked
def _longest_literals(regex: str) -> tuple[Alternatives, bool] | None:
    return _required(regex, _whole_run, _longest_key)


def required_words(regex: str) -> tuple[Alternatives, bool] | None:
    """ASCII words of which every match of ``regex`` holds at least one (whole, or inside a longer word),
    and whether they ignore case; None when no choice of words at least :data:`MIN_WORD` long exists."""
    return _required(regex, longest_word, _longest_key)


def rarest_words(regex: str, commonness: Commonness) -> tuple[Alternatives, bool] | None:
    """Like :func:`required_words`, but of every choice the regex allows, the words least likely to be in a
    block of ordinary log (:func:`rarest_word`); alternatives are ranked by their worst word, then by the sum
    of their commonness."""

    def pick(run: str) -> str | None:
        return rarest_word(run, commonness)

    def key(alts: Alternatives) -> tuple[bool, bool, int, int, int]:
        ranks = [_rarity(a, commonness) for a in alts]
        worst = max(ranks)
        return worst[0], worst[1], sum(r[2] for r in ranks), worst[3], len(alts)

    return _required(regex, pick, key)


def marked_words(regex: str, commonness: Commonness) -> tuple[Alternatives, bool] | None:
    """Like :func:`rarest_words`, but a required run holding no word offers its rarest mark (:data:`MARKS`),
    ranked after every word: for a regex some of whose matches hold no word at all (a shell prompt, a
    terminal's ``^C``). A single byte stands verbatim in a coloured line as a word does."""

    def pick(run: str) -> str | None:
        return rarest_word(run, commonness) or rarest_mark(run)

    def key(alts: Alternatives) -> tuple[bool, bool, int, int, int]:
        ranks = [(*_MARK_RANK, (MARKS + NON_ASCII).index(a)) if is_mark(a) else _rarity(a, commonness) for a in alts]
        worst = max(ranks)
        return worst[0], worst[1], sum(r[2] for r in ranks), worst[3], len(alts)

    return _required(regex, pick, key)


def rarest_mark(text: str) -> str | None:
    """The rarest of :data:`MARKS` in ``text``, if any; else :data:`NON_ASCII` if ``text`` holds a character
    outside ASCII."""
    mark = next((mark for mark in MARKS if mark in text), None)
    return NON_ASCII if mark is None and not text.isascii() else mark


def is_mark(key: str) -> bool:
    """Whether a key (:func:`marked_words`, :func:`key_words`) is a mark rather than a word."""
    return len(key) == 1 and (key in MARKS or key == NON_ASCII)


#: How a mark ranks against words (:func:`marked_words`): after all of them, before nothing.
_MARK_RANK = (True, True, 1 << 29)


def rarest_word(text: str, commonness: Commonness) -> str | None:
    """The word of ``text`` (at least :data:`MIN_WORD` long) least likely to be in a block of ordinary log: a
    block without it cannot hold ``text``, so a word ordinary output is full of ("error", "bytes",
    "distributed") is a poor key. Ranked: a number last (logs are full of them), then words shorter than
    :data:`RARE_WORD` (they turn up by chance, and inside longer words), then by ``commonness`` of the word in
    lower case (see :func:`hotspare.evidence.multi.commonness`), then the longest."""
    words = [w for w in _WORD.findall(text) if len(w) >= MIN_WORD]
    return min(words, key=lambda w: _rarity(w, commonness)) if words else None


def key_words(text: str, commonness: Commonness) -> tuple[str, ...] | None:
    """The words of ``text`` that key it: its rarest word (:func:`rarest_word`), and when that is a number or a
    short word (which turn up by chance), a second one a block must hold as well: the rarest not next to the
    first (neighbours go together in ordinary output too: "grad norm" is also "grad_norm=0.9"). None when
    ``text`` has no word at least :data:`MIN_WORD` long."""
    found = _WORD.findall(text)
    usable = [i for i, w in enumerate(found) if len(w) >= MIN_WORD]
    if not usable:
        return None
    first = min(usable, key=lambda i: _rarity(found[i], commonness))
    rank = _rarity(found[first], commonness)
    if not (rank[0] or rank[1]):
        return (found[first],)
    others = [i for i in usable if found[i] != found[first]]
    apart = [i for i in others if abs(i - first) > 1] or others
    if not apart:
        return (found[first],)
    second = min(apart, key=lambda i: _rarity(found[i], commonness))
    return found[first], found[second]


def _rarity(word: str, commonness: Commonness) -> tuple[bool, bool, int, int]:
    return word.isdigit(), len(word) < RARE_WORD, commonness(word.lower()), -len(word)


#: The rank of a literal with no word to key it: after every literal that has one.
_NO_WORD = (True, True, 1 << 30, 0)


def _literal_rarity(literal: str, commonness: Commonness) -> tuple[bool, bool, int, int]:
    word = rarest_word(literal, commonness)
    return _NO_WORD if word is None else _rarity(word, commonness)


def longest_word(text: str) -> str | None:
    """The longest ASCII word of ``text`` if it has :data:`MIN_WORD` characters or more. Every word of a
    required literal is required too, and the longest is the least likely to turn up by chance."""
    word = max(_WORD.findall(text), key=len, default="")
    return word if len(word) >= MIN_WORD else None


def _whole_run(run: str) -> str | None:
    return run if len(run) >= MIN_LITERAL else None


def _required(regex: str, pick: _Pick, key: _Key) -> tuple[Alternatives, bool] | None:
    try:
        tree = sre_parse.parse(regex)
    except (re.error, OverflowError, RecursionError):
        return None
    scoped: list[bool] = []
    best = _sequence(tree.data, scoped, pick, key)
    ignore_case = bool(tree.state.flags & re.IGNORECASE) or any(scoped)
    return (best, ignore_case) if best is not None else None


def _longest_key(alts: Alternatives) -> tuple[int, int]:
    """Longest shortest alternative first, then fewest alternatives."""
    return -min(len(a) for a in alts), len(alts)


def _better(a: Alternatives | None, b: Alternatives | None, key: _Key) -> Alternatives | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if key(a) <= key(b) else b


def _sequence(items: list[Any], scoped: list[bool], pick: _Pick, key: _Key) -> Alternatives | None:
    """The best requirement of a concatenation: its longest literal run, or its best required part."""
    best: Alternatives | None = None
    run: list[str] = []

    def close() -> None:
        nonlocal best
        found = pick("".join(run)) if run else None
        if found is not None:
            best = _better(best, (found,), key)
        run.clear()

    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
            continue
        if op is C.AT:
            continue  # anchors take no text
        if op is C.SUBPATTERN:
            inner = list(av[3])
            if not av[1] and not av[2] and all(o is C.LITERAL for o, _ in inner):
                run.extend(chr(v) for _, v in inner)
                continue
            if av[1]:  # a scoped flag group, (?i:...): its literals ignore case
                scoped.append(True)
            close()
            best = _better(best, _sequence(inner, scoped, pick, key), key)
            continue
        close()
        if op is C.BRANCH:
            best = _better(best, _branch(av[1], scoped, pick, key), key)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
            best = _better(best, _sequence(list(av[2]), scoped, pick, key), key)
    close()
    return best


def _branch(branches: list[Any], scoped: list[bool], pick: _Pick, key: _Key) -> Alternatives | None:
    """An alternation requires one of its branches' requirements: None if any branch requires nothing."""
    found: list[str] = []
    for branch in branches:
        alts = _sequence(list(branch), scoped, pick, key)
        if alts is None:
            return None
        found.extend(alts)
    return tuple(dict.fromkeys(found))
