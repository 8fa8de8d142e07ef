"""Pattern packs: what log lines mean, kept as data.

A pack is a TOML file (see ``packs/*.toml`` for the shipped ones)::

    [pack]
    name = "slurm"
    doc = "srun, slurmstepd and sbatch messages"
    family = "slurm"                       # what `patterns list` groups by
    project = "SchedMD SLURM"              # whose messages these are
    versions = "17.11-24.11"               # the releases the formats were read from
    derived_from = ["src/srun/libsrun/launch.c"]   # the source files holding the formats

    [[pattern]]
    name = "srun_node_failure"
    regex = 'srun: error: Node failure on (?P<host>\\S+)'
    class = "node_loss"
    role = "root"            # root | cascade | context | progress
    host = "host"            # the named group holding the host, if any
    line_prefix = true       # a leading ^ also allows LINE_PREFIX (false: the line starts there)
    host_means = "dead"      # origin | dead | suspect | cascade | mention (see HostMeaning)
    hostlist = true          # that group is a SLURM hostlist expression
    doc = "slurmctld told srun a node of the step failed."
    examples = [{ line = "srun: error: Node failure on n2", host = "n2" }]
    non_examples = ["srun: error: n3: task 2: Terminated"]

Regexes are RE2 (linear time, no backreferences or lookaround) and are
matched against bytes as Latin-1, so invalid UTF-8 can never raise. A
regex anchored with a leading ``^`` still matches behind the prefixes that
launchers, collectors and pastes put on every line (``[rank3]:``, ``3: ``
from ``srun -l``, ``host: `` from pdsh, ``main/0 `` from torchx and NeMo-Run, ISO, syslog and Kubernetes
timestamps, ``(raylet, ip=...)``, ``[...]`` tags): see :data:`LINE_PREFIX`.

Sources, later ones replacing earlier packs of the same name: the shipped
packs, Python entry points in group ``hotspare.evidence.patterns``, directories named
in ``$HOTSPARE_PATTERNS`` (``os.pathsep``-separated), and ``--patterns DIR``.
"""

from __future__ import annotations

import enum
import functools
import importlib.resources
import json
import os
import re
import sys
import threading
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

from hotspare.errors import PatternError
from hotspare.evidence.cache import cache_dir, digest, store
from hotspare.evidence.patterns.literals import required_literals
from hotspare.evidence.patterns.relax import OSC, relax
from hotspare.failures import FailureClass

#: After a syslog or journal timestamp: the host and the program's tag (``node01 python3[12345]:``, ``n1 kernel:``).
_SYSLOG_TAG = r" [A-Za-z0-9_][A-Za-z0-9_.-]* [A-Za-z0-9_./@-]+(?:\[[0-9]+\])?:"

