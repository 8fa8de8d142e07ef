"""What a PBS test bed looks like, as pure data: its names, addresses, ports, and the files it writes.

Nothing here runs a command; :mod:`testbed.pbs` carries it out. PBS ignores every 127.x address (its address
discovery and TPP skip the loopback network), so the bed runs in a network namespace of its own whose ``lo``
carries addresses from :data:`BLOCK`: one for the server host, one per node. No host interface may carry an
address of that block (checked at ``up``), so a name in the bed's hosts file can never mean a real machine.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

#: The bed's private addresses (on the namespace's ``lo`` only, never routed).
BLOCK = ipaddress.IPv4Network("10.77.0.0/24")
HEAD = "pbshead"
#: Where PBS homes live: PBS refuses a home with a group- or world-writable directory anywhere on its path
#: ("Security violation ... resolves to /tmp", chk_file_sec), so they cannot be under /tmp with the rest of the
#: bed. One directory per bed (named by its network namespace), removed by the bed's teardown.
HOMES = Path("/var/spool/hotspare-pbs")
#: Node n (1-based) gets MOM port ``MOM_PORT + 2 * (n - 1)`` and the next one as its manager port.
MOM_PORT = 15011


class LayoutError(ValueError):
    """The bed cannot be laid out here (the message says what to change)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Where one bed lives and how it is wired. ``netns`` names its network namespace."""

    root: Path
    prefix: Path
    netns: str
    nodes: tuple[str, ...] = ("p1", "p2", "p3", "p4")
    block: ipaddress.IPv4Network = BLOCK

    def __post_init__(self) -> None:
        if len(self.nodes) + 1 > self.block.num_addresses - 12:
            raise LayoutError(f"{len(self.nodes)} nodes do not fit in {self.block}")
        if HEAD in self.nodes:
            raise LayoutError(f"{HEAD!r} is the server host's name; name the nodes otherwise")

    def address(self, name: str) -> ipaddress.IPv4Address:
        """The head gets .1 of the block, node k (0-based) gets .11+k."""
        if name == HEAD:
            return self.block.network_address + 1
        return self.block.network_address + 11 + self.nodes.index(name)

    def mom_port(self, node: str) -> int:
        return MOM_PORT + 2 * self.nodes.index(node)

    @property
    def homes(self) -> Path:
        return HOMES / self.netns

    def home(self, name: str) -> Path:
        return self.homes / name

    def conf(self, name: str) -> Path:
        return self.root / "etc" / f"pbs.conf.{name}"


def build_pbs_conf(layout: Layout, name: str) -> str:
    """The pbs.conf of the server host (``HEAD``: comm, scheduler, server; no MOM) or of one node (a MOM only,
    on its own port pair)."""
    head = name == HEAD
    lines = [
        f"PBS_SERVER={HEAD}",
        f"PBS_START_SERVER={int(head)}",
        f"PBS_START_SCHED={int(head)}",
        f"PBS_START_COMM={int(head)}",
        f"PBS_START_MOM={int(not head)}",
        f"PBS_EXEC={layout.prefix}",
        f"PBS_HOME={layout.home(name)}",
        "PBS_CORE_LIMIT=unlimited",
        "PBS_SCP=/usr/bin/scp",
    ]
    if not head:
        port = layout.mom_port(name)
        lines += [f"PBS_MOM_SERVICE_PORT={port}", f"PBS_MANAGER_SERVICE_PORT={port + 1}"]
    return "\n".join(lines) + "\n"


def build_hosts(layout: Layout, host_name: str) -> str:
    """The namespace's /etc/hosts. The machine's own name is an alias of the server host's address: commands run
    in the namespace keep the machine's hostname, and qsub must resolve its own host."""
    alias = f" {host_name}" if host_name and host_name not in (HEAD, *layout.nodes, "localhost") else ""
    lines = ["127.0.0.1 localhost", f"{layout.address(HEAD)} {HEAD}{alias}"]
    lines += [f"{layout.address(node)} {node}" for node in layout.nodes]
    return "\n".join(lines) + "\n"


def build_mom_config(max_poll_downtime_s: int) -> str:
    """Lines appended to each MOM's ``mom_priv/config``. ``$usecp``: the nodes' hostnames differ from the submit
    host's, so without it a MOM delivers .o/.e with scp; everything the bed shares is one filesystem.
    ``$max_poll_downtime``: how long a mother superior keeps a job whose sister went silent (default 300 s)."""
    return ("$usecp *:/tmp/ /tmp/\n$usecp *:/home/ /home/\n$usecp *:/root/ /root/\n"
            f"$max_poll_downtime {max_poll_downtime_s}\n")


#: Server settings for tests (one ``qmgr -c`` each). job_history_enable: ``qstat -x`` shows ended jobs.
#: scheduler_iteration (default 600 s): a requeued job would wait up to 10 min for its next cycle.
#: node_fail_requeue (default 310 s): how long a job whose mother superior died is kept before its requeue.
#: acl_roots: root may run jobs (refused by default); flatuid: a job's user@host maps to the same user here.
SERVER_SETTINGS = (
    "set server job_history_enable = True",
    "set server scheduler_iteration = 5",
    "set server node_fail_requeue = 15",
    "set server acl_roots = root",
    "set server flatuid = True",
)


def build_create_node(layout: Layout, node: str) -> str:
    return f"create node {node} Mom={node},Port={layout.mom_port(node)}"


def parse_ip_addrs(text: str) -> list[ipaddress.IPv4Interface]:
    """The IPv4 addresses in ``ip -o -4 addr show`` output."""
    found = []
    for line in text.splitlines():
        words = line.split()
        if "inet" in words and words.index("inet") + 1 < len(words):
            found.append(ipaddress.IPv4Interface(words[words.index("inet") + 1]))
    return found


def check_block(block: ipaddress.IPv4Network, host_addrs: list[ipaddress.IPv4Interface]) -> None:
    """LayoutError when an address of the host overlaps the bed's block."""
    clashes = [str(a) for a in host_addrs if a.network.overlaps(block)]
    if clashes:
        raise LayoutError(f"the host carries {', '.join(clashes)}, inside the PBS bed's block {block}: "
                          "pass another block to the bed")


def parse_node_states(text: str) -> dict[str, str]:
    """``pbsnodes -av -F json`` as {node: state} (``free``, ``down``, ``job-busy``, ``state-unknown,down``...)."""
    nodes = json.loads(text).get("nodes", {})
    return {name: str(attrs.get("state", "")) for name, attrs in nodes.items()}
