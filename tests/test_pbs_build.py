"""The OpenPBS build cache: where it lives, which source it takes, the tree digest that pins a download, the
stamp that makes a second call reuse a build, and the one-line errors when there is nothing to build."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from testbed import pbs_build
from testbed.pbs_build import (
    INSTALLED,
    PbsBuildError,
    build_dir,
    cache_root,
    choose_source,
    directory_entries,
    ensure_openpbs,
    file_sha256,
    tarball_entries,
    tree_digest,
    verify_tree,
    write_stamp,
)

SCRIPT = Path(pbs_build.__file__)
CHECKOUT = SCRIPT.resolve().parents[2]


@pytest.mark.parametrize(("environ", "expected"), [
    ({"HOTSPARE_CACHE": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/c"),
    ({"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/hotspare"),
    ({"HOME": "/h"}, "/h/.cache/hotspare"),
    ({"HOTSPARE_CACHE": "", "XDG_CACHE_HOME": "", "HOME": "/h"}, "/h/.cache/hotspare"),
])
def test_cache_root_order(environ: dict[str, str], expected: str) -> None:
    """The cache is $HOTSPARE_CACHE, else $XDG_CACHE_HOME/hotspare, else ~/.cache/hotspare (empty means unset)."""
    assert cache_root(environ) == Path(expected)


def test_source_order(tmp_path: Path) -> None:
    """An install named by HOTSPARE_OPENPBS_PREFIX wins, then HOTSPARE_OPENPBS_SRC, then the shared tarball
    beside the checkout, then the pinned download."""
    checkout = tmp_path / "repo"
    vendor = tmp_path / "shared" / "vendor"
    vendor.mkdir(parents=True)
    assert choose_source({}, checkout).kind == "download"
    (vendor / "openpbs-abc.tar.gz").write_bytes(b"")
    assert choose_source({}, checkout).path == vendor / "openpbs-abc.tar.gz"
    assert choose_source({"HOTSPARE_OPENPBS_SRC": "/s.tgz"}, checkout).path == Path("/s.tgz")
    both = {"HOTSPARE_OPENPBS_SRC": "/s.tgz", "HOTSPARE_OPENPBS_PREFIX": "/opt/pbs"}
    assert (choose_source(both, checkout).kind, choose_source(both, checkout).path) == ("prefix", Path("/opt/pbs"))


def _tree(root: Path) -> Path:
    (root / "src" / "lib").mkdir(parents=True)
    (root / "README").write_text("openpbs\n")
    (root / "src" / "lib" / "a.c").write_text("int a;\n")
    (root / "autogen.sh").write_text("#!/bin/sh\nexit 0\n")
    (root / "autogen.sh").chmod(0o755)
    (root / "link").symlink_to("README")
    return root


def _pack(tree: Path, out: Path, top: str, reverse: bool, *, mtime: int = 0, owner: str = "root") -> Path:
    """A tar.gz of ``tree`` under directory ``top``: members in forward or reverse order, one mtime, one owner."""
    paths = sorted(tree.rglob("*"), reverse=reverse)
    with tarfile.open(out, "w:gz") as archive:
        for path in paths:
            info = archive.gettarinfo(str(path), f"{top}/{path.relative_to(tree).as_posix()}")
            info.mtime, info.uname, info.gname = mtime, owner, owner
            data = path.read_bytes() if info.isfile() else None
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return out


def test_tree_digest_ignores_how_the_tree_was_packed(tmp_path: Path) -> None:
    """Two archives of one tree (other top directory, member order, mtimes, owners) have one tree digest, equal
    to the unpacked tree's; their file hashes differ."""
    tree = _tree(tmp_path / "tree")
    one = _pack(tree, tmp_path / "one.tar.gz", "openpbs-cd7ab5edaf03", False, mtime=1_000_000)
    two = _pack(tree, tmp_path / "two.tar.gz", "openpbs-cd7ab5edaf03dcac2f1cb9e2f42d75eb117d468a", True, mtime=2, owner="pbs")
    assert file_sha256(one) != file_sha256(two)
    digest = tree_digest(tarball_entries(one))
    assert digest == tree_digest(tarball_entries(two)) == tree_digest(directory_entries(tree))
    verify_tree(two, digest)


@pytest.mark.parametrize("change", ["content", "exec bit", "new file", "rename"])
def test_tree_digest_sees_every_change(tmp_path: Path, change: str) -> None:
    """A changed byte, exec bit, added file or renamed file changes the digest."""
    tree = _tree(tmp_path / "tree")
    before = tree_digest(directory_entries(tree))
    if change == "content":
        (tree / "README").write_text("openpbs!\n")
    elif change == "exec bit":
        (tree / "README").chmod(0o755)
    elif change == "new file":
        (tree / "src" / "b.c").write_text("")
    else:
        (tree / "src" / "lib" / "a.c").rename(tree / "src" / "lib" / "b.c")
    assert tree_digest(directory_entries(tree)) != before


def test_a_tree_other_than_the_pin_is_refused_in_one_line(tmp_path: Path) -> None:
    """A download whose tree is not the pinned commit's is refused, naming the pin and the fix."""
    tarball = _pack(_tree(tmp_path / "tree"), tmp_path / "x.tar.gz", "openpbs-x", False)
    with pytest.raises(PbsBuildError) as caught:
        verify_tree(tarball)
    assert pbs_build.TREE_SHA256 in str(caught.value) and "\n" not in str(caught.value)