#: What may stand before a ``^``-anchored pattern: up to four of these, each followed by blanks, after at most twelve
#: ``>`` of a quoted reply (e-mail, Markdown; a mail archive keeps a report quoted three or four replies deep,
#: ``>>> Successfully completed.``, and a long thread of the Open MPI users' list eight or ten deep, each reply
#: quoting the whole chain: ``>>>>>>>> orte_rml_base_select failed``, heldout679) or arrows (Spack's
#: ``==> Error: ...``), a Markdown list item's ``-``, ``*``
#: or ``+`` (or an ordered one's
#: ``1.``, as pastebin and forum renderers number every line of a pasted log), a Markdown heading's ``#`` to
#: ``######`` (an issue tracker's importer or a renderer turns a pasted log line after a ``---`` or one that
#: opened with ``#`` into a heading: Google Code's export shows ``## python: can't open file ...``), and the
#: backquotes that open Markdown code: one for inline code (a line quoted as `...` in an issue or a forum post),
#: three for a block whose first line was pasted on the fence itself (```host: rank 0 died from signal 11```).
#: A Markdown emphasis opener is taken too: ``**`` (bold) and a single ``_`` or ``*`` (italics; RE2 has no
#: lookahead to ask for the letter that should follow it): a poster who wraps each pasted
#: line in ``_..._`` leaves ``_OSError: Unable to open file ..._`` (underworldcode/UWGeodynamics#230, heldout381).
#: Taken lazily (as few as the match needs): a pattern that opens with an optional ``[host:pid] `` group of its own
#: gets that text and captures its host, where a greedy allowance would swallow it as a ``[...]`` tag. glog's and
#: Abseil's ``E0527
#: 16:53:14.480000 391100 file.cc:737]`` (severity, month and day, time to the microsecond, thread or process id,
#: source file and line) is the same prefix in PyTorch's own logs (torch/_logging TorchLogsFormatter), which carry a
#: failed rank's traceback one line at a time behind it. The Flux broker's log on stderr puts
#: ``<appname>.<severity>[<rank>]: `` before every message after its timestamp (flux-core src/broker/log.c
#: log_fp: ``"%s.%s[%s]: %.*s\n"`` with stdlog_severity_to_string's emerg..debug, read at 4a5e79f), and its runat
#: service relays an rc script's output behind ``rc1.0: `` (src/broker/runat.c stdio_cb ``"%s.%d: %.*s"``, which the
#: ``host:`` item takes): ``broker.err[0]: rc1.0: Segmentation fault`` is the rc1 shell's report of a crashed command.
#: A logging framework's own prefix is read the same way: Go's log and log4j's dates with slashes (``2024/03/05
#: 10:11:12``, Spark's and Hadoop's ``24/03/05 10:11:12``, a US date with AM/PM), Nextflow's ``Mar-05 10:11:12.123``, a
#: level word (``ERROR``, ``INFO``, ...) and the separators of Python logging's ``- name - LEVEL -`` and loguru's
#: ``| LEVEL | module:function:line -``: a line written through one of them was otherwise unread by every anchored
#: pattern (a fifth of the corpus's verdicts changed when each line was put behind one of these prefixes).
#: SkyPilot runs each node's share of a job as a Ray task named "<task>," or "<node>, rank=N," (its generated job
#: driver, sky/backends RayCodeGen: name_str = f'{node_name}, rank={rank},'), so Ray's "(name pid=N, ip=A)" prefix
#: reads "(head, rank=0, pid=4503)" or "(sky-service-7080, pid=2846)" before every line the job prints.
#: vLLM's logger (vllm/logger.py: _FORMAT "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s", before
#: 0.8 without the '[', and _DATE_FORMAT "%m-%d %H:%M:%S"; read in the code index in a copy that cites vllm/logger.py
#: at 0ce0539d, sllm_store's logger) puts "ERROR 10-14 00:03:16 [core.py:710] " before every line of a traceback its
#: engine core logs, behind the "(EngineCore_DP0 pid=N) " its process prefix adds: the month-day date and the
#: "file.py:N]" item are read here, so the exception's own line is read as if it stood alone (heldout417).
#: What may stand after a ``$``-anchored pattern's text: the spaces and tabs a paste, an editor or a fixed-width
#: report leaves at the end of a line (a mail archive pads, a terminal copy keeps the row's width), and the marks
#: that close a line a post wrapped in Markdown's inline code or bold (`...`, ``...``, **...**), as LINE_PREFIX
#: reads past the opening ones (benchmarks/paste_robustness.py --every 10, every line so wrapped: 5.6 % and 6.7 % of
#: the verdicts changed, most right to wrong; with these marks read, 2.2 % and 2.5 %).
#: Julia's ConsoleLogger (base/logging/ConsoleLogger.jl handle_message: prefix = nlines == 1 ? "[" : i == 1 ? "┌" :
#: i < nlines ? "│" : "└") draws a box edge before every line of a message it logs, so a job's own output that a
#: Julia program logs (srun's and slurmstepd's lines in an @error's message, heldout723) opens with "│ ".
LINE_SUFFIX = r"[ \t]*(?:`{1,3}|\*\*)?[ \t]*$"

