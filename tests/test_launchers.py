"""Launcher argv and hostfiles: pure builders checked against golden tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hotspare import Host, HostError
from hotspare.act.launchers import (
    LauncherKind,
    LaunchSpec,
    build_argv,
    hydra_rsh_args,
    launcher_kind,
    render_hostfile,
    render_hydra_rsh,
    write_hostfile,
    write_hydra_rsh,
)

HF = Path("/run/job/active.hostfile")
# The allocation's spellings: the launcher must see these, not the canonical names.
HOSTS = (Host("x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov"), Host("X1921C7S2B0N0"))
RAW = ("x1921c7s1b0n0-hsn0.hsn.cm.sunspot.alcf.anl.gov", "X1921C7S2B0N0")
CMD = ("python", "train.py", "--lr", "3e-4")


def spec(launcher: str, **kw: object) -> LaunchSpec:
    fields: dict[str, object] = {"launcher": launcher, "hosts": HOSTS, "ppn": 4, "command": CMD, "hostfile": HF}
    fields.update(kw)
    return LaunchSpec(**fields)  # type: ignore[arg-type]


ARGV = [
    ("mpiexec", (), ["mpiexec", "--hostfile", str(HF), "-n", "8", "--ppn", "4", *CMD]),
    ("mpiexec", ("--cpu-bind", "depth"), ["mpiexec", "--hostfile", str(HF), "-n", "8", "--ppn", "4", "--cpu-bind", "depth", *CMD]),
    ("srun", (), ["srun", f"--nodelist={RAW[0]},{RAW[1]}", "-N", "2", "--ntasks-per-node", "4", "-n", "8", "--kill-on-bad-exit=1", "--overlap", *CMD]),
    ("srun", ("--gpus-per-task=1",), ["srun", f"--nodelist={RAW[0]},{RAW[1]}", "-N", "2", "--ntasks-per-node", "4", "-n", "8", "--kill-on-bad-exit=1", "--overlap", "--gpus-per-task=1", *CMD]),
    ("mpirun", (), ["mpirun", "--hostfile", str(HF), "-n", "8", "--map-by", "ppr:4:node", *CMD]),
    ("local", (), [sys.executable, "-P", "-m", "hotspare.sim.local_launcher", "--hostfile", str(HF), "--ppn", "4", "--", *CMD]),
    ("local", ("--pids", "/run/job/pids.json"), [sys.executable, "-P", "-m", "hotspare.sim.local_launcher", "--hostfile", str(HF), "--ppn", "4", "--pids", "/run/job/pids.json", "--", *CMD]),
]


@pytest.mark.parametrize(("launcher", "extra", "want"), ARGV)
def test_build_argv_golden(launcher: str, extra: tuple[str, ...], want: list[str]) -> None:
    """Each launcher's argv is exactly the documented one, hosts in their raw spelling."""
    assert build_argv(spec(launcher, extra_args=extra)) == want


def test_srun_never_passes_no_kill() -> None:
    """A step must end when a task dies: --no-kill belongs to the allocation, never the step."""
    argv = build_argv(spec("srun"))
    assert not any(a.startswith(("--no-kill", "-k")) for a in argv)


HOSTFILES = [
    ("mpiexec", 4, f"{RAW[0]}\n{RAW[1]}\n"),
    ("srun", 4, f"{RAW[0]}\n{RAW[1]}\n"),
    ("local", 2, f"{RAW[0]}\n{RAW[1]}\n"),
    ("mpirun", 4, f"{RAW[0]} slots=4\n{RAW[1]} slots=4\n"),
    ("mpirun", 1, f"{RAW[0]} slots=1\n{RAW[1]} slots=1\n"),
]


@pytest.mark.parametrize(("launcher", "ppn", "want"), HOSTFILES)
def test_render_hostfile_golden(launcher: str, ppn: int, want: str) -> None:
    """Hostfiles write one line per host in the form that launcher reads, using host.raw."""
    assert render_hostfile(HOSTS, launcher, ppn) == want


def test_render_hostfile_keeps_pbs_cpu_suffix_raw() -> None:
    """A PBS exec_host spelling is written as given, not as its canonical name."""
    assert render_hostfile([Host("gpu-2-17/11")], "mpiexec", 1) == "gpu-2-17/11\n"


@pytest.mark.parametrize("hostile", ["n1; rm -rf /", "n1 n2", "n1'", 'n1"', "n1\nn2", "nœud1", "$(reboot)", ""])
def test_hostile_host_never_reaches_a_hostfile_or_argv(hostile: str) -> None:
    """A host whose raw text is not a host (from a log, or tampered) is refused by every builder."""
    host = Host("n1")
    host.raw = hostile
    with pytest.raises(HostError):
        render_hostfile([host, Host("n2")], "mpiexec", 1)
    with pytest.raises(ValueError, match="refusing"):
        build_argv(spec("srun", hosts=(host,)))


