"""Robust reading (issue 11 item 5): wrapped pastes, per-line prefixes, placeholders and spoofs, IPv4 hosts;
and `classify --explain`."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from hotspare import FailureClass, Host, PatternSet, classify, load_patterns, scan
from hotspare.evidence.classify import Verdict


@pytest.fixture(scope="module")
def patterns() -> PatternSet:
    return load_patterns()


def verdict(text: str, patterns: PatternSet, **kw) -> Verdict:  # type: ignore[no-untyped-def]
    return classify(scan(text.encode(), patterns), **kw)


# Lines whose verdict names a host, each with the host: the property tests damage them as pastes do.
NAMED = [
    ("mpirun noticed that process rank 3 with PID 4242 on node gpu17 exited on signal 9 (Killed).", "gpu17"),
    ("srun: error: Node failure on compute17", "compute17"),
    ("x1921c7s1b0n0: rank 5 died from signal 9", "x1921c7s1b0n0"),
    ("srun: error: nid001321: tasks 4-7: Killed", "nid001321"),
]
PREFIXES = [
    "[rank3]: ", "3: ", "  12: ", "login01: ", "2026-11-29T09:28:02.123456Z ", "2026-11-29 09:28:02,123 ",
    "2026-11-29T09:28:02.123456789Z stderr F ", "Nov 29 09:28:02 ", "(raylet, ip=10.1.2.3) ",
    "(pid=4242, ip=10.1.2.3) ", "[1,0]<stderr>: ", "[ 1234.567890] ",
]


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(NAMED), width=st.sampled_from([72, 80, 100, 120, 132]), lead=st.integers(1, 60))
def test_hard_wrapped_lines_are_rejoined(case: tuple[str, str], width: int, lead: int, patterns: PatternSet) -> None:
    """A line a terminal cut at exactly 72/80/100/120/132 columns still names its host, whatever the cut hits."""
    line, host = case
    text = "[" + "z" * lead + "] " + line  # a tag of any length moves the cut across the line
    pieces = [text[i : i + width] for i in range(0, len(text), width)]
    got = verdict("starting\n" + "\n".join(pieces) + "\n", patterns, rc=1)
    assert Host(host) in got.blamed_hosts, (pieces, got.reason)


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(NAMED), cut=st.integers(45, 70))
def test_soft_wrapped_lines_are_rejoined(case: tuple[str, str], cut: int, patterns: PatternSet) -> None:
    """A mail or Markdown renderer wraps at a space: the space is gone, the line is still read whole."""
    line, host = case
    if len(line) <= cut:
        return
    at = line.rfind(" ", 0, cut)
    if at < 40:
        return
    got = verdict(line[:at] + "\n" + line[at + 1 :] + "\n", patterns, rc=1)
    assert Host(host) in got.blamed_hosts, got.reason


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(NAMED), cut=st.integers(45, 70), pad=st.sampled_from(["", " ", "   ", "\t"]),
       indent=st.sampled_from(["", "    ", "\t"]))
def test_blanks_at_a_wrap_or_a_lines_end_read_as_printed(case: tuple[str, str], cut: int, pad: str, indent: str,
                                                          patterns: PatternSet) -> None:
    """A paste pads lines with blanks (a mail archive, a terminal copy) and indents a block (Markdown's four
    spaces, a tab): a line wrapped at a space, its space kept or not, still reads whole, once."""
    line, host = case
    at = line.rfind(" ", 0, cut)
    if len(line) <= cut or at < 40:
        return
    text = f"{indent}{line[:at]}{pad}\n{indent}{line[at + 1:]}{pad}\n"
    got = verdict(text, patterns, rc=1)
    assert Host(host) in got.blamed_hosts, (text, got.reason)
    assert verdict(f"{indent}{line}{pad}\n", patterns, rc=1).blamed_hosts == got.blamed_hosts


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(NAMED), prefix=st.lists(st.sampled_from(PREFIXES), min_size=1, max_size=2))
def test_line_prefixes_do_not_hide_a_line(case: tuple[str, str], prefix: list[str], patterns: PatternSet) -> None:
    """srun -l, [rankN]:, pdsh host:, timestamps (ISO, syslog, Kubernetes), Ray's (raylet, ip=...) prefixes."""
    line, host = case
    got = verdict("".join(prefix) + line + "\n", patterns, rc=1)
    assert Host(host) in got.blamed_hosts, got.reason