LINE_PREFIX = (
    r"[ \t]*(?:=*>[ \t]*){0,12}(?:#{1,6}[ \t]+)?(?:(?:[-*+]|[0-9]{1,4}\.)[ \t]+)?`{0,3}(?:\*\*|[*_])?(?:(?:"
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
    r"(?: (?:stdout|stderr) [FP]|" + _SYSLOG_TAG + ")?"            # ISO / Kubernetes CRI timestamps, journalctl
    r"|(?:[A-Z][a-z]{2} )?[A-Z][a-z]{2} +[0-9]{1,2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?: [0-9]{4})?"   # syslog, asctime
    r"(?:" + _SYSLOG_TAG + ")?"
    r"|\[[^\]\n]{1,80}\](?:<std(?:out|err)>)?:?"                  # [rank3]: [1,0]<stderr>: [ 12.3] [INFO]
    r"|<std(?:out|err)>:"                                         # the same tag whose [1,0] a paste cut off
    r"|\((?:raylet|pid=[0-9]+|[A-Za-z_][A-Za-z0-9_.]*(?: pid=[0-9]+)?"
    r"|[A-Za-z_][A-Za-z0-9_.-]*,(?: rank=[0-9]+,)? pid=[0-9]+)(?:, ip=[0-9.]+)?\)"   # Ray, SkyPilot's task names
    r"|[IWEFC][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} +[0-9]+ [^ \t\]]+:[0-9]+\]"   # glog, Abseil, torch logs
    r"|(?:[0-9]{2,4}/[0-9]{2}/[0-9]{2,4}[ T]|[A-Z][a-z]{2}-[0-9]{2} |[0-9]{2}-[0-9]{2} )?"   # a date: Go, log4j, US;
    #                                                               Nextflow's MMM-dd; vLLM's and SGLang's MM-DD
    r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?: ?[AP]M)?"         # a time of day
    r"|[0-9]+:"                                                   # srun -l
    r"|E[ \t]{3}"                                                 # pytest's fail marker "E   " (_pytest/_code/code.py)
    r"|[A-Za-z_][A-Za-z0-9_.-]*\.py:[0-9]+\]"                      # vLLM's "file.py:N]" before 0.8 (no '[')
    r"|[0-9]{1,5}[ \t](?:[ \t]*>)?"                                # a paste's line-number gutter (then a quote)
    r"|[A-Za-z0-9_][A-Za-z0-9_.-]* [0-9]+:"                       # PALS mpiexec --label: "host rank: "
    r"|(?:[A-Za-z0-9_][A-Za-z0-9_.-]* +)?\|"                       # docker compose "trainer-1  | ", a bare "| " gutter
    r"|┌|│|└"                                                      # Julia's ConsoleLogger box, as whole UTF-8 sequences
    r"|[A-Za-z0-9_][A-Za-z0-9_.-]*/[0-9]+[ \t]"                   # torchx / NeMo-Run "role/replica ": main/0
    r"|[A-Za-z0-9_][A-Za-z0-9_.-]*(?:\[[0-9]+\])?:"                # pdsh / clush host:, Flux broker.err[0]:
    r"|(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|SEVERE)[ \t]"   # a logger's level word
    r"|(?:[-|][ \t]+)?(?:[A-Za-z0-9_][A-Za-z0-9_.:<>-]* +)?[-|][ \t]"   # a logger's " - name - ", " | LEVEL | "
    r")[ \t]*){0,4}?"
)

#: Patterns read only as the last resort (hotspare.evidence.classify._last_resort): a program's bare error line, the
#: JVM's report of an exception the main thread did not catch, RELION's bare "ERROR:" line with its reason below.
#: A line another pattern also matches is that pattern's (the scanner records no last-resort match on it):
#: "srun: error: Node failure on n2" has the same shape.
LAST_RESORT = frozenset({"generic.error_severity_line", "generic.java_main_uncaught", "relion.report_error"})

ENV_VAR = "HOTSPARE_PATTERNS"
ENTRY_POINT_GROUP = "hotspare.evidence.patterns"


class Role(enum.Enum):
    """What a matched line tells the classifier."""

    #: Names the failed host or the cause; decides the verdict.
    ROOT = "root"
    #: A consequence of a failure elsewhere; its host is never blamed.
    CASCADE = "cascade"
    #: Worth recording (a host was mentioned, a traceback began); decides nothing.
    CONTEXT = "context"
    #: The job made progress (``step=N``, ``iter=N``).
    PROGRESS = "progress"


class HostMeaning(enum.Enum):
    """What a matched line says about the host it names.

    The default follows the role: a root line names the ``origin``, a cascade
    line a ``cascade`` host, a context line a ``mention``.
    """

    #: Where the failure started: a rank that died of a signal, an OOM kill, a GPU fault on that host.
    ORIGIN = "origin"
    #: The launcher or scheduler states that the node itself failed.
    DEAD = "dead"
    #: Named by a communication loss, a launch failure or a peer's view: a lead to check, never proof.
    SUSPECT = "suspect"
    #: Hurt by a failure elsewhere (a survivor's teardown): never blamed.
    CASCADE = "cascade"
    #: Named in passing; says nothing about the host.
    MENTION = "mention"


_DEFAULT_MEANING = {
    Role.ROOT: HostMeaning.ORIGIN,
    Role.CASCADE: HostMeaning.CASCADE,
    Role.CONTEXT: HostMeaning.MENTION,
    Role.PROGRESS: HostMeaning.MENTION,
}


def re2_options() -> re2.Options:
    """RE2 options every hotspare regex is compiled with (bytes as Latin-1)."""
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.max_mem = 16 << 20
    options.log_errors = False  # errors become PatternError; RE2 must not write to stderr
    return options


