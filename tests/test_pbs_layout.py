"""The PBS bed's layout as pure data: its pbs.conf files, hosts file, node commands, address check, and the
parsing of real ``pbsnodes`` output captured from the bed (tests/data/pbs-bed)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from testbed.pbs_layout import (
    HEAD,
    HOMES,
    Layout,
    LayoutError,
    build_create_node,
    build_hosts,
    build_pbs_conf,
    check_block,
    parse_ip_addrs,
    parse_node_states,
)

DATA = Path(__file__).parent / "data" / "pbs-bed"
LAYOUT = Layout(Path("/srv/bed"), Path("/opt/pbs"), "hotspare-pbs-1-2")


def test_head_conf_starts_the_server_side_only() -> None:
    """The server host runs comm, scheduler and server, no MOM, its home under HOMES (not /tmp)."""
    conf = dict(line.split("=", 1) for line in build_pbs_conf(LAYOUT, HEAD).splitlines())
    assert (conf["PBS_START_SERVER"], conf["PBS_START_SCHED"], conf["PBS_START_COMM"], conf["PBS_START_MOM"]) == (
        "1", "1", "1", "0")
    assert conf["PBS_HOME"] == str(HOMES / "hotspare-pbs-1-2" / HEAD)
    assert conf["PBS_SERVER"] == HEAD and "PBS_MOM_SERVICE_PORT" not in conf


@pytest.mark.parametrize(("node", "ports"), [("p1", ("15011", "15012")), ("p4", ("15017", "15018"))])
def test_node_conf_is_one_mom_on_its_own_port_pair(node: str, ports: tuple[str, str]) -> None:
    """Each node's pbs.conf starts only its MOM, on ports p and p+1, with a home of its own."""
    conf = dict(line.split("=", 1) for line in build_pbs_conf(LAYOUT, node).splitlines())
    assert (conf["PBS_START_MOM"], conf["PBS_START_SERVER"]) == ("1", "0")
    assert (conf["PBS_MOM_SERVICE_PORT"], conf["PBS_MANAGER_SERVICE_PORT"]) == ports
    assert conf["PBS_HOME"].endswith(f"/{node}")
    assert build_create_node(LAYOUT, node) == f"create node {node} Mom={node},Port={ports[0]}"


@pytest.mark.parametrize(("host_name", "head_line"), [
    ("vm", "10.77.0.1 pbshead vm"),
    ("p2", "10.77.0.1 pbshead"),  # never alias a node's name
    ("", "10.77.0.1 pbshead"),
])
def test_hosts_file_names_every_host_once(host_name: str, head_line: str) -> None:
    """The namespace's hosts file: the head at .1 (the machine's own name an alias), nodes from .11."""
    lines = build_hosts(LAYOUT, host_name).splitlines()
    assert lines == ["127.0.0.1 localhost", head_line, "10.77.0.11 p1", "10.77.0.12 p2", "10.77.0.13 p3",
                     "10.77.0.14 p4"]


def test_layout_refuses_a_node_named_like_the_head() -> None:
    with pytest.raises(LayoutError, match="name the nodes otherwise"):
        Layout(Path("/b"), Path("/p"), "n", ("p1", HEAD))


IP_ADDR = """1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever preferred_lft forever
"""


def test_block_check_accepts_a_free_block_and_refuses_a_carried_one() -> None:
    """A block no host address overlaps is accepted; one the host carries is refused, naming the address."""
    addrs = parse_ip_addrs(IP_ADDR)
    assert [str(a) for a in addrs] == ["127.0.0.1/8", "192.0.2.2/24"]
    check_block(ipaddress.IPv4Network("10.77.0.0/24"), addrs)
    with pytest.raises(LayoutError, match=r"192\.0\.2\.2/24"):
        check_block(ipaddress.IPv4Network("192.0.2.0/28"), addrs)


@pytest.mark.parametrize(("capture", "states"), [
    ("pbsnodes-av-free.json", {"p1": "free", "p2": "free", "p3": "free", "p4": "free"}),
    ("pbsnodes-av-p2-down.json", {"p1": "free", "p2": "down", "p3": "free", "p4": "free"}),
])
def test_node_states_from_real_pbsnodes_json(capture: str, states: dict[str, str]) -> None:
    """Real ``pbsnodes -av -F json`` from the bed parses to each node's state."""
    assert parse_node_states((DATA / capture).read_text()) == states
