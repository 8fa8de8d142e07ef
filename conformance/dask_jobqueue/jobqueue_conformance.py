"""A pytest plugin that runs dask-jobqueue's own test suite (``dask_jobqueue.tests``, shipped in its wheel) against
``FailoverSLURMCluster`` and ``FailoverPBSCluster`` (peer conformance, as tests/parsl_configs does for Parsl).

Loaded with ``-p jobqueue_conformance`` (``run.sh`` sets it up), never from tests/: it rebinds dask-jobqueue's
classes for the whole process, which must not touch the main suite. It gives the upstream tests what
dask-jobqueue's root conftest.py gives them (that file is not in the wheel):

* ``-E NAME``: only tests marked ``env(NAME)`` run; without it, only unmarked tests and ``env(None)`` ones;
* the ``env`` and ``xfail_env`` markers, the ``Cluster`` and ``EnvSpecificCluster`` fixtures, ``loop``;
* ``distributed.utils_test.reset_config`` kept from wiping dask-jobqueue's config (and this harness's).

And for this machine:

* ``--jobqueue-classes failover`` (default) rebinds ``dask_jobqueue.SLURMCluster``, ``dask_jobqueue.slurm.
  SLURMCluster``, ``dask_jobqueue.PBSCluster`` and ``dask_jobqueue.pbs.PBSCluster`` to the failover classes before
  any test module is imported; ``plain`` leaves upstream's, for the comparison run;
* each test runs in its own temporary directory (its cwd): the failover clusters' default ``run_dir``
  ("hotspare-dask", relative), sbatch's ``slurm-*.out``, qsub's ``-o/-e`` files and the TLS files
  test_security copies all land there, never in the checkout;
* schedulers listen on 127.0.0.1 (``scheduler-options`` in dask's config) except in the tests that check how
  dask-jobqueue fills ``scheduler_options`` itself;
* under ``-E``, the batch header asks for no memory: the bed's nodes have RealMemory=1000 (MB) and sbatch refuses
  the 2 GiB the upstream tests ask for ("Memory specification can not be satisfied"); the workers' own
  ``--memory-limit`` (which the tests check) is unchanged;
* coroutine tests are run with :func:`asyncio.run` when pytest-asyncio is not installed (it is not in our venv);
* tests that cannot apply here are skipped with the reason (:data:`NOT_HERE`).
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import importlib.util
import inspect
from collections.abc import Iterator, Mapping
from typing import Any

import dask.config
import dask_jobqueue
import dask_jobqueue.config
import distributed.utils_test
import pytest
from distributed.utils_test import loop, loop_in_thread  # noqa: F401 -- re-exported as fixtures

import hotspare_dask

#: Environment name -> where its cluster class is looked up *when a fixture asks* (so a rebinding is seen).
#: ``None`` is the scheduler-free environment: dask-jobqueue's LocalCluster, whose jobs are local processes.
ENV_CLASSES: dict[str | None, tuple[str, str]] = {
    None: ("dask_jobqueue.local", "LocalCluster"),
    "pbs": ("dask_jobqueue", "PBSCluster"),
    "moab": ("dask_jobqueue", "MoabCluster"),
    "slurm": ("dask_jobqueue", "SLURMCluster"),
    "sge": ("dask_jobqueue", "SGECluster"),
    "lsf": ("dask_jobqueue", "LSFCluster"),
    "oar": ("dask_jobqueue", "OARCluster"),
    "htcondor": ("dask_jobqueue", "HTCondorCluster"),
}

#: (module, attribute) -> the failover class put there. Both the package and the submodule: test modules import
#: from either (``from dask_jobqueue import SLURMCluster``) at import time.
REBIND: dict[tuple[str, str], type] = {
    ("dask_jobqueue", "SLURMCluster"): hotspare_dask.FailoverSLURMCluster,
    ("dask_jobqueue.slurm", "SLURMCluster"): hotspare_dask.FailoverSLURMCluster,
    ("dask_jobqueue", "PBSCluster"): hotspare_dask.FailoverPBSCluster,
    ("dask_jobqueue.pbs", "PBSCluster"): hotspare_dask.FailoverPBSCluster,
}

_NO_CRYPTOGRAPHY = importlib.util.find_spec("cryptography") is None

#: "<module>.<test function>" -> why it is not run here (skipped with that reason, in both runs).
NOT_HERE: dict[str, str] = {
    "test_slurm.test_different_interfaces_on_scheduler_and_workers":
        "needs the CI's eth0:scheduler/eth0:worker IP aliases; here traffic stays on loopback",
    "test_slurm.test_slurm_runner":
        "needs the CI's /shared_space; it tests SLURMRunner (srun), not the cluster classes",
    "test_jobqueue_core.test_import_scheduler_options_from_config":
        "binds a scheduler to the second network interface (eth0 here): off loopback",
    "test_runner.test_runner":
        "fails with the plain classes too, and once hung for minutes: with distributed 2026.8 an async "
        "Client.scheduler_info() is a cached value whose 'workers' stays empty, so it never sees its 2 workers "
        "(dask_jobqueue.runner, not the cluster classes)",
    "test_jobqueue_core.test_security":
        "dask-jobqueue's wheel does not ship the tests' key.pem and ca.pem (it copies them from its own directory)",
}
if _NO_CRYPTOGRAPHY:
    NOT_HERE.update({
        "test_jobqueue_core.test_security_temporary":
            "Security.temporary() needs the cryptography package (dask-jobqueue's test extra), not installed",
        "test_jobqueue_core.test_security_temporary_defaults":
            "security=True needs the cryptography package (dask-jobqueue's test extra), not installed",
    })

#: Tests that check what dask-jobqueue puts in ``scheduler_options`` (or pass a worker ``interface``, which
#: dask-jobqueue copies to the scheduler: with our ``host`` too, distributed refuses both): no loopback default.
CHECKS_SCHEDULER_OPTIONS = frozenset({
    "test_jobqueue_core.test_forward_ip",
    "test_jobqueue_core.test_scheduler_options",
    "test_jobqueue_core.test_scheduler_options_interface",
    "test_jobqueue_core.test_import_scheduler_options_from_config",
    "test_jobqueue_core.test_cluster_error_scheduler_arguments_should_use_scheduler_options",
    "test_jobqueue_core.test_config_interface",
})

#: dask-jobqueue's config sections whose scheduler gets the loopback default.
CONFIG_NAMES = ("slurm", "pbs", "moab", "sge", "lsf", "oar", "htcondor", "local")
LOOPBACK = {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}


def build_extra_config(env: str | None, *, loopback: bool) -> dict[str, Any]:
    """The dask config this harness lays over dask-jobqueue's for one test (pure)."""
    sections: dict[str, dict[str, Any]] = {name: {} for name in CONFIG_NAMES}
    if loopback:
        for options in sections.values():
            options["scheduler-options"] = dict(LOOPBACK)
    if env == "slurm":
        sections["slurm"]["job-directives-skip"] = ["--mem"]
    if env == "pbs":
        # The memory is inside PBS's one resource line; the CPUs are kept (slurm-wlm-torque's qsub reads select=).
        sections["pbs"]["resource-spec"] = "select=1:ncpus=2"
    return {"jobqueue": {name: options for name, options in sections.items() if options}}