def compile_bytes(regex: str, *, capture: bool = True) -> Any:
    """Compile ``regex`` (UTF-8 text) for matching bytes; raises re2's error if invalid."""
    options = re2_options()
    options.never_capture = not capture
    compiled = re2.compile(regex.encode("utf-8"), options)
    # RE2 falls back from its DFA to a ~300x slower NFA when the DFA's share of
    # max_mem cannot hold enough states; a big combined prefilter needs more.
    needed = _BYTES_PER_INSTRUCTION * compiled._regexp.ProgramSize()
    if needed > options.max_mem:
        options.max_mem = needed
        compiled = re2.compile(regex.encode("utf-8"), options)
    return compiled


# Measured: a 38k-instruction alternation of whole patterns ran at 2 MB/s with 4 MiB and at full speed with
# 8 MiB, but once the packs held 170 patterns a 38k one needed more than 16 MiB (240 us a short line at 16,
# 2 us at 64). The prefilter is now made of required literals (literals.py: 26k instructions for 260
# patterns, full speed at 16 MiB); 800 bytes an instruction leaves room to grow. The DFA allocates states as
# it needs them, so the budget is a cap, not what is used.
_BYTES_PER_INSTRUCTION = 800


@dataclass(frozen=True, slots=True)
class Example:
    """A real or real-shaped line a pattern must (or must not) match."""

    line: str
    hosts: tuple[str, ...] = ()
    matches: bool = True


@dataclass(frozen=True, slots=True, eq=False)
class Pattern:
    """One regex with its meaning."""

    pack: str
    name: str
    #: The regex as written in the pack.
    regex: str
    role: Role
    failure_class: FailureClass | None
    host_group: str | None
    hostlist: bool
    #: What the line says about the host it names.
    host_means: HostMeaning
    #: Name (in the same pack) of a context pattern whose host this one adopts
    #: when that pattern matched at most ``within`` lines earlier: for
    #: messages that name the host on one line and the cause on the next.
    host_from: str | None
    #: Name (in the same pack) of a pattern that must have matched at most
    #: ``within`` lines earlier for this one to count: a generic row (a
    #: ``hostname:`` line) that means something only under a given heading.
    after: str | None
    within: int
    doc: str
    examples: tuple[Example, ...]
    #: The regex as matched: a leading ``^`` also allows :data:`LINE_PREFIX`.
    matched: str = ""

    @property
    def compiled(self) -> Any:
        """``matched`` compiled with RE2 (once per regex, when first searched with: a log asks for few)."""
        return _compiled(self.matched)

    @property
    def qualname(self) -> str:
        """``pack.name``, unique across all loaded packs."""
        return f"{self.pack}.{self.name}"


@dataclass(frozen=True, slots=True)
class Pack:
    """A named group of patterns and where it came from."""

    name: str
    doc: str
    source: str
    patterns: tuple[Pattern, ...]
    #: Where the patterns came from (the pack header): shown by ``hotspare patterns list``.
    family: str = ""
    project: str = ""
    versions: str = ""
    derived_from: tuple[str, ...] = ()

    @property
    def example_count(self) -> int:
        """Example and non-example lines the pack carries."""
        return sum(len(p.examples) for p in self.patterns)


class PatternSet:
    """The packs in force, with the combined prefilters the scanner runs.

    The two structures over every event pattern (the RE2 prefilter and the RE2 set) are built when first
    asked for, once (they cost a tenth of a second each with a few hundred patterns, and the Hyperscan
    engine needs them only for lines holding escapes or blocks full of candidates).
    """

    def __init__(self, packs: Iterable[Pack]) -> None:
        self.packs: dict[str, Pack] = {p.name: p for p in packs}
        self.patterns: tuple[Pattern, ...] = tuple(
            pat for pack in self.packs.values() for pat in pack.patterns
        )
        events = [p for p in self.patterns if p.role is not Role.PROGRESS]
        progress = [p for p in self.patterns if p.role is Role.PROGRESS]
        self.event_patterns: tuple[Pattern, ...] = tuple(events)
        self.progress_patterns: tuple[Pattern, ...] = tuple(progress)
        self.progress_prefilter = _combine(progress)
        self._built: dict[str, Any] = {}
        self._lock = threading.RLock()  # a build may ask for another (the prefilter for the commonness)

    @property
    def event_prefilter(self) -> Any:
        """One escape-tolerant RE2 over every event pattern (None when there are none): candidate lines."""
        return self._once("prefilter", lambda: _combine(self.event_patterns, osc=True, common=self.commonness))

    @property
    def commonness(self) -> dict[str, int]:
        """How common each word (in lower case) is in log lines (:func:`word_commonness`), for the scanner's
        choice of literals and words (:func:`prefilter_form`)."""
        common: dict[str, int] = self._once("commonness", lambda: word_commonness(self.event_patterns))
        return common

    @property
    def event_set(self) -> Any:
        """An RE2 set of every event pattern as matched: which of them match a line, in one pass."""
        return self._once("set", lambda: build_set(self.event_patterns))

    def _once(self, name: str, build: Callable[[], Any]) -> Any:
        # Scanner threads may ask together: one builds, the others wait for it.
        try:
            return self._built[name]
        except KeyError:
            with self._lock:
                if name not in self._built:
                    self._built[name] = build()
                return self._built[name]

    def pack(self, name: str) -> Pack:
        """The pack called ``name``; :class:`PatternError` listing the known ones otherwise."""
        try:
            return self.packs[name]
        except KeyError:
            known = ", ".join(sorted(self.packs))
            raise PatternError(repr(name), f"no such pack (known: {known})") from None