@pytest.mark.parametrize("placeholder", [
    "xxxx", "XXXXX", "<hostname>", "NODE", "hostname", "node", "localhost", "0.0.0.0", "127.0.0.1", "...",  # noqa: S104
    "your-host", "<node>", "worker-X", "node_X", "vgcnbwc-worker-xxxxxxx", "gpu-node.xxxx", "XYZ",
    "hostname2", "nodename1", "LOCAL", "local",
    "somename-gpu-dcgm-exporter-aaa5", "yourname",  # a stand-in word for the name's own part (heldout710)
    "mymachine.com", "yourhost.example.org", "hostname.domain", "node.cluster.local",  # a stand-in given a domain
])
def test_placeholders_are_never_blamed(placeholder: str, patterns: PatternSet) -> None:
    """Documentation and redacted pastes write a stand-in where the host was: nothing is blamed on it."""
    for line in (f"srun: error: Node failure on {placeholder}",
                 f"mpirun noticed that process rank 3 with PID 42 on node {placeholder} exited on signal 9 (Killed)."):
        got = verdict(line + "\n", patterns, rc=1)
        assert got.blamed_hosts == () and got.exclude_hosts == (), (line, got.reason)


def test_a_name_with_x_in_it_is_still_a_host(patterns: PatternSet) -> None:
    """Only a run of x's standing where a name's last part was is a placeholder; real names keep their x's."""
    for name in ("maxx-01", "box-x1", "worker-xx"):
        got = verdict(f"srun: error: Node failure on {name}\n", patterns, rc=1)
        assert [h.name for h in got.blamed_hosts] == [name], (name, got.reason)



def test_a_name_that_only_starts_with_a_stand_in_word_is_still_a_host(patterns: PatternSet) -> None:
    """Only the stand-in word itself, alone or before a separator, makes a placeholder (heldout710)."""
    for name in ("mynamespace-7", "somenames01", "yournamehost"):
        got = verdict(f"srun: error: Node failure on {name}\n", patterns, rc=1)
        assert [h.name for h in got.blamed_hosts] == [name], (name, got.reason)

SPOOFS = [
    # an address inside a link is a web server, not a node of the job
    ("srun: error: Node failure on https://10.20.30.40/status", ()),
    # a sentence's full stop is not part of the host; the host is kept whole
    ("srun: error: Node failure on compute17.", ("compute17",)),
    # IPv4 addresses are hosts, kept whole (never cut at the first dot like a domain name)
    ("mpirun noticed that process rank 0 with PID 7 on node 10.1.2.3 exited on signal 9 (Killed).", ("10.1.2.3",)),
    # a teardown line names a victim, never the origin
    ("srun: error: n3: task 2: Terminated", ()),
    # a time limit starts nowhere, whatever host printed it
    ("slurmstepd: error: *** JOB 19 ON n4 CANCELLED AT 2026-11-29T09:34:47 DUE TO TIME LIMIT ***", ()),
]


@pytest.mark.parametrize(("line", "blamed"), SPOOFS)
def test_spoofs(line: str, blamed: tuple[str, ...], patterns: PatternSet) -> None:
    got = verdict(line + "\n", patterns, rc=1)
    assert tuple(h.name for h in got.blamed_hosts) == blamed, got.reason


def test_ipv4_host_compares_whole() -> None:
    """10.1.2.3 and 10.1.2.4 are two hosts (a domain name is cut at its first dot; an address never is)."""
    assert Host("10.1.2.3") != Host("10.1.2.4") and Host("10.1.2.3").name == "10.1.2.3"


