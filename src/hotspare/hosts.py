"""Canonical host identity.

Schedulers, launchers and logs write one node many ways: ``x1921c7s1b0n0``,
``x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov`` (PBS hostfiles on Slingshot),
``gpu-2-17/11`` (PBS ``exec_host`` with a CPU index), ``slurmstepd-n1`` (the
daemon's log prefix). ezpz compared such strings directly and "swapped 0"
after naming the right node. Here every comparison goes through :class:`Host`,
whose equality is defined on the canonical name, so that mistake cannot be
written.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from pathlib import Path

import hostlist

from hotspare.errors import HostError, InputError

#: Longest host text we accept (DNS limit).
MAX_HOST_CHARS = 253

# What a host token may look like before canonicalisation: DNS-ish labels, an
# optional PBS "/cpu" suffix. Anything else (spaces, quotes, ';', unicode) is
# refused, so a hostile string from a log can never reach a hostfile or argv.
_RAW_HOST = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_])?(?:/[0-9]+)?")
_HSN_SUFFIX = re.compile(r"-hsn[0-9]+$")
_IPV4ISH = re.compile(r"[0-9.]+")
_DAEMON_PREFIX = "slurmstepd-"


def _canonical(text: str) -> str:
    name = text.strip()
    if not name:
        raise HostError(text, "empty")
    if len(name) > MAX_HOST_CHARS:
        raise HostError(text, f"longer than {MAX_HOST_CHARS} characters")
    if not _RAW_HOST.fullmatch(name):
        raise HostError(text, "not a host name (letters, digits, '.', '-', '_' only)")
    name = name.lower().split("/", 1)[0]
    if _IPV4ISH.fullmatch(name):  # only then pay for ipaddress (hot: 10,000-host hostfiles)
        try:
            return str(ipaddress.ip_address(name))
        except ValueError:
            pass
    if name.startswith(_DAEMON_PREFIX) and len(name) > len(_DAEMON_PREFIX):
        name = name[len(_DAEMON_PREFIX) :]
    # The short name identifies the node; domains and the high-speed-network
    # interface suffix only say how it was reached.
    return _HSN_SUFFIX.sub("", name.split(".", 1)[0]) or name


class Host:
    """One node, whatever form it was written in.

    ``Host("X1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov") == Host("x1921c7s1b0n0")``.
    ``raw`` keeps the text as given (use it when talking to the launcher);
    ``name`` is the canonical key used for every comparison.
    """

    __slots__ = ("name", "raw")

    def __init__(self, text: str) -> None:
        self.name: str = _canonical(text)
        self.raw: str = text.strip()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Host):
            return self.name == other.name
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __lt__(self, other: Host) -> bool:
        return _natural_key(self.name) < _natural_key(other.name)

    def __repr__(self) -> str:
        if self.raw == self.name:
            return f"Host({self.name!r})"
        return f"Host({self.name!r}, raw={self.raw!r})"

    def __str__(self) -> str:
        return self.name


@functools.lru_cache(maxsize=1 << 16)  # sorting asks twice per comparison; a job has at most thousands of hosts
def _natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort n2 before n10."""
    parts = re.split(r"([0-9]+)", name)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts if p)


def is_raw_host(text: str) -> bool:
    """Cheap check that ``text`` has only host characters (what :class:`Host` accepts before canonicalising)."""
    return len(text) <= MAX_HOST_CHARS and _RAW_HOST.fullmatch(text) is not None


def is_host(text: str) -> bool:
    """Whether ``text`` is acceptable as a host (no exception)."""
    try:
        _canonical(text)
    except HostError:
        return False
    return True


def expand_hosts(expression: str) -> list[Host]:
    """Expand a SLURM hostlist (``nid[001-004,010]``, ``n1,n[3-4]``) to hosts, order kept."""
    try:
        names = hostlist.expand_hostlist(expression.strip())
    except hostlist.BadHostlist as exc:
        raise HostError(expression, f"bad hostlist expression ({exc})") from exc
    if not names:
        raise HostError(expression, "hostlist expands to nothing")
    return unique(Host(n) for n in names)


def unique(hosts: Iterable[Host]) -> list[Host]:
    """The hosts with repeats removed (same node, any spelling), first order kept."""
    seen: dict[Host, None] = {}
    for host in hosts:
        seen.setdefault(host, None)
    return list(seen)


def parse_hostfile(text: str) -> list[Host]:
    """Hosts from hostfile text: PBS_NODEFILE (repeated lines), MPICH ``host:ppn``,
    Open MPI ``host slots=N``; comments and blank lines ignored; repeats removed.
    """
    hosts = []
    for line in text.splitlines():
        token = line.split("#", 1)[0].strip().split(maxsplit=1)
        if token:
            hosts.append(Host(token[0].split(":", 1)[0]))
    return unique(hosts)


def read_hostfile(path: str | Path) -> list[Host]:
    """:func:`parse_hostfile` on a file; :class:`InputError` if it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else "not UTF-8 text"
        raise InputError(str(path), why) from exc
    hosts = parse_hostfile(text)
    if not hosts:
        raise InputError(str(path), "no hosts in file")
    return hosts


def format_hosts(hosts: Iterable[Host]) -> str:
    """A compact SLURM hostlist of canonical names (``n[1-3]``)."""
    return str(hostlist.collect_hostlist([h.name for h in hosts]))
