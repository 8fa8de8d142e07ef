"""Which host a matched line names, and the record it makes: the pattern's host group read as host names
(placeholders, loopback, links and shell syntax refused), a pdsh-style ``host: `` prefix where a line about a
node-local failure names none, and the evidence record itself. Pure functions over one line: the scanner
(:mod:`hotspare.evidence.scan`) calls them for each line a pattern matched."""

from __future__ import annotations

import functools
import re
from typing import Any

from hotspare.errors import HostError
from hotspare.evidence.patterns import HostMeaning, Pattern
from hotspare.evidence.records import Evidence
from hotspare.failures import FailureClass
from hotspare.hosts import Host, expand_hosts

#: Characters of a line kept in an evidence record.
TEXT_CHARS = 300


def shown(line: bytes) -> str:
    return line[:TEXT_CHARS].decode("utf-8", "replace").strip()


def line_evidence(pattern: Pattern, match: Any, line: bytes, lineno: int, group: int | None) -> list[Evidence]:
    """What one match says: one record, or one per host of a captured hostlist. ``group`` is the number of
    the pattern's host group. A line that says where a node-local failure started without naming a host takes
    the host of its pdsh-style prefix, if any (:func:`takes_prefix`, :func:`prefix_host`). (Records are made whole, not
    copied with ``replace``: a dense log makes tens of thousands.)"""
    named = named_hosts(match, line, group, pattern.hostlist)
    if named == [ANONYMOUS] and takes_prefix(pattern):
        named = [prefix_host(line, match.start())]
    return [make_record(pattern, lineno, line, host, text) for host, text in named]


ANONYMOUS: tuple[Host | None, str | None] = (None, None)
# Failures that happen on the node that prints them: a crash, an out-of-memory kill, a GPU fault. (A network
# error is printed by the peer that saw it; a user error or a time limit has no origin node.)
_LOCAL_CLASSES = frozenset({FailureClass.RANK_KILLED, FailureClass.OOM, FailureClass.GPU_HW})


def takes_prefix(pattern: Pattern) -> bool:
    """Whether a line of ``pattern`` that names no host is about the node that printed it: it says where a
    node-local failure started."""
    return pattern.host_means is HostMeaning.ORIGIN and pattern.failure_class in _LOCAL_CLASSES


# pdsh, clush, DeepSpeed's multi-node runner and `parallel --tag` put "host: " before every line a node prints;
# HPE Cray PALS's mpiexec with --label "host rank: ".
# After a logger's bracketed timestamp too: bcbio-nextgen logs each line a node runs as "[2021-03-04T23:32Z] ica3: ...".
_PREFIX = re.compile(rb"[ \t]{0,4}(?:\[[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.,]{2,15}Z?\] )?"
                     rb"([A-Za-z0-9][A-Za-z0-9._-]{0,253}[A-Za-z0-9])(?: [0-9]{1,7})?: ")
_IPV4 = re.compile(r"(?:\d{1,3}\.){3}\d{1,3}")
# Ray puts "(name pid=N, ip=A.B.C.D) " (or "(raylet, ip=...)") before every line a worker or raylet relays to the
# driver: the address is the node the line comes from (ray/_private/worker.py print_worker_logs). It colours the
# prefix ("{dim}{colour}({prefix}{pid}, ip={ip}){reset} {line}", colorama: ESC[2m ESC[36m ... ESC[0m); a copy that
# lost the ESC bytes keeps "[36m(WorkerDict pid=N, ip=A.B.C.D)[0m ", the same prefix; one copied from a pager or
# `cat -v` shows each ESC in caret notation ("^[[36m(RayWorkerWrapper pid=N, ip=A.B.C.D)^[[0m "), the same again.
# SkyPilot names its per-node Ray task "<node>, rank=N," ("(worker1, rank=1, pid=3421, ip=10.0.0.2) "): the same.
_RAY_PREFIX = re.compile(
    rb"[ \t]{0,4}(?:(?:\^\[)?\[[0-9;]{1,8}m){0,3}\((?:raylet|pid=[0-9]+|[A-Za-z_][A-Za-z0-9_.]*(?: pid=[0-9]+)?"
    rb"|[A-Za-z_][A-Za-z0-9_.-]*,(?: rank=[0-9]+,)? pid=[0-9]+)"
    rb", ip=((?:[0-9]{1,3}\.){3}[0-9]{1,3})\)(?:(?:\^\[)?\[[0-9;]{1,8}m){0,2}(?: |$)")
# PyTorch/XLA's xla_dist (torch_xla/distributed/xla_dist.py, the TPU-pod launcher) logs every line a TPU VM's
# worker prints as "%(asctime)-12s %(clientip)s [%(ordinal)s] %(message)s" with datefmt "%Y-%m-%d %H:%M:%S": the
# address is the VM the line comes from. (A copy pasted into Markdown may open with the inline-code backquote.)
_XLA_DIST_PREFIX = re.compile(
    rb"[ \t]{0,4}`?[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} +"
    rb"((?:[0-9]{1,3}\.){3}[0-9]{1,3}) \[[0-9]{1,5}\] ")