def test_prefix_does_not_turn_a_hostless_line_into_a_host(patterns: PatternSet) -> None:
    """PALS's unprefixed teardown line stays hostless: a pdsh-style prefix is not read as its host."""
    got = verdict("x1921c7s1b0n0: rank 5 died from signal 9\nrank 6 died from signal 15\n", patterns, rc=1)
    assert got.blamed_hosts == (Host("x1921c7s1b0n0"),)


def test_explain_names_rule_lines_and_refusals(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`classify --explain`: the rule, the lines used as file:line, and each host not blamed with the reason."""
    log = tmp_path / "job.log"
    log.write_text(
        "srun: error: n2: task 3: Segmentation fault (core dumped)\n"
        "srun: error: n1: tasks 0-1: Terminated\n"
        "mpirun noticed that process rank 2 with PID 8 on node xxxx exited on signal 11 (Segmentation fault).\n"
        "mpirun noticed that process rank 1 with PID 9 on node login9 exited on signal 6 (Aborted).\n"
    )
    table = run_cli("classify", "--explain", "--rc", "139", "--hosts", "n[1-3]", str(log))
    assert table.returncode == 0, table.stderr
    assert f"used     {log}:1" in table.stdout
    assert "refused  n1" in table.stdout and "teardown" in table.stdout
    assert "refused  xxxx" in table.stdout and "placeholder" in table.stdout
    assert "refused  login9" in table.stdout and "not a host of the allocation" in table.stdout
    record = json.loads(run_cli("classify", "--explain", "--json", "--rc", "139", str(log)).stdout)
    assert record["blamed_hosts"] == ["n2"] and record["exclude_hosts"] == []
    assert record["failure_class"] == FailureClass.RANK_KILLED.value  # a crash first (issue 20), not excluded
    assert record["explain"]["lines"][0]["line"] == 1
    assert {r["host"] for r in record["explain"]["refused"]} >= {"n1", "xxxx"}


def test_a_fragment_of_a_rejoined_line_is_not_a_second_host(patterns: PatternSet) -> None:
    """Cut inside the host name: the tail read alone ("0n0: rank 5 died ...") must not become a second killed
    host (two killed hosts would read as a job-wide kill and name nobody)."""
    line = "[" + "z" * 59 + "] x1921c7s1b0n0: rank 5 died from signal 9"  # cut at 72 columns, inside the name
    cut = line.index("b0n0") + 1
    got = verdict("starting\n" + line[:cut] + "\n" + line[cut:] + "\n", patterns, rc=1)
    assert got.blamed_hosts == (Host("x1921c7s1b0n0"),), got.reason


@pytest.mark.parametrize("listed", ["['n1', 'n2']", '["n1", "n2"]', "[n1,n2]"])
def test_a_host_list_printed_as_a_python_or_json_list_names_each_host(listed: str, patterns: PatternSet) -> None:
    """OAR logs the nodes it suspects as Python's str() of a list ('nodes: ['n1', 'n2']'); JSON quotes them alike:
    the quotes and the ', ' between names are the list's, not part of a host's name."""
    got = verdict(f"[bipbip] OAR suspects nodes, job: 42, nodes: {listed}\n", patterns)
    assert sorted(h.name for h in got.blamed_hosts) == ["n1", "n2"], got.reason


def test_a_real_name_with_a_domain_is_still_a_host(patterns: PatternSet) -> None:
    """Only a stand-in's first label makes a name with a domain a placeholder (heldout527's "mymachine.com");
    a real node's full name, and one whose domain holds a stand-in word, keep their host."""
    for name, short in (("compute17.cluster.org", "compute17"), ("n0025.lr6", "n0025"),
                        ("rs0.informatik.hs-fulda.de", "rs0"), ("gpu3.mymachine.com", "gpu3"), ("node.9cb7", "node")):
        got = verdict(f"srun: error: Node failure on {name}\n", patterns, rc=1)
        assert [h.name for h in got.blamed_hosts] == [short], (name, got.reason)
