"""Build OpenPBS from a source tarball once, into a cache outside the checkout, and reuse it.

``ensure_openpbs()`` returns an install prefix (``bin/qsub``, ``sbin/pbs_server``, ...). Where it comes from, in
order: an existing install named by ``HOTSPARE_OPENPBS_PREFIX``; a tarball named by ``HOTSPARE_OPENPBS_SRC``; the
shared one beside the checkout (``<checkout>/../shared/vendor/openpbs-*.tar.gz``); else the pinned commit's
archive downloaded from GitHub, accepted only if its unpacked tree hashes to :data:`TREE_SHA256` (a digest of the
files' relative paths, bytes and exec bits, so any archive of that commit matches, whatever its packing).

A tarball builds into ``<cache>/openpbs/<sha256[:12]>/`` (``prefix/``, ``build.log``, ``src/``), the cache being
``$HOTSPARE_CACHE``, else ``$XDG_CACHE_HOME/hotspare``, else ``~/.cache/hotspare``. The stamp ``installed.json``
is written (atomically) only after a whole install, so an interrupted build is redone and a finished one reused.
As root, the Debian packages the build and the daemons need are installed first when missing (apt-get).

Nothing is written outside the cache: no ``/etc/pbs.conf`` (``pbs_postinstall``, which writes it and installs
``/etc/init.d/pbs``, is not run), and ``make install`` is told to put the profile scripts and systemd unit it
would write into /etc/profile.d and /lib/systemd/system under the prefix instead. The bed gives every daemon and command its own ``PBS_CONF_FILE``, and ``pbs_habitat`` run that way calls
``pbs_postinstall ... sameconf``, which only creates the PBS home.

Usage: ``python tests/testbed/pbs_build.py`` prints the prefix (building first if needed), or one ``error:`` line.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

#: The OpenPBS commit the bed is written against (master; it reports itself as 23.06.06).
COMMIT = "cd7ab5edaf03dcac2f1cb9e2f42d75eb117d468a"
ARCHIVE_URL = f"https://github.com/openpbs/openpbs/archive/{COMMIT}.tar.gz"
#: :func:`tree_digest` of that commit's tree (computed from ../shared/vendor/openpbs-cd7ab5edaf03.tar.gz).
TREE_SHA256 = "1b83452a151adb3f54d716e732c5cfd41a4fa9ed7124919bb9dc66766bfc16f2"

# The trial's list (docs: ../shared/research/openpbs.md) with Debian 12's real names for the virtual
# ncurses-dev and libexpat-dev: dpkg-query never reports a virtual package as installed.
BUILD_PACKAGES = (
    "gcc", "g++", "make", "libtool", "autoconf", "automake", "perl", "swig", "python3-dev", "libhwloc-dev",
    "libx11-dev", "libxt-dev", "libxext-dev", "libxft-dev", "libedit-dev", "libical-dev", "libncurses-dev",
    "postgresql-server-dev-all", "postgresql-contrib", "tcl-dev", "tk-dev", "libexpat1-dev", "libssl-dev",
    "libcjson-dev",
)
RUN_PACKAGES = ("expat", "libedit2", "postgresql", "python3", "sendmail-bin", "sudo", "tcl", "tk", "libical3",
                "libcjson1")
#: Programs the client needs setuid root (pbs_iff authenticates by a reserved port; pbs_rcp copies as the user).
SETUID = ("sbin/pbs_iff", "sbin/pbs_rcp")
#: What an install must hold to be used.
INSTALLED = ("bin/qsub", "bin/qstat", "bin/pbsnodes", "bin/qmgr", "sbin/pbs_server", "sbin/pbs_mom",
             "sbin/pbs_sched", "sbin/pbs_comm", "libexec/pbs_habitat")
STAMP = "installed.json"
#: Bumped when the recipe changes what an install holds: a stamp of another recipe is rebuilt. 2: nothing is
#: installed outside the prefix (1 let ``make install`` write /etc/profile.d/pbs.{sh,csh} and the systemd unit).
RECIPE = 2
BUILD_TIMEOUT_S = 3600.0


class PbsBuildError(RuntimeError):
    """OpenPBS could not be found or built. The message is one line: what to set or install, and the log."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where the install comes from: ``prefix`` (use as is), ``tarball`` (build) or ``download`` (fetch, check,
    build). ``why`` names the setting or place that chose it."""

    kind: str
    path: Path | None
    why: str


# -- where things are (pure) -------------------------------------------------------
def cache_root(environ: Mapping[str, str]) -> Path:
    """The cache directory: ``$HOTSPARE_CACHE``, else ``$XDG_CACHE_HOME/hotspare``, else ``~/.cache/hotspare``."""
    if environ.get("HOTSPARE_CACHE"):
        return Path(environ["HOTSPARE_CACHE"])
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"]) / "hotspare"
    return Path(environ.get("HOME") or Path.home()) / ".cache" / "hotspare"


def build_dir(cache: Path, tarball_sha256: str) -> Path:
    """Where one tarball's build lives: keyed by the first 12 hex digits of the tarball's sha256."""
    return cache / "openpbs" / tarball_sha256[:12]


def choose_source(environ: Mapping[str, str], checkout: Path) -> Source:
    """The first source present, in the documented order; ``download`` when there is none on disk."""
    if environ.get("HOTSPARE_OPENPBS_PREFIX"):
        return Source("prefix", Path(environ["HOTSPARE_OPENPBS_PREFIX"]), "HOTSPARE_OPENPBS_PREFIX")
    if environ.get("HOTSPARE_OPENPBS_SRC"):
        return Source("tarball", Path(environ["HOTSPARE_OPENPBS_SRC"]), "HOTSPARE_OPENPBS_SRC")
    shared = sorted((checkout.parent / "shared" / "vendor").glob("openpbs-*.tar.gz"))
    if shared:
        return Source("tarball", shared[-1], "the shared vendor directory")
    return Source("download", None, ARCHIVE_URL)


def missing_files(prefix: Path) -> list[str]:
    """The parts of an install absent under ``prefix``."""
    return [rel for rel in INSTALLED if not (prefix / rel).exists()]


# -- the tree digest (pure over entries) ---------------------------------------------
def tree_digest(entries: Iterable[tuple[str, str, bytes]]) -> str:
    """sha256 over (relative path, kind, bytes) sorted by path. Kind is ``x`` (executable file), ``f`` (file) or
    ``l`` (symlink; bytes are its target). Directories, owners, modes other than the exec bit and mtimes do not
    count, so two archives of one tree hash the same."""
    digest = hashlib.sha256()
    for path, kind, data in sorted(entries):
        digest.update(b"%s\0%s\0%d\0" % (path.encode(), kind.encode(), len(data)))
        digest.update(data)
    return digest.hexdigest()


def _strip_top(name: str) -> str:
    """``openpbs-<hash>/src/x.c`` -> ``src/x.c``: archives of one commit differ only in the top directory."""
    parts = Path(name).parts
    return "/".join(parts[1:])


def tarball_entries(tarball: Path) -> Iterator[tuple[str, str, bytes]]:
    """A ``.tar.gz``'s files as :func:`tree_digest` entries, its single top directory stripped."""
    with tarfile.open(tarball, "r:*") as archive:
        for member in archive:
            rel = _strip_top(member.name)
            if member.isdir() or not rel:
                continue
            if member.issym():
                yield rel, "l", member.linkname.encode()
            elif member.isfile():
                handle = archive.extractfile(member)
                assert handle is not None  # a regular member always has data
                yield rel, "x" if member.mode & 0o111 else "f", handle.read()
            else:
                raise PbsBuildError(f"{tarball}: unexpected member {member.name!r} (type {member.type!r})")