# NCCL opens every line it logs with "host:pid:tid [cudaDev] " (src/debug.cc ncclDebugLog: snprintf "%s:%d:%d ",
# hostname, pid, tid, then "[%d] %s:%d NCCL WARN %s"), since 2.23 after the timestamp its WARN lines carry by default
# (NCCL_DEBUG_TIMESTAMP_FORMAT "[%F %T] "), and under `mpirun --tag-output` after Open MPI's "[job,rank]<stdout>:".
# The host is the node that printed the line, whatever its name looks like.
_NCCL_PREFIX = re.compile(
    rb"[ \t]{0,4}(?:\[[0-9]+,[0-9]+\]<std(?:out|err)>:)?(?:\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.,]{8,18}\] )?"
    rb"([A-Za-z0-9][A-Za-z0-9._-]{0,253}):[0-9]+:[0-9]+ \[[0-9]+\] ")
# What follows a script's name in a shell's report of a command it ran ("job.sh: line 12: 4567 Killed ..."), or a
# program's name in its own diagnostic that names a source line (glibc's assert: "prog3: io.c:88: f: Assertion ...").
_SHELL_LINE = re.compile(rb"line [0-9]+: |[^\s:]+:[0-9]+: ")
# Words a "word + number" prefix is made of when it is not a node: devices, drivers, ranks, loop counters.
_NOT_A_NODE = re.compile(
    r"(?:eth|ib|hsn|cxi|bond|en[ops]|ens|wlan|wlp|sd|hd|vd|nvme|md|dm|loop|card|renderd|mlx|hfi|qib|xe|nvidia|gpu"
    r"|cuda|hip|xpu|cpu|core|numa|socket|dev|device|rank|proc|process|thread|task|step|epoch|iter|iteration|batch"
    r"|layer|block|stage|local|default|job|line|test|tp|pp|dp|ep|part|shard|pid|tid|lo)\d+",
    re.IGNORECASE,
)
# A name read "X to Y" with the digit 2 between two words (im2col, col2im, num2str, sub2ind, word2vec, seq2seq):
# a function or a converter naming itself before its message (MatConvNet's "im2col: CUDA kernel error (...)"),
# not a node, whose numbers count machines rather than join words.
_X_TO_Y = re.compile(r"[A-Za-z]{2,}2[A-Za-z]{2,}")


def prefix_host(line: bytes, before: int) -> tuple[Host | None, str | None]:
    """The host of a pdsh-style ``host: `` prefix (or of Ray's ``(name pid=N, ip=A.B.C.D)`` prefix, or of torch_xla
    xla_dist's ``date time A.B.C.D [n]`` prefix, or of NCCL's ``host:pid:tid [dev]`` one) of ``line``
    ending at or before offset ``before`` (where the pattern matched), or ``(None, None)``. Taken only when it
    must be a node's name: an IPv4 address, or a name with a digit that does not start with one (a date, a time,
    a rank number do) and is not a device, a rank or a counter (``eth0``, ``rank3``, ``epoch2``) nor an "X to Y"
    function's name (``im2col``); a name without a digit (``slurmstepd``, ``srun``, a Python module) never is. (pure)"""
    # Ray's "(worker pid=N, ip=A.B.C.D) ", xla_dist's "date time A.B.C.D [n] ": the node that printed it
    ray = _RAY_PREFIX.match(line) or _XLA_DIST_PREFIX.match(line)
    if ray is not None and ray.end() <= before:
        (host,) = _hosts(ray.group(1).decode("latin-1"), False)
        return ANONYMOUS if host is None else (host, host.raw)
    nccl = _NCCL_PREFIX.match(line)  # NCCL's "host:pid:tid [dev] ": the node that printed it
    if nccl is not None and nccl.end() <= before:
        (host,) = _hosts(nccl.group(1).decode("latin-1"), False)
        return ANONYMOUS if host is None else (host, host.raw)
    found = _PREFIX.match(line)
    if found is None or found.end() > before or _SHELL_LINE.match(line, found.end()):
        return ANONYMOUS  # (bash names the script, an assert the program, not a node: "run.sh: line 9: 21923 Aborted")
    text = found.group(1).decode("latin-1")
    if not _IPV4.fullmatch(text) and (text[0].isdigit() or not any(c.isdigit() for c in text)
                                      or _NOT_A_NODE.fullmatch(text) or _X_TO_Y.fullmatch(text)):
        return ANONYMOUS
    (host,) = _hosts(text, False)
    return ANONYMOUS if host is None else (host, host.raw)