def key_of(item: pytest.Item) -> str:
    """``test_slurm.test_basic`` for an item of dask_jobqueue.tests.test_slurm (parameters dropped)."""
    module = getattr(item, "module", None)
    name = getattr(item, "originalname", item.name)
    return f"{module.__name__.rsplit('.', 1)[-1] if module is not None else '?'}.{name}"


def should_skip(selected: str | None, envs: list[str | None]) -> bool:
    """Upstream's rule: an unmarked test runs only without ``-E``; a marked one only under a listed env
    (``env(None)`` also lists "no -E")."""
    if not envs:
        return selected is not None
    return selected not in envs


def marked_envs(item: pytest.Item) -> list[str | None]:
    """The env names of every ``env(...)`` marker on ``item`` (an argument may be one name or a list)."""
    envs: list[str | None] = []
    for mark in item.iter_markers(name="env"):
        arg = mark.args[0]
        envs.extend(arg if isinstance(arg, list) else [arg])
    return envs


class _Overlay:
    """The dask config reset by distributed's test fixtures goes back to the original *plus* dask-jobqueue's
    defaults and this harness's overlay for the running test. A module-level object because distributed calls
    ``reset_config()`` with no arguments from inside its ``loop`` fixture."""

    def __init__(self) -> None:
        self.original = copy.deepcopy(distributed.utils_test.original_config)
        self.extra: dict[str, Any] = {}

    def reset(self) -> None:
        dask.config.config.clear()
        dask.config.config.update(copy.deepcopy(self.original))
        dask_jobqueue.config.reconfigure()  # type: ignore[no-untyped-call]  # dask-jobqueue is untyped
        dask.config.update(dask.config.config, copy.deepcopy(self.extra))


OVERLAY = _Overlay()