def _combine(patterns: Sequence[Pattern], *, osc: bool = False, common: dict[str, int] | None = None) -> Any:
    """One escape-tolerant RE2 over all ``patterns``: finds every line that may match.

    With ``osc``, lines holding an OSC string (which the relaxed forms do not
    skip) are always candidates too: they are cleaned and matched exactly.
    """
    if not patterns:
        return None
    # A prefilter may over-match: each pattern is represented by the literals every match of it holds
    # (see literals.py), or else by its whole regex searched anywhere on the line instead of behind every
    # prefix form (the exact match, on candidate lines only, checks the anchor and the prefixes).
    body = "|".join(f"(?:{prefilter_form(p.regex, common)})" for p in patterns)
    return compile_bytes(f"(?m){OSC}|{body}" if osc else f"(?m){body}", capture=False)


#: RE2's memory budget for a set of patterns (see :func:`build_set`); single regexes keep 16 MB.
SET_MAX_MEM = 64 << 20
#: The most a set's budget grows to when its program does not fit the one before (see :func:`build_set`).
SET_MAX_MEM_CEILING = 1 << 30


def build_set(patterns: Sequence[Pattern]) -> Any:
    """An RE2 set of ``patterns`` as matched (``Match`` gives the positions of those matching a line)."""
    # The set's DFA holds states for all its patterns at once: with 16 MB, lines of many kinds (a dense log,
    # every pack's examples) made it flush its cache line after line (0.5-0.8 ms a line); with 64 MB it stays
    # built (~10 us a line). The memory is taken only as states are made. The compiled program must fit the
    # budget too, and it grows with every pattern anchored at a line's start (each carries LINE_PREFIX): a site's
    # packs of such rules would make the default too small, so the budget doubles until the set compiles.
    budget = SET_MAX_MEM
    while True:
        options = re2_options()
        options.max_mem = budget
        regex_set = re2.Set.SearchSet(options)
        for pat in patterns:
            regex_set.Add(pat.matched.encode("utf-8"))
        if not patterns:
            return regex_set
        try:
            regex_set.Compile()
        except re2.error:
            if budget >= SET_MAX_MEM_CEILING:
                raise PatternError(
                    f"{len(patterns)} patterns", f"RE2 cannot compile them as one set within "
                    f"{SET_MAX_MEM_CEILING >> 20} MB; load fewer packs (HOTSPARE_PATTERNS)") from None
            budget *= 2
            continue
        return regex_set


def word_commonness(patterns: Iterable[Pattern]) -> dict[str, int]:
    """How common each word (ASCII, in lower case, at least four long) is in log lines: in how many patterns'
    example lines it stands (matching or not: the lines around a failure as well as the failure). The packs'
    examples are real lines from many tools, so a word most of them hold ("error", "failed", "rank") is one
    any log is full of, and a word one tool's lines hold is rare. Words no example holds are left out."""
    counts: dict[str, int] = {}
    for pattern in patterns:
        for word in {w.lower() for e in pattern.examples for w in _WORD.findall(e.line) if len(w) >= 4}:
            counts[word] = counts.get(word, 0) + 1
    return counts


_WORD = re.compile(r"[A-Za-z0-9_]+")


def prefilter_form(regex: str, common: dict[str, int] | None = None) -> str:
    """The escape-tolerant form of ``regex`` a prefilter searches for: its required literals (the rarest by
    ``common``, see :func:`~hotspare.evidence.patterns.literals.required_literals`), relaxed, else the whole
    regex relaxed. It may match more lines than ``regex``, never fewer."""
    found = required_literals(regex, None if common is None else (lambda word: common.get(word, 0)))
    if found is None:
        return relax(_unanchored(regex))
    alternatives, ignore_case = found
    body = "|".join(relax(re.escape(a)) for a in alternatives)
    return f"(?i:{body})" if ignore_case else body