def named_hosts(match: Any, line: bytes, group: int | None, hostlist: bool) -> list[tuple[Host | None, str | None]]:
    """The (host, host text) pairs a match names: none (one pair of None), or one per host of the group."""
    at, end = match.span(group) if group is not None else (-1, -1)
    if at < 0:  # no host group, or it took no part in the match
        return [(None, None)]
    if _IN_URL.search(line, max(0, at - 12), at) or _GLUED.match(line, end):
        # an address in a link is not a node of the job; nor is a name glued to shell or URL syntax
        return [(None, line[at : _token_end(line, end)].decode("latin-1"))]
    host_text = line[at:end].decode("latin-1")
    return [(host, host.raw if host else host_text) for host in _hosts(host_text, hostlist)]


def make_record(pattern: Pattern, lineno: int, line: bytes, host: Host | None, host_text: str | None) -> Evidence:
    return Evidence(lineno, pattern.qualname, pattern.role, pattern.failure_class, host, host_text, shown(line),
                    host_means=pattern.host_means)


# What may not follow a host name: a URL's scheme separator, shell syntax ("n1;reboot", "n1|sh"). Quotes may.
_GLUED = re.compile(rb"://|[;|&$]")


def _token_end(line: bytes, end: int) -> int:
    space = _SPACE.search(line, end)
    return space.start() if space else len(line)


_SPACE = re.compile(rb"\s")


# A web link's host part (a documentation or dashboard address quoted in a log line).
_IN_URL = re.compile(rb"(?:https?|ftp)://$")
# Text written where a host name would be, standing for one: documentation, redacted pastes, defaults.
_PLACEHOLDER = re.compile(
    r"x{2,}|X{2,}|(?:your|my|some|the|example)[-_]?(?:host|node|machine)(?:name)?|host(?:name)?|node(?:name)?"
    r"|(?:host|node)name[0-9]{1,2}"  # "hostname2", "nodename1": a document's numbered stand-ins for its hosts
    # "somename-gpu-dcgm-exporter-aaa5" (NVIDIA/dcgm-exporter 27, heldout710): a pod's name with its own part
    # replaced by a stand-in word for a name; "somename", "yourname", "my_name" alone stand in the same way
    r"|(?:some|your|my)[-_]?name(?:[-_.][a-z0-9._-]+)?"
    r"|machine(?:name)?"  # a bare "machine" as a prompt's or a label's host ("user@machine:~$") is a stand-in too
    r"|xyz"  # "user@XYZ:/tpch$": the stock stand-in for a name the poster kept back
    # "local" alone ("[LOCAL:25757] *** Process received signal ***", a paste whose hostname was replaced by LOCAL
    # throughout, dealii/candi 119): the local machine's stand-in, as localhost; .local is a domain, never a node
    r"|local(?:host)?(?:\.localdomain)?|ip|addr|address|none|null|unknown|n/?a|redacted|hidden|\.+"
    r"|[a-z]+[-_]x"  # "worker-X", "node_X": a name with X where its number goes
    r"|[a-z0-9._-]*[-_.]x{3,}[a-z]?",  # "worker-xxxxxxx": a real name's last part redacted with x's
    re.IGNORECASE,
)
_NOT_AN_ADDRESS = ("0.0.0.0", "255.255.255.255")  # noqa: S104 -- compared against, never bound
_TRIM = " \t.,;:'\"()[]<>`*"
# Between the quoted names of a list a program printed as its language's repr (Python's str() of a list,
# "'n1', 'n2'", JSON's "\"n1\", \"n2\""): a hostlist group holding one reads as the names it lists.
_QUOTED_SEP = re.compile(r"""['"]\s*,\s*['"]""")


def _stand_in_with_domain(text: str) -> bool:
    """A stand-in given a domain ("mymachine.com", "yourhost.example.org", "hostname.domain"): its first label, the
    name Host keeps, is a placeholder and the rest ends in a word-only domain label, so the whole is one too. A name
    whose rest is an id ("node.9cb7", a Kubernetes node) or an address's numbers stays a host."""
    first, dot, rest = text.partition(".")
    return bool(dot and first and _PLACEHOLDER.fullmatch(first) and _WORD_DOMAIN.fullmatch(rest))


_WORD_DOMAIN = re.compile(r"(?:[a-z0-9-]+\.)*[a-z]{2,}", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)  # a job's logs name its few hosts over and over; Host is never changed
def _hosts(text: str, is_hostlist: bool) -> tuple[Host | None, ...]:
    """Hosts named by a captured group; ``(None,)`` when the text is not a host or only stands for one
    (``xxxx``, ``<hostname>``, ``NODE``, ``localhost``, ``0.0.0.0``, ``127.0.0.1``, a bare number)."""
    text = text.strip(_TRIM) if not is_hostlist else _QUOTED_SEP.sub(",", text).strip(" \t.,;:'\"()<>`*")
    if (not text or _PLACEHOLDER.fullmatch(text) or text in _NOT_AN_ADDRESS or text.startswith("127.")
            or text.isdigit()):  # a rank or task number ("3: " from srun -l), never a node's name
        return (None,)
    try:
        found = tuple(expand_hosts(text)) if is_hostlist else (Host(text),)
    except HostError:
        return (None,)
    named = tuple(host for host in found if not _stand_in_with_domain(host.raw))
    return named or (None,)