def directory_entries(root: Path) -> Iterator[tuple[str, str, bytes]]:
    """An unpacked tree's files as :func:`tree_digest` entries (paths relative to ``root``)."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            yield rel, "l", os.readlink(path).encode()
        elif path.is_file():
            yield rel, "x" if path.stat().st_mode & 0o111 else "f", path.read_bytes()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_tree(tarball: Path, expected: str = TREE_SHA256) -> None:
    """PbsBuildError unless the tarball's tree digest is ``expected``."""
    got = tree_digest(tarball_entries(tarball))
    if got != expected:
        raise PbsBuildError(f"{tarball}: tree digest {got} is not the pinned {expected} (commit {COMMIT}); "
                            "set HOTSPARE_OPENPBS_SRC to a tarball of that commit")


# -- packages ------------------------------------------------------------------------
def missing_packages(names: Iterable[str]) -> list[str]:
    """The Debian packages of ``names`` not installed (all of them when dpkg-query is absent)."""
    if shutil.which("dpkg-query") is None:
        return list(names)
    missing = []
    for name in names:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True,
                              timeout=60, check=False)
        if "install ok installed" not in done.stdout:
            missing.append(name)
    return missing


def ensure_packages(log: Path) -> None:
    """Install the build and run packages that are missing (as root, by apt-get), or PbsBuildError."""
    missing = missing_packages((*BUILD_PACKAGES, *RUN_PACKAGES))
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise PbsBuildError(f"OpenPBS needs the Debian packages {' '.join(missing)}: install them as root "
                            "(or set HOTSPARE_OPENPBS_PREFIX to an existing install)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    _step(["apt-get", "update", "-qq"], log, env=env)
    _step(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], log, env=env)