BAD_SPECS = [
    ({"launcher": "aprun"}, r"unknown launcher 'aprun'.*mpiexec, srun, mpirun, local"),
    ({"ppn": 0}, r"ppn 0 .*1 or more"),
    ({"ppn": -2}, r"ppn -2"),
    ({"ppn": True}, r"ppn True"),
    ({"hosts": ()}, r"hosts is empty"),
    ({"command": ()}, r"command is empty.*give the program"),
    ({"hosts": (Host("n1"), Host("N1.example.org"))}, r"'N1.example.org' is listed twice.*'n1'"),
]


@pytest.mark.parametrize(("change", "message"), BAD_SPECS)
def test_launch_spec_validation(change: dict[str, object], message: str) -> None:
    """A bad spec fails at construction, naming the bad value and the fix."""
    with pytest.raises(ValueError, match=message):
        spec(**{"launcher": "mpiexec", **change})  # type: ignore[arg-type]


def test_render_hostfile_validates_its_arguments() -> None:
    """render_hostfile refuses an unknown launcher, a bad ppn and no hosts."""
    for args, message in [((HOSTS, "aprun", 1), "unknown launcher"), ((HOSTS, "mpirun", 0), "ppn 0"), (((), "srun", 1), "no hosts")]:
        with pytest.raises(ValueError, match=message):
            render_hostfile(*args)  # type: ignore[arg-type]


def test_write_hostfile_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    """The hostfile is replaced whole; no temp file is left beside it, on success or failure."""
    path = tmp_path / "active.hostfile"
    path.write_text("old\n")
    write_hostfile(path, render_hostfile(HOSTS, "mpirun", 2))
    assert path.read_text() == f"{RAW[0]} slots=2\n{RAW[1]} slots=2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["active.hostfile"]
    with pytest.raises(UnicodeEncodeError):
        write_hostfile(path, "\udcff")  # a lone surrogate cannot be encoded: the write fails midway
    assert path.read_text() == f"{RAW[0]} slots=2\n{RAW[1]} slots=2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["active.hostfile"]


def test_launcher_kinds_are_values_that_still_read_as_names(tmp_path: Path) -> None:
    """A plain launcher name becomes its LauncherKind, which equals and stores as the name; unknown names are
    refused with the choices."""
    spec = LaunchSpec(launcher="mpirun", hosts=(Host("n1"),), ppn=1, command=("true",), hostfile=tmp_path / "h")
    assert spec.launcher is LauncherKind.MPIRUN and spec.launcher == "mpirun" and f"{spec.launcher}" == "mpirun"
    assert launcher_kind(LauncherKind.SRUN) is LauncherKind.SRUN
    with pytest.raises(ValueError, match="choose one of mpiexec, srun, mpirun, local"):
        launcher_kind("aprun")


def test_render_hydra_rsh_golden() -> None:
    """The wrapper for --launcher-rsh: the host first, then the command line Hydra gave, run by a shell."""
    assert render_hydra_rsh("/opt/pbs/bin/pbs_tmrsh") == (
        "#!/bin/sh\n# Written by hotspare (--launcher-rsh): Hydra's rsh launcher passes a command line for a "
        "remote shell;\n# this remote shell runs its arguments without one, so one is given here.\n"
        'host="$1"; shift\nexec /opt/pbs/bin/pbs_tmrsh "$host" /bin/sh -c "$*"\n')
    assert render_hydra_rsh("/my dir/tmrsh").splitlines()[-1].startswith("exec '/my dir/tmrsh' ")
    assert hydra_rsh_args(Path("/r/hydra-rsh")) == ("-launcher", "rsh", "-launcher-exec", "/r/hydra-rsh")
    with pytest.raises(ValueError, match="empty or padded"):
        render_hydra_rsh(" pbs_tmrsh")


def test_hydra_rsh_unquotes_the_proxy_path_as_a_remote_shell_would(tmp_path: Path) -> None:
    """Hydra's rsh call (``EXEC HOST "/path/proxy" ARGS``, the path quoted for a remote shell; seen on the PBS bed)
    through the wrapper reaches the remote shell as ``HOST /bin/sh -c LINE``: the proxy runs with its arguments."""
    fake = tmp_path / "tmrsh"  # a remote shell that drops the host and runs the rest, as tm_spawn would
    fake.write_text('#!/bin/sh\necho "host=$1"; shift; exec "$@"\n')
    fake.chmod(0o755)
    wrapper = tmp_path / "hydra-rsh"
    write_hydra_rsh(wrapper, str(fake))
    done = subprocess.run([str(wrapper), "p2", '"/bin/echo"', "--control-port", "p1:38583"], capture_output=True,
                          text=True, timeout=10, check=True)
    assert done.stdout.splitlines() == ["host=p2", "--control-port p1:38583"]
