#!/usr/bin/env python3
"""Benchmark: does a verdict survive the way a log reached us?

The same failure reaches hotspare through many hands: a logging framework puts its date, logger and level before
every line, a mail archive quotes it, a web page swaps spaces for no-break spaces, a terminal keeps its colours, a
Windows paste ends lines with CR LF. The verdict should not change. For each way below, every excerpt of the real
corpus (tests/data/real) is classified as posted and again with every line rewritten that way, and the verdicts
(class and blamed hosts) are compared. Printed per way: how many changed, and how many of those went from right to
wrong by the hand labels; the baseline row ("as posted") classifies the text unchanged twice, so any change there
is noise in the classifier itself (there should be none).

    way             n   changed  share  right->wrong

Usage: python benchmarks/paste_robustness.py [--every K] [--ways a,b,...] [--show N]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attribution import Excerpt, judge, load_corpus

from hotspare import load_patterns


def _each_line(prefix: str) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix + line if line else line for line in text.split("\n"))


WAYS: dict[str, Callable[[str], str]] = {
    "as posted": lambda text: text,
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "no-break spaces": lambda text: text.replace(" ", "\u00a0"),
    "colours": lambda text: "\n".join(f"\x1b[31m{line}\x1b[0m" if line else line for line in text.split("\n")),
    # the same colours as a web page or a notebook's committed output keeps them: the ESC byte gone
    "colour residue": lambda text: "\n".join(f"[1;31m{line}[0m" if line else line for line in text.split("\n")),
    "caret colours": lambda text: "\n".join(f"^[[31m{line}^[[0m" if line else line for line in text.split("\n")),
    "quoted twice": lambda text: "\n".join("> > " + line for line in text.split("\n")),
    "inline code": lambda text: "\n".join(f"`{line}`" if line.strip() else line for line in text.split("\n")),
    "bold": lambda text: "\n".join(f"**{line}**" if line.strip() else line for line in text.split("\n")),
    "indented": _each_line("    "),
    "iso date": _each_line("[2024-05-01 12:00:00.123] "),
    "go log": _each_line("2024/05/01 12:00:00 "),
    "log4j": _each_line("24/05/01 12:00:00 INFO "),
    "python logging": _each_line("2024-05-01 12:00:00,123 - worker - INFO - "),
    "loguru": _each_line("2024-05-01 12:00:00.123 | INFO     | train:main:42 - "),
    "nextflow": _each_line("May-01 12:00:00.123 [main] INFO  nextflow.Session - "),
    "gha": _each_line("2024-05-01T12:00:00.1234567Z "),
    "journal": _each_line("May 01 12:00:00 login1 job[4242]: "),
    "kubectl prefix": _each_line("[pod/trainer-worker-0/pytorch] "),
    "tag output": _each_line("[1,0]<stderr>:"),
    "wrapped 80": lambda text: "\n".join(line[i:i + 80] for line in text.split("\n")
                                          for i in range(0, max(len(line), 1), 80)),
    "docker json": lambda text: "\n".join(json.dumps({"log": line + "\n", "stream": "stderr"})
                                          for line in text.split("\n")),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=1, metavar="K", help="take every K-th excerpt (default all)")
    parser.add_argument("--ways", default=",".join(WAYS), help="comma-separated ways (default: all)")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="list N changed excerpts per way")
    args = parser.parse_args(argv)
    ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    unknown = [w for w in ways if w not in WAYS]
    if unknown or args.every < 1:
        print(f"error: unknown way(s) {', '.join(unknown)}; known: {', '.join(WAYS)}" if unknown
              else "error: --every must be at least 1", file=sys.stderr)
        return 2
    excerpts: list[Excerpt] = load_corpus()[::args.every]
    patterns = load_patterns()
    posted = {e.id: judge(e, patterns) for e in excerpts}
    print(f"{'way':<16}{'n':>6}{'changed':>9}{'share':>8}{'right->wrong':>14}")
    for way in ways:
        rewrite = WAYS[way]
        changed: list[str] = []
        lost = 0
        for e in excerpts:
            before = posted[e.id]
            after = judge(dataclasses.replace(e, text=rewrite(e.text)), patterns)
            if (after.got_class, after.blamed) != (before.got_class, before.blamed):
                changed.append(f"    {e.id}: {before.got_class} {sorted(map(str, before.blamed))} -> "
                               f"{after.got_class} {sorted(map(str, after.blamed))}")
                lost += before.right and not after.right
        print(f"{way:<16}{len(excerpts):>6}{len(changed):>9}{len(changed) / len(excerpts):>8.3f}{lost:>14}")
        for line in changed[:args.show]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