# -- options, markers, rebinding ----------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("-E", action="store", metavar="NAME", default=None,
                     help="only run tests marked env(NAME) (dask-jobqueue's own option)")
    parser.addoption("--jobqueue-classes", choices=("failover", "plain"), default="failover",
                     help="failover: rebind SLURMCluster/PBSCluster to hotspare's; plain: upstream's (comparison)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "env(NAME): run only under -E NAME (NAME may be a list; None: without -E)")
    config.addinivalue_line("markers", "xfail_env(MAPPING): {env: reason}, a known failure under that env")
    config.addinivalue_line("markers", "asyncio: a coroutine test (run by this harness without pytest-asyncio)")
    distributed.utils_test.reset_config = OVERLAY.reset
    if config.getoption("--jobqueue-classes") == "failover":
        for (module, name), cls in REBIND.items():
            setattr(importlib.import_module(module), name, cls)


def bound_classes() -> dict[str, str]:
    """``dask_jobqueue.SLURMCluster`` -> the class it is now (for the report)."""
    out = {}
    for module, name in REBIND:
        cls = getattr(importlib.import_module(module), name)
        out[f"{module}.{name}"] = f"{cls.__module__}.{cls.__qualname__}"
    return out


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"jobqueue-classes={config.getoption('--jobqueue-classes')} -E={config.getoption('-E')}",
            *(f"  {where} -> {what}" for where, what in bound_classes().items())]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        key = key_of(item)
        if key in NOT_HERE:
            item.add_marker(pytest.mark.skip(reason=f"not run here: {NOT_HERE[key]}"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    selected = item.config.getoption("-E")
    envs = marked_envs(item)
    if should_skip(selected, envs):
        pytest.skip(f"test requires env in {envs!r}")
    known: dict[str | None, str] = {}
    for mark in item.iter_markers(name="xfail_env"):
        known.update(mark.args[0])
    if selected in known:
        item.add_marker(pytest.mark.xfail(reason=known[selected]))


# -- coroutine tests ----------------------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a coroutine test on a fresh event loop (what pytest-asyncio would do); None: not ours to run."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj) or pyfuncitem.config.pluginmanager.hasplugin("asyncio"):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


# -- fixtures -----------------------------------------------------------------------------------------------------
def cluster_class(env: str | None) -> type:
    """The class dask-jobqueue now names for ``env`` (after any rebinding)."""
    module, name = ENV_CLASSES[env]
    cls: type = getattr(importlib.import_module(module), name)
    return cls


def _with_htcondor_disk(cls: type) -> type:
    if cls.__name__ == "HTCondorCluster":
        dask.config.set({"jobqueue.htcondor.disk": "1GB"})  # HTCondorCluster refuses to start without a disk size
    return cls


@pytest.fixture(params=[pytest.param(env, marks=pytest.mark.env(env), id=env or "local") for env in ENV_CLASSES])
def EnvSpecificCluster(request: pytest.FixtureRequest) -> type:  # upstream's fixture name
    """The class for the environment chosen with -E (LocalCluster without -E)."""
    return _with_htcondor_disk(cluster_class(request.param))


@pytest.fixture(params=[pytest.param(env, id=env or "local") for env in ENV_CLASSES])
def Cluster(request: pytest.FixtureRequest) -> type:  # upstream's fixture name
    """Every cluster class in turn, for tests that need no batch system."""
    return _with_htcondor_disk(cluster_class(request.param))


@pytest.fixture
def cleanup() -> Iterator[None]:
    """Replaces distributed's: that one checks for leaked threads and clears the config dask-jobqueue needs."""
    dask_jobqueue.config.reconfigure()  # type: ignore[no-untyped-call]  # dask-jobqueue is untyped
    yield


@pytest.fixture(autouse=True)
def _conformance_env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test in its own cwd under pytest's temp dir, with this harness's config over dask-jobqueue's."""
    # Not the test's own tmp_path/tmpdir: test_log_directory deletes that one, and the cwd with it.
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    key = key_of(request.node)
    OVERLAY.extra = build_extra_config(request.config.getoption("-E"), loopback=key not in CHECKS_SCHEDULER_OPTIONS)
    OVERLAY.reset()
    yield
    OVERLAY.extra = {}
    OVERLAY.reset()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines: Mapping[str, str] = bound_classes()
    terminalreporter.write_sep("-", "jobqueue conformance")
    terminalreporter.write_line(f"classes: {config.getoption('--jobqueue-classes')}, -E {config.getoption('-E')}")
    for where, what in lines.items():
        terminalreporter.write_line(f"  {where} -> {what}")