def _unanchored(regex: str) -> str:
    r"""``regex`` with every ``^`` that anchors dropped, wherever it stands (``one|^two``, ``(?:^|\s)word``): the
    matched form lets the common line prefixes stand before each of them (:func:`with_prefixes`), so a form still
    anchored there would miss a prefixed line the match reads."""
    return _rewrite_anchors(regex, caret="", line_end=False)


def with_prefixes(regex: str) -> str:
    r"""``regex`` as matched: each ``^`` that anchors (not escaped, not in a class) allows the common line prefixes
    after it, wherever it stands: ``(?:^|\s)word`` and ``one|^two`` read ``[1,0]<stderr>:two`` as a leading ``^``
    does. A leading ``^`` keeps its meaning of old: it anchors every top-level choice after it. Each ``$`` allows
    the blanks a paste leaves at a line's end (:data:`LINE_SUFFIX`)."""
    if regex.startswith("^"):
        return f"^{LINE_PREFIX}(?:{_prefix_anchors(regex[1:])})"
    return _prefix_anchors(regex)


def _prefix_anchors(regex: str) -> str:
    return _rewrite_anchors(regex, caret=f"^{LINE_PREFIX}", line_end=True)


def _rewrite_anchors(regex: str, *, caret: str, line_end: bool) -> str:
    """``regex`` with each ``^`` that anchors (not escaped, not in a class) replaced by ``caret`` and, with
    ``line_end``, each ``$`` by LINE_SUFFIX."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(regex):
        char = regex[i]
        if char == "\\":
            out.append(regex[i:i + 2])
            i += 2
            continue
        if in_class:
            if regex.startswith("[:", i) and (end := regex.find(":]", i + 2)) != -1:  # [[:alpha:]]
                out.append(regex[i:end + 2])
                i = end + 2
                continue
            in_class = char != "]"
        elif char == "[":
            in_class = True
            opening = 1 + regex.startswith("^", i + 1)
            opening += regex.startswith("]", i + opening)  # a "]" first in a class is a member
            out.append(regex[i:i + opening])
            i += opening
            continue
        elif char == "^":
            out.append(caret)
            i += 1
            continue
        elif char == "$" and line_end:
            # Blanks before the end ("\s*$", "\s+$") are the line's own. In a buffer of many lines (the block
            # engines of hotspare.evidence.scan) a \s runs on across the line break and ends the match lines later.
            if out[-2:] in (["\\s", "*"], ["\\s", "+"]):
                out[-2:] = ["[ \\t]+"] if out[-1] == "+" else []
            out.append(LINE_SUFFIX)
            i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out)


@functools.cache  # RE2 objects are safe to share between threads; a few hundred regexes
def _compiled(matched: str) -> Any:
    return compile_bytes(matched)


def load_pack_text(text: str, source: str, *, trusted: bool = False) -> Pack:
    """Parse and validate one pack's TOML; :class:`PatternError` naming the problem. A ``trusted`` pack (one
    shipped with hotspare, whose regexes its tests compile) skips compiling them now: each is compiled when
    first used."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PatternError(source, f"not valid TOML ({exc})") from exc
    return _pack_from_data(data, source, trusted=trusted)


def _pack_from_data(data: dict[str, Any], source: str, *, trusted: bool) -> Pack:
    """A pack from its parsed TOML (:func:`load_pack_text`)."""
    head = _table(data.get("pack"), source, "[pack]")
    name = _text(head, "name", source)
    doc = _text(head, "doc", source)
    raw = data.get("pattern")
    if not isinstance(raw, list) or not raw:
        raise PatternError(source, "needs at least one [[pattern]]")
    patterns = tuple(_pattern(name, _table(p, source, "[[pattern]]"), source, trusted=trusted) for p in raw)
    names = [p.name for p in patterns]
    for pat in patterns:
        for ref in (pat.host_from, pat.after):
            if ref is not None and ref.split(".", 1)[1] not in names:
                raise PatternError(source, f"{pat.name}: {ref!r} names no pattern of this pack")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PatternError(source, f"duplicate pattern names: {', '.join(dupes)}")
    unknown = sorted(set(head) - _PACK_KEYS)
    if unknown:
        raise PatternError(source, f"[pack]: unknown keys {unknown} (allowed: {sorted(_PACK_KEYS)})")
    derived = head.get("derived_from", [])
    if not isinstance(derived, list) or not all(isinstance(d, str) for d in derived):
        raise PatternError(source, "[pack]: 'derived_from' must be a list of strings")
    return Pack(
        name=name, doc=doc, source=source, patterns=patterns,
        family=_optional_text(head, "family", source) or name,
        project=_optional_text(head, "project", source),
        versions=_optional_text(head, "versions", source),
        derived_from=tuple(derived),
    )