def test_the_pin_is_the_shared_tarballs_tree() -> None:
    """The pinned digest is that of the source tarball of commit cd7ab5eda the bed is built from
    (``$HOTSPARE_OPENPBS_SRC``, else the shared one beside the checkout). Never skipped: without that tarball
    the pin cannot be checked, and the test says what to provide, as the build does."""
    named = os.environ.get("HOTSPARE_OPENPBS_SRC")
    tarballs = [Path(named)] if named else sorted((CHECKOUT.parent / "shared" / "vendor").glob("openpbs-*.tar.gz"))
    assert tarballs and tarballs[-1].is_file(), (
        "no OpenPBS source tarball to check the pin against: set HOTSPARE_OPENPBS_SRC to the tarball of commit "
        f"{pbs_build.COMMIT} or put it in ../shared/vendor/")
    verify_tree(tarballs[-1])


def test_a_stamped_build_is_reused_without_building(tmp_path: Path) -> None:
    """With the stamp of a finished install in the tarball's cache directory, the prefix it names is returned
    at once: no build log is written, nothing is unpacked."""
    tarball = _pack(_tree(tmp_path / "tree"), tmp_path / "openpbs.tar.gz", "openpbs-x", False)
    where = build_dir(tmp_path / "cache", file_sha256(tarball))
    prefix = where / "prefix"
    for rel in INSTALLED:
        (prefix / rel).parent.mkdir(parents=True, exist_ok=True)
        (prefix / rel).write_text("")
    write_stamp(where, {"recipe": pbs_build.RECIPE, "prefix": str(prefix)})
    environ = {"HOTSPARE_CACHE": str(tmp_path / "cache"), "HOTSPARE_OPENPBS_SRC": str(tarball)}
    assert ensure_openpbs(environ, CHECKOUT) == prefix
    assert not (where / "build.log").exists() and not (where / "src").exists()


def test_the_real_build_is_reused() -> None:
    """A second call with the real source returns the cached prefix and rewrites neither its build log nor its
    stamp (the build itself, ~3 min, is done once by ./run test or the first PBS bed)."""
    first = ensure_openpbs()
    where = first.parent
    before = [(where / name).stat() for name in ("build.log", "installed.json")]
    assert ensure_openpbs() == first
    after = [(where / name).stat() for name in ("build.log", "installed.json")]
    assert [(s.st_ino, s.st_mtime_ns, s.st_size) for s in before] == [(s.st_ino, s.st_mtime_ns, s.st_size) for s in after]
    assert (first / "sbin" / "pbs_iff").stat().st_mode & 0o4000


def test_a_failed_build_is_one_line_naming_the_log(tmp_path: Path) -> None:
    """A source whose build fails raises one line naming the failed step and the build log; no stamp is left."""
    tree = _tree(tmp_path / "tree")
    (tree / "autogen.sh").write_text("#!/bin/sh\necho 'autogen: no luck' >&2\nexit 7\n")
    tarball = _pack(tree, tmp_path / "broken.tar.gz", "openpbs-broken", False)
    environ = {"HOTSPARE_CACHE": str(tmp_path / "cache"), "HOTSPARE_OPENPBS_SRC": str(tarball), "HOME": "/nonexistent"}
    with pytest.raises(PbsBuildError) as caught:
        ensure_openpbs(environ, CHECKOUT)
    where = build_dir(tmp_path / "cache", file_sha256(tarball))
    assert str(caught.value) == f"OpenPBS build step `./autogen.sh` exited 7; see {where / 'build.log'}"
    assert "autogen: no luck" in (where / "build.log").read_text()
    assert not (where / "installed.json").exists()


@pytest.mark.parametrize(("name", "value", "says"), [
    ("HOTSPARE_OPENPBS_SRC", "/nonexistent/openpbs.tar.gz", "set HOTSPARE_OPENPBS_SRC to an OpenPBS source tarball"),
    ("HOTSPARE_OPENPBS_PREFIX", "/nonexistent/pbs", "HOTSPARE_OPENPBS_PREFIX=/nonexistent/pbs lacks bin/qsub"),
])
def test_a_missing_source_is_one_error_line(tmp_path: Path, name: str, value: str, says: str) -> None:
    """No source (a tarball or install that is not there): the script prints one ``error:`` line and exits 2."""
    env = dict(os.environ, HOTSPARE_CACHE=str(tmp_path), **{name: value})
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=60,
                          check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and says in done.stderr


def test_the_run_scripts_install_the_same_packages() -> None:
    """./run's DEBIAN_PBS_PACKAGES and .ci/run's second apt-get line list exactly the packages the build checks."""
    run = (CHECKOUT / "run").read_text()
    listed = run.split('DEBIAN_PBS_PACKAGES="', 1)[1].split('"', 1)[0].split()
    ci = (CHECKOUT / ".ci" / "run").read_text().replace("\\\n", " ")
    ci_line = next(line for line in ci.splitlines() if "apt-get install" in line and "libcjson1" in line)
    ci_listed = ci_line.split("--no-install-recommends", 1)[1].replace(">/dev/null", "").split()
    expected = sorted((*pbs_build.BUILD_PACKAGES, *pbs_build.RUN_PACKAGES))
    assert sorted(listed) == expected
    assert sorted(ci_listed) == expected
