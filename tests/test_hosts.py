"""Host identity: one node is one Host whatever form it is written in."""

from __future__ import annotations

import pytest

from hotspare import Host, HostError, expand_hosts, parse_hostfile, read_hostfile
from hotspare.errors import InputError
from hotspare.evidence.naming import prefix_host
from hotspare.hosts import format_hosts, is_host

SAME_NODE = [
    ("x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov", "x1921c7s1b0n0.hsn.cm.sunspot.alcf.anl.gov"),
    ("x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov", "x1921c7s1b0n0"),
    ("X1921C7S1B0N0", "x1921c7s1b0n0-hsn3"),
    ("gpu-2-17/11", "gpu-2-17"),
    ("slurmstepd-n1", "n1"),
    ("nid001321", "NID001321.chn.perlmutter.nersc.gov"),
]


@pytest.mark.parametrize(("a", "b"), SAME_NODE)
def test_forms_of_one_node_are_equal(a: str, b: str) -> None:
    """Every spelling of one node compares, hashes and dedups as one host."""
    assert Host(a) == Host(b)
    assert hash(Host(a)) == hash(Host(b))
    assert len({Host(a), Host(b)}) == 1


def test_the_seeds_swapped_0_is_impossible() -> None:
    """The scraper's form of a host is found in a hostfile written in the -hsn0 FQDN form (ezpz 'swapped 0')."""
    active = parse_hostfile("x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov\nx1921c7s0b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov\n")
    assert Host("x1921c7s1b0n0.hsn.cm.sunspot.alcf.anl.gov") in active
    assert active.index(Host("x1921c7s1b0n0")) == 0


@pytest.mark.parametrize(("a", "b"), [("n1", "n10"), ("nid001", "nid0010"), ("gpu-2-17", "gpu-2-1"), ("10.0.0.42", "10.0.0.43")])
def test_different_nodes_differ(a: str, b: str) -> None:
    """Canonicalisation never merges two different nodes."""
    assert Host(a) != Host(b)


def test_raw_form_is_kept() -> None:
    """The form given is kept for talking to launchers; the canonical one for comparing."""
    host = Host("x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov")
    assert host.name == "x1921c7s1b0n0"
    assert host.raw == "x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov"


def test_ip_addresses_stay_whole() -> None:
    """An IP is not cut at its first dot."""
    assert Host("10.0.0.42").name == "10.0.0.42"


HOSTILE = ["n1;rm -rf /", "n1 n2", "'n1'", "$(reboot)", "n1`id`", "nœud1", "a" * 300, "", "   ", "../etc/passwd", "n1\n"]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_names_are_refused(text: str) -> None:
    """Shell metacharacters, spaces, quotes, unicode and huge names are not hosts."""
    if text == "n1\n":
        assert Host(text) == Host("n1")  # surrounding whitespace is trimmed, not an attack
        return
    with pytest.raises(HostError):
        Host(text)
    assert not is_host(text)


def test_hostlist_expansion() -> None:
    """SLURM hostlists expand in order, with zero padding kept."""
    assert [h.name for h in expand_hosts("nid[001-004,010]")] == ["nid001", "nid002", "nid003", "nid004", "nid010"]
    assert [h.name for h in expand_hosts("n1,n[3-4]")] == ["n1", "n3", "n4"]
    assert format_hosts(expand_hosts("n[1-3],n7")) == "n[1-3,7]"


@pytest.mark.parametrize("bad", ["n[1-", "n[3-1]", ""])
def test_bad_hostlist_is_a_host_error(bad: str) -> None:
    """A malformed hostlist raises HostError naming the text."""
    with pytest.raises(HostError):
        expand_hosts(bad)


def test_hostfile_forms() -> None:
    """PBS_NODEFILE repeats, MPICH host:ppn and Open MPI slots= collapse to one entry per node, order kept."""
    text = "# comment\nn2\nn2\nn1:4\nn3 slots=8\n\nN2-hsn0\n"
    assert [h.name for h in parse_hostfile(text)] == ["n2", "n1", "n3"]


def test_unreadable_hostfile(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A missing or empty hostfile is an InputError naming the path."""
    with pytest.raises(InputError, match="nope"):
        read_hostfile(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n")
    with pytest.raises(InputError, match="no hosts"):
        read_hostfile(empty)


def test_sorting_is_natural() -> None:
    """n2 sorts before n10."""
    assert [h.name for h in sorted([Host("n10"), Host("n2"), Host("n1")])] == ["n1", "n2", "n10"]


@pytest.mark.parametrize(("line", "host"), [
    (b"nccl-tests-1-worker-1:77:77 [3] transport/p2p.cc:275 NCCL WARN Cuda failure 'unspecified launch failure'",
     "nccl-tests-1-worker-1"),
    (b"[2025-03-01 10:11:12] gpu017:4242:4300 [0] enqueue.cc:1451 NCCL WARN Cuda failure 'out of memory'", "gpu017"),
    (b"[1,4]<stdout>:node12:2048:2048 [1] NCCL WARN Cuda failure 'an illegal memory access was encountered'",
     "node12"),
])
def test_nccls_line_prefix_names_the_node_that_printed_it(line: bytes, host: str) -> None:
    """NCCL opens each line it logs with 'host:pid:tid [cudaDev] ' (src/debug.cc ncclDebugLog), after its timestamp
    or Open MPI's --tag-output tag: a local fault on that line happened on that host (heldout516)."""
    found, raw = prefix_host(line, len(line))
    assert found is not None and found.name == host and raw == host
    assert prefix_host(b"12:34:56 [0] NCCL WARN Cuda failure 'out of memory'", 48) == (None, None)
    assert prefix_host(line, 5) == (None, None)  # the prefix must end before the matched words