_PACK_KEYS = {"name", "doc", "family", "project", "versions", "derived_from"}


def _optional_text(table: Mapping[str, Any], key: str, source: str) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise PatternError(source, f"[pack]: '{key}' must be a string")
    return value.strip()


def _table(value: object, source: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise PatternError(source, f"missing or malformed {what} table")
    return value


def _text(table: Mapping[str, Any], key: str, source: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        where = table.get("name", "[pack]")
        raise PatternError(source, f"{where}: '{key}' must be a non-empty string")
    return value


_KEYS = {
    "name", "regex", "line_prefix", "class", "role", "host", "host_means", "hostlist", "host_from", "after", "within",
    "doc", "examples", "non_examples",
}


def _pattern(pack: str, table: Mapping[str, Any], source: str, *, trusted: bool = False) -> Pattern:
    name = _text(table, "name", source)
    where = f"{source}: pattern {name!r}"
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise PatternError(where, f"unknown keys {unknown} (allowed: {sorted(_KEYS)})")
    regex = _text(table, "regex", source)
    try:
        role = Role(table.get("role", ""))
    except ValueError:
        raise PatternError(where, "role must be one of root, cascade, context, progress") from None
    failure_class = _failure_class(table, role, where)
    host_group = table.get("host")
    prefixed = table.get("line_prefix", True)
    if not isinstance(prefixed, bool):
        raise PatternError(where, "line_prefix must be true or false")
    matched = with_prefixes(regex) if prefixed else regex
    if not trusted:
        try:
            compiled = _compiled(matched)
            relax(_unanchored(regex))
        except Exception as exc:  # re2 raises its own Error type, not re2.error, for parse failures
            raise PatternError(where, f"regex does not compile under RE2 ({_message(exc)})") from exc
        if host_group is not None and host_group.encode() not in compiled.groupindex:
            raise PatternError(where, f"host group {host_group!r} is not a named group of the regex")
    return Pattern(
        pack=pack,
        name=name,
        regex=regex,
        role=role,
        failure_class=failure_class,
        host_group=host_group,
        hostlist=bool(table.get("hostlist", False)),
        host_means=_host_means(table, role, where),
        host_from=_host_from(table, host_group, pack, where),
        after=f"{pack}.{table['after']}" if table.get("after") else None,
        within=int(table.get("within", 3)),
        doc=_text(table, "doc", source),
        examples=_examples(table, where),
        matched=matched,
    )


def _host_from(table: Mapping[str, Any], host_group: str | None, pack: str, where: str) -> str | None:
    name = table.get("host_from")
    if name is None:
        return None
    del host_group  # with both, the line's own host wins and host_from fills in when the line names none
    return f"{pack}.{name}"


def _host_means(table: Mapping[str, Any], role: Role, where: str) -> HostMeaning:
    text = table.get("host_means")
    if text is None:
        return _DEFAULT_MEANING[role]
    try:
        return HostMeaning(text)
    except ValueError:
        choices = ", ".join(m.value for m in HostMeaning)
        raise PatternError(where, f"host_means must be one of {choices}") from None


def _message(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def _failure_class(table: Mapping[str, Any], role: Role, where: str) -> FailureClass | None:
    text = table.get("class")
    if text is None:
        if role in (Role.ROOT, Role.CASCADE):
            raise PatternError(where, f"a {role.value} pattern needs a 'class'")
        return None
    try:
        return FailureClass.parse(str(text))
    except ValueError as exc:
        raise PatternError(where, str(exc)) from None


def _examples(table: Mapping[str, Any], where: str) -> tuple[Example, ...]:
    found: list[Example] = []
    for item in table.get("examples", []):
        if isinstance(item, str):
            found.append(Example(line=item))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("line"), str):
            raise PatternError(where, "each example is a string or {line=..., host=...}")
        host = item.get("host", ())
        hosts = (host,) if isinstance(host, str) else tuple(host)
        found.append(Example(line=item["line"], hosts=hosts))
    for line in table.get("non_examples", []):
        found.append(Example(line=str(line), matches=False))
    if not any(e.matches for e in found):
        raise PatternError(where, "needs at least one example line it matches")
    return tuple(found)


def builtin_packs() -> Iterator[Pack]:
    """The packs shipped inside the package (their parsed TOML kept in the cache: :func:`_parsed_builtins`)."""
    root = importlib.resources.files("hotspare.evidence.patterns").joinpath("packs")
    texts = [(entry.name, entry.read_text(encoding="utf-8"))
             for entry in sorted(root.iterdir(), key=lambda e: e.name) if entry.name.endswith(".toml")]
    for (name, text), data in zip(texts, _parsed_builtins(texts), strict=True):
        yield _pack_from_data(data, f"builtin:{name}", trusted=True) if data is not None else \
            load_pack_text(text, f"builtin:{name}", trusted=True)


def _parsed_builtins(texts: list[tuple[str, str]]) -> list[dict[str, Any] | None]:
    """The shipped packs' TOML as parsed before, from the cache, keyed by every pack's text (Python's TOML parser
    takes a tenth of a second over them, which every ``hotspare`` command would pay at start-up; JSON reads them
    in a hundredth); each None when the cache has no copy (the pack is then parsed as it is loaded, and the
    copy kept for the next run)."""
    base = cache_dir()
    if base is None:
        return [None] * len(texts)
    key = digest(*(part.encode() for name, text in texts for part in (name, text)))
    path = base / "packs" / f"{key}.json"
    try:
        cached = json.loads(path.read_bytes())
        if isinstance(cached, list) and len(cached) == len(texts) and all(isinstance(d, dict) for d in cached):
            return cached
    except (OSError, ValueError):
        pass  # not kept yet, or damaged: parse them again
    try:
        parsed = [tomllib.loads(text) for _, text in texts]
    except tomllib.TOMLDecodeError:
        return [None] * len(texts)  # load_pack_text names the broken pack
    store(path, json.dumps(parsed).encode())
    return list(parsed)


def directory_packs(directory: str | Path) -> Iterator[Pack]:
    """Every ``*.toml`` pack in ``directory``."""
    path = Path(directory)
    if not path.is_dir():
        raise PatternError(str(path), "is not a directory of *.toml packs")
    for file in sorted(path.glob("*.toml")):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PatternError(str(file), f"cannot be read ({exc})") from exc
        yield _load_checked(text, str(file))


def _load_checked(text: str, source: str) -> Pack:
    """A site's pack, its regexes compiled and checked the first time this text is seen; a text that passed
    once (recorded in the cache, keyed by the text, this module and the RE2 release) is loaded as trusted."""
    base = cache_dir()
    marker = None
    if base is not None:
        key = digest(text.encode(), Path(__file__).read_bytes(), str(getattr(re2, "__version__", "?")).encode())
        marker = base / "checked-packs" / key
        if marker.exists():
            return load_pack_text(text, source, trusted=True)
    pack = load_pack_text(text, source)
    if marker is not None:
        store(marker, b"")
    return pack


def entry_point_packs() -> Iterator[Pack]:
    """Packs advertised by installed distributions (group ``hotspare.evidence.patterns``).

    An entry point names a package holding ``*.toml`` files, or a callable
    returning a directory path.
    """
    if not _may_advertise(ENTRY_POINT_GROUP):
        return
    import importlib.metadata  # noqa: PLC0415 -- only when some distribution may advertise packs: see _may_advertise

    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
        except Exception as exc:  # a broken site plugin must say which one
            raise PatternError(f"entry point {ep.name!r}", f"failed to load ({exc})") from exc
        if callable(target):
            yield from directory_packs(target())
            continue
        files = importlib.resources.files(target)
        for entry in sorted(files.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".toml"):
                source = f"entry point {ep.name}:{entry.name}"
                yield _load_checked(entry.read_text(encoding="utf-8"), source)


def _may_advertise(group: str) -> bool:
    """Whether an installed distribution may advertise entry points of ``group``: an ``entry_points.txt`` naming
    it in a ``*.dist-info`` or ``*.egg-info`` directory of a ``sys.path`` folder, or a ``sys.path`` entry that is
    no folder (a zip or an egg: left to importlib.metadata). Checked before importlib.metadata is imported: its
    modules (email, zipfile, csv...) cost every command 3 MB of memory and 15 ms where no site pack is installed,
    a few small reads here."""
    header = f"[{group}]"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except NotADirectoryError:
            return True
        except OSError:
            continue  # a folder that is gone or unreadable: importlib.metadata skips it too
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt"), encoding="utf-8",
                          errors="replace") as points:
                    if header in points.read():
                        return True
            except OSError:
                continue  # most distributions advertise nothing
    return False


def load_patterns(extra_dirs: Sequence[str | Path] = (), *, environ: Mapping[str, str] | None = None) -> PatternSet:
    """Every pack in force: shipped, entry points, ``$HOTSPARE_PATTERNS``, then ``extra_dirs``."""
    env = os.environ if environ is None else environ
    env_dirs = [d for d in env.get(ENV_VAR, "").split(os.pathsep) if d]
    packs = list(builtin_packs()) + list(entry_point_packs())
    for directory in [*env_dirs, *extra_dirs]:
        packs.extend(directory_packs(directory))
    return PatternSet(packs)
