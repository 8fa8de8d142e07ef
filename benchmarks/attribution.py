#!/usr/bin/env python3
"""Benchmark: how right `hotspare classify` is on real failure logs (tests/data/real/*.toml).

Each excerpt is real output someone posted publicly (or a bed capture), with hand labels: class,
origin hosts, innocent hosts, retryable, hosts to exclude. Every excerpt is classified as a new user
would (the text, the exit status only when the excerpt shows it, the allocation only when given) and
scored:

* class_acc       -- share of excerpts whose class is the label's
* innocent_blamed -- hosts labelled innocent that were blamed (goal 0)
* precision       -- blamed hosts that are labelled origins / all blamed hosts (1.0 when none blamed)
* recall          -- labelled origins that were blamed / all labelled origins
* retry_agree     -- share whose retryable matches
* exclude_agree   -- share whose exclude set matches exactly

Side by side, a naive baseline that blames every host named on a line saying error/fail/kill (what
log scrapers do), so the figures read against something. Per family and per class tables first; the
last two lines are the whole corpus's figures and the blind rounds' (the excerpts of the held-out rounds,
files ``*_heldout*.toml``: each round was labelled by hand and committed before the classifier saw it, so
these are the figures closest to logs the project has never seen; the score each round had when it was
first run is in its ``heldout*_notes.txt``)::

    class_acc=.. innocent_blamed=.. precision=.. recall=.. retry_agree=.. exclude_agree=..
    blind n=.. rounds=.. class_acc=.. innocent_blamed=.. precision=.. recall=.. retry_agree=.. exclude_agree=..

A log no line decides and no exit status explains gets the class its words read like (hotspare.evidence.wordguess),
whose counts learnt every excerpt of tests/data/real: on this corpus that guess reads in sample, and
``--rules-only`` leaves it out; on new excerpts (``--corpus`` of a round the counts have not seen) it is as blind as
the rules. ``benchmarks/word_guess.py`` measures the guess out of sample.

Usage: python benchmarks/attribution.py [--corpus DIR] [--json FILE] [--misses] [--rules-only]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from hotspare import Host, HostError, PatternSet, classify, load_patterns, scan

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "real"
LABEL_KEYS = ("class", "origin", "innocent", "retryable", "exclude")


@dataclass(frozen=True)
class Excerpt:
    """One labelled excerpt."""

    id: str
    file: str
    source: str
    launcher: str
    family: str
    covered: bool
    label_class: str
    origin: frozenset[Host]
    innocent: frozenset[Host]
    suspect: frozenset[Host]
    exclude: frozenset[Host]
    retryable: bool
    text: str
    rc: int | None = None
    allocation: tuple[Host, ...] | None = None
    known_miss: str | None = None
    #: Why a labelled suspect is not reported though the verdict is right (a host named where no rule reads it).
    suspect_miss: str | None = None


@dataclass
class Outcome:
    """What the classifier said about one excerpt, and how it scores."""

    excerpt: Excerpt
    got_class: str
    blamed: frozenset[Host]
    exclude: frozenset[Host]
    retryable: bool
    reason: str
    #: Hosts named only as leads (a lost connection, a failed launch): probed, never blamed on the log alone.
    suspect: frozenset[Host] = frozenset()

    @property
    def class_ok(self) -> bool:
        return self.got_class == self.excerpt.label_class

    @property
    def innocents(self) -> frozenset[Host]:
        return self.blamed & self.excerpt.innocent

    @property
    def right(self) -> bool:
        e = self.excerpt
        return (self.class_ok and self.blamed == e.origin and self.exclude == e.exclude
                and self.retryable == e.retryable)


def _hosts(names: Iterable[str], where: str) -> frozenset[Host]:
    try:
        return frozenset(Host(n) for n in names)
    except HostError as exc:
        raise SystemExit(f"error: {where}: {exc}") from None


def load_corpus(directory: Path = CORPUS) -> list[Excerpt]:
    """Every excerpt of every ``*.toml`` in ``directory``; SystemExit naming the first bad entry."""
    found: list[Excerpt] = []
    seen: set[str] = set()
    for path in sorted(directory.glob("*.toml")):
        try:
            entries = tomllib.loads(path.read_text(encoding="utf-8")).get("excerpt", [])
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SystemExit(f"error: {path}: {exc}") from None
        for raw in entries:
            where = f"{path.name}: {raw.get('id', '?')}"
            missing = [k for k in ("id", "source", "launcher", "family", "text", *LABEL_KEYS) if k not in raw]
            if missing:
                raise SystemExit(f"error: {where}: missing {', '.join(missing)}")
            if raw["id"] in seen:
                raise SystemExit(f"error: {where}: duplicate id")
            seen.add(raw["id"])
            alloc = raw.get("allocation")
            found.append(Excerpt(
                id=raw["id"], file=path.name, source=raw["source"], launcher=raw["launcher"],
                family=raw["family"], covered=bool(raw.get("covered", False)), label_class=raw["class"],
                origin=_hosts(raw["origin"], where), innocent=_hosts(raw["innocent"], where),
                suspect=_hosts(raw.get("suspect", []), where), exclude=_hosts(raw["exclude"], where),
                retryable=bool(raw["retryable"]), text=raw["text"], rc=raw.get("rc"),
                allocation=tuple(_hosts(alloc, where)) if alloc is not None else None,
                known_miss=raw.get("known_miss"), suspect_miss=raw.get("suspect_miss"),
            ))
    return found


def judge(excerpt: Excerpt, patterns: PatternSet, *, guess: bool = True) -> Outcome:
    """Classify one excerpt as a new user would; ``guess=False``: the rules alone, without the words guess a log
    no line decides gets (hotspare.evidence.wordguess, whose counts learnt this corpus)."""
    result = scan(excerpt.text.encode("utf-8"), patterns)
    if not guess:
        result = replace(result, sample=b"")
    verdict = classify(result, rc=excerpt.rc, allocation=excerpt.allocation)
    return Outcome(excerpt, verdict.failure_class.value, frozenset(verdict.blamed_hosts),
                   frozenset(verdict.exclude_hosts), verdict.retryable, verdict.reason, frozenset(verdict.suspect_hosts))


# What a log scraper does: every host-looking token on a line that says error/fail/kill.
_ALARM = re.compile(r"(?i)error|fail|kill|died|dead|lost")
_TOKEN = re.compile(r"(?<![\w.-])(?:\d{1,3}(?:\.\d{1,3}){3}|[a-z][a-z0-9-]*\d[a-z0-9-]*)(?![\w-])")


def naive_blame(text: str) -> frozenset[Host]:
    """The baseline: every host-looking token on an alarming line."""
    names: set[Host] = set()
    for line in text.splitlines():
        if _ALARM.search(line):
            for token in _TOKEN.findall(line):
                try:
                    names.add(Host(token))
                except HostError:
                    continue
    return frozenset(names)


@dataclass
class Score:
    """Totals over a group of excerpts."""

    n: int = 0
    class_ok: int = 0
    innocent: int = 0
    blamed: int = 0
    blamed_right: int = 0
    origins: int = 0
    retry_ok: int = 0
    exclude_ok: int = 0
    ids: list[str] = field(default_factory=list)

    def add(self, o: Outcome) -> None:
        e = o.excerpt
        self.n += 1
        self.class_ok += o.class_ok
        self.innocent += len(o.innocents)
        self.blamed += len(o.blamed)
        self.blamed_right += len(o.blamed & e.origin)
        self.origins += len(e.origin)
        self.retry_ok += o.retryable == e.retryable
        self.exclude_ok += o.exclude == e.exclude

    @property
    def precision(self) -> float:
        return self.blamed_right / self.blamed if self.blamed else 1.0

    @property
    def recall(self) -> float:
        return self.blamed_right / self.origins if self.origins else 1.0

    def figures(self) -> dict[str, float | int]:
        n = self.n or 1
        return {
            "class_acc": round(self.class_ok / n, 3), "innocent_blamed": self.innocent,
            "precision": round(self.precision, 3), "recall": round(self.recall, 3),
            "retry_agree": round(self.retry_ok / n, 3), "exclude_agree": round(self.exclude_ok / n, 3),
        }


def _table(title: str, groups: dict[str, Score], out: list[str]) -> None:
    out.append(f"\n{title:<14} {'n':>4} {'class':>6} {'innoc':>5} {'prec':>6} {'recall':>6} {'retry':>6} {'excl':>6}")
    for name, s in sorted(groups.items()):
        f = s.figures()
        out.append(f"{name:<14} {s.n:>4} {f['class_acc']:>6.2f} {f['innocent_blamed']:>5} {f['precision']:>6.2f} "
                   f"{f['recall']:>6.2f} {f['retry_agree']:>6.2f} {f['exclude_agree']:>6.2f}")


def report(outcomes: Sequence[Outcome], *, misses: bool) -> tuple[list[str], Score]:
    """The tables and the overall score."""
    total, naive = Score(), Score()
    by_family: dict[str, Score] = defaultdict(Score)
    by_class: dict[str, Score] = defaultdict(Score)
    by_cover: dict[str, Score] = defaultdict(Score)
    for o in outcomes:
        total.add(o)
        by_family[o.excerpt.family].add(o)
        by_class[o.excerpt.label_class].add(o)
        by_cover["covered" if o.excerpt.covered else "uncovered"].add(o)
        blind = naive_blame(o.excerpt.text)
        naive.add(Outcome(o.excerpt, "unknown", blind, blind, True, ""))
    out = [f"{len(outcomes)} excerpts, {len(by_family)} families, "
           f"{sum(1 for o in outcomes if not o.excerpt.covered)} from families the 2026-11-29 packs did not cover"]
    _table("family", dict(by_family), out)
    _table("label class", dict(by_class), out)
    _table("coverage", dict(by_cover), out)
    hs, nv = total.figures(), naive.figures()
    out.append("\nhost blame     hotspare   naive scraper")
    for key in ("innocent_blamed", "precision", "recall", "exclude_agree"):
        out.append(f"{key:<14} {hs[key]:>8}   {nv[key]:>8}")
    if misses:
        out.append("\nmisses:")
        for o in outcomes:
            if not o.right:
                e = o.excerpt
                out.append(f"  {e.id}: class {o.got_class} (label {e.label_class}); blamed "
                           f"{sorted(h.name for h in o.blamed)} (origin {sorted(h.name for h in e.origin)}); "
                           f"exclude {sorted(h.name for h in o.exclude)} (label {sorted(h.name for h in e.exclude)})"
                           f"\n      {o.reason[:200]}")
    return out, total


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="directory of *.toml excerpt files")
    parser.add_argument("--json", type=Path, help="also write the figures (overall, per family) to this file")
    parser.add_argument("--misses", action="store_true", help="list every excerpt not entirely right")
    parser.add_argument("--rules-only", action="store_true",
                        help="without the words guess of a log no line decides (its counts learnt this corpus)")
    args = parser.parse_args(argv)
    excerpts = load_corpus(args.corpus)
    if not excerpts:
        print(f"error: no excerpts in {args.corpus}", file=sys.stderr)
        return 2
    patterns = load_patterns()
    outcomes = [judge(e, patterns, guess=not args.rules_only) for e in excerpts]
    lines, total = report(outcomes, misses=args.misses)
    print("\n".join(lines))
    figures = total.figures()
    if args.json:
        families: dict[str, Score] = defaultdict(Score)
        for o in outcomes:
            families[o.excerpt.family].add(o)
        args.json.write_text(json.dumps({
            "excerpts": len(outcomes), **figures,
            "families": {k: v.figures() for k, v in sorted(families.items())},
        }, indent=2) + "\n")
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    blind_line = blind_rounds(outcomes)
    if blind_line:
        print(blind_line)
    return 0


def round_of(file: str) -> str | None:
    """The held-out round an excerpt file belongs to (``heldout``, ``heldout2``, ...), None for the rest."""
    match = re.search(r"_(heldout[0-9]*)[a-z]?\.toml$", file)  # a round collected in parts: heldout4a, heldout4b
    return match.group(1) if match else None


def blind_rounds(outcomes: Sequence[Outcome]) -> str:
    """One line: the figures over every held-out round's excerpts (empty when the corpus has none)."""
    blind = Score()
    rounds = set()
    for o in outcomes:
        name = round_of(o.excerpt.file)
        if name is not None:
            rounds.add(name)
            blind.add(o)
    if not rounds:
        return ""
    figures = " ".join(f"{k}={v}" for k, v in blind.figures().items())
    return f"blind n={sum(1 for o in outcomes if round_of(o.excerpt.file))} rounds={len(rounds)} {figures}"


if __name__ == "__main__":
    raise SystemExit(main())
