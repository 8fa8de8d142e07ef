"""Escape-tolerant prefilters.

Stripping terminal escapes from every byte of a multi-GB log costs more than
matching it (one regex substitution per escape; ezpz colours several tokens a
line). Instead the prefilter runs on the raw bytes with each pattern
*relaxed*: escape sequences may appear before every atom except between two
letters or digits, where no colouriser splits a word. Any line that matches a
pattern once its escapes (at word boundaries) are stripped also matches the
relaxed pattern raw, so no match is lost; the (few) candidate lines are then
stripped and matched exactly. Zero-width assertions other than ``^`` are
dropped from the relaxed form: a prefilter may over-match, never under-match.
(NULs, which can land anywhere, are removed from a block before matching:
they are rare and cheap to find.)
"""

from __future__ import annotations

import re

# CSI sequences (ESC [ parameters intermediates final) and two-byte escapes
# (ESC + one byte): a superset of what the scanner strips, except OSC
# strings (ESC ] ... BEL), which are long and free-form and would more than
# double the prefilter; a line holding one is always a candidate instead (OSC).
ALLOW = r"(?:\x1b\[?[\x20-\x3f]*[\x40-\x7e])*"
OSC = r"\x1b\]"

_TOKEN = re.compile(
    r"""
    (?P<klass>\[\^?\]?(?:\[:[a-z]+:\]|\\.|[^\]\\])*\])     # [...] with escapes and [:posix:]
  | (?P<hex>\\x(?:[0-9A-Fa-f]{2}|\{[0-9A-Fa-f]+\}))       # \x1b, \x{1F}
  | (?P<zero>\\[bBAz]|\$)                                # zero-width: dropped
  | (?P<escape>\\.)                                      # \S \d \. \[ ...
  | (?P<flags>\(\?[imsU-]+\))                            # (?i) alone
  | (?P<open>\((?:\?(?:P<[A-Za-z_]\w*>|:|[imsU-]+:))?)    # group openers
  | (?P<close>\))
  | (?P<alt>\|)
  | (?P<quant>(?:[*+?]|\{[0-9]+(?:,[0-9]*)?\})\??)
  | (?P<caret>\^)
  | (?P<atom>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def relax(regex: str) -> str:
    """The escape-tolerant form of an RE2 ``regex`` (see the module docstring)."""
    out: list[str] = []
    # Index in ``out`` where the last atom starts, so a quantifier can wrap it.
    atom_start: int | None = None
    group_starts: list[int] = []
    prev_word = False
    for token in _TOKEN.finditer(regex):
        kind, text = token.lastgroup, token.group()
        word = kind == "atom" and (text.isalnum() or text == "_")
        if kind in ("atom", "escape", "hex", "klass"):
            atom_start = len(out)
            out.append(text if word and prev_word else ALLOW + text)
        elif kind == "quant":
            if atom_start is None:
                raise ValueError(f"quantifier {text!r} with nothing to repeat in {regex!r}")
            inner = "".join(out[atom_start:])
            del out[atom_start:]
            out.append(f"(?:{inner}){text}")
            atom_start = None
        elif kind == "close":
            if not group_starts:
                raise ValueError(f"unbalanced parenthesis in {regex!r}")
            out.append(")")
            atom_start = group_starts.pop()
        else:
            _structure(kind, text, out, group_starts)
            atom_start = None
        prev_word = word
    if group_starts:
        raise ValueError(f"unbalanced parenthesis in {regex!r}")
    return "".join(out)


def _structure(kind: str | None, text: str, out: list[str], group_starts: list[int]) -> None:
    """Emit a group opener, alternation, flag group or anchor; nothing can be repeated after it."""
    if kind == "open":
        group_starts.append(len(out))
        # Named groups lose their names: the prefilter never captures.
        out.append(text if text.startswith("(?") and not text.startswith("(?P<") else "(?:")
    elif kind in ("alt", "flags", "caret"):
        out.append(text)
    # zero-width assertions other than ^ are dropped: the prefilter may over-match.