# -- building ----------------------------------------------------------------------------
def _step(argv: list[str], log: Path, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> None:
    """Run one build step, its output appended to ``log``; PbsBuildError naming the step and the log."""
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        try:
            done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                  timeout=BUILD_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PbsBuildError(f"OpenPBS build step `{argv[0]}` failed ({exc}); see {log}") from exc
    if done.returncode != 0:
        raise PbsBuildError(f"OpenPBS build step `{' '.join(argv[:3])}` exited {done.returncode}; see {log}")


def build_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The build's environment: system tools first on PATH, so a venv's or pyenv's python3 and python3-config
    are not the ones configure links the daemons against (PYTHON is given too)."""
    return dict(environ, PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                PYTHON="/usr/bin/python3", LC_ALL="C")


def build_tarball(tarball: Path, where: Path, environ: Mapping[str, str], jobs: int = 2) -> Path:
    """Unpack ``tarball`` into ``where/src``, build and install into ``where/prefix``; return the prefix."""
    log, src, prefix = where / "build.log", where / "src", where / "prefix"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(prefix, ignore_errors=True)
    src.mkdir(parents=True)
    log.write_bytes(b"")
    ensure_packages(log)
    with tarfile.open(tarball, "r:*") as archive:
        archive.extractall(src, filter="tar")
    tops = [p for p in src.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise PbsBuildError(f"{tarball}: expected one top directory, found {len(tops)}; see {log}")
    tree, env = tops[0], build_env(environ)
    _step(["./autogen.sh"], log, cwd=tree, env=env)
    _step(["./configure", f"--prefix={prefix}", "PYTHON=/usr/bin/python3"], log, cwd=tree, env=env)
    _step(["make", f"-j{jobs}"], log, cwd=tree, env=env)
    # Its Makefiles install pbs.sh/pbs.csh into /etc/profile.d and pbs.service into systemd's unit directory
    # whatever the prefix: both inside the prefix instead, so a build touches nothing else on the machine.
    _step(["make", "install", f"sysprofiledir={prefix / 'etc' / 'profile.d'}",
           f"unitfiledir={prefix / 'lib' / 'systemd' / 'system'}"], log, cwd=tree, env=env)
    for rel in SETUID:
        os.chown(prefix / rel, 0, 0)
        (prefix / rel).chmod(0o4755)
    if missing_files(prefix):
        raise PbsBuildError(f"OpenPBS installed without {', '.join(missing_files(prefix))}; see {log}")
    shutil.rmtree(src, ignore_errors=True)  # 300 MB of objects; the log keeps what happened
    return prefix


def write_stamp(where: Path, record: Mapping[str, object]) -> None:
    """The stamp, written whole or not at all (temp file + rename)."""
    with tempfile.NamedTemporaryFile("w", dir=where, delete=False, suffix=".tmp") as tmp:
        json.dump(dict(record), tmp, indent=1)
    os.replace(tmp.name, where / STAMP)


def read_stamp(where: Path) -> dict[str, object] | None:
    """The stamp of a finished install, or None (absent, unreadable, or its prefix gone)."""
    try:
        record = json.loads((where / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("recipe") != RECIPE:
        return None
    if missing_files(Path(str(record.get("prefix", "")))):
        return None
    return record


@contextlib.contextmanager
def _locked(where: Path) -> Iterator[None]:
    """One build per cache directory at a time: a second caller waits, then finds the stamp."""
    where.mkdir(parents=True, exist_ok=True)
    with (where / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def download(cache: Path) -> Path:
    """The pinned commit's archive from GitHub into the cache, kept only if its tree matches the pin."""
    target = cache / "downloads" / f"openpbs-{COMMIT}.tar.gz"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    try:
        with urllib.request.urlopen(ARCHIVE_URL, timeout=120) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise PbsBuildError(f"no OpenPBS source: set HOTSPARE_OPENPBS_SRC to a tarball of commit {COMMIT} or "
                            f"HOTSPARE_OPENPBS_PREFIX to an install (downloading {ARCHIVE_URL} failed: {exc})"
                            ) from exc
    try:
        verify_tree(partial)
    except PbsBuildError:
        partial.unlink(missing_ok=True)
        raise
    partial.rename(target)
    return target


def ensure_openpbs(environ: Mapping[str, str] | None = None, checkout: Path | None = None) -> Path:
    """An OpenPBS install prefix: the named one, a cached build, or a fresh build (see the module docstring)."""
    environ = os.environ if environ is None else environ
    checkout = checkout or Path(__file__).resolve().parents[2]
    source = choose_source(environ, checkout)
    if source.kind == "prefix":
        assert source.path is not None
        if missing_files(source.path):
            raise PbsBuildError(f"HOTSPARE_OPENPBS_PREFIX={source.path} lacks {', '.join(missing_files(source.path))}")
        return source.path
    cache = cache_root(environ)
    tarball = source.path or download(cache)
    if not tarball.is_file():
        raise PbsBuildError(f"{source.why} names {tarball}, which is not a file: set HOTSPARE_OPENPBS_SRC to an "
                            "OpenPBS source tarball")
    sha = file_sha256(tarball)
    where = build_dir(cache, sha)
    with _locked(where):
        stamp = read_stamp(where)
        if stamp is not None:
            return Path(str(stamp["prefix"]))
        started = time.monotonic()
        prefix = build_tarball(tarball, where, environ)
        write_stamp(where, {"recipe": RECIPE, "prefix": str(prefix), "tarball": str(tarball), "tarball_sha256": sha,
                            "build_s": round(time.monotonic() - started, 1), "built_at": time.time()})
    return prefix


def main() -> int:
    try:
        print(ensure_openpbs())
    except PbsBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
