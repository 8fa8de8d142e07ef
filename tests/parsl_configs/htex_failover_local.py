"""Parsl's own test suite in config mode, with FailoverProvider(LocalProvider) (peer conformance).

    pytest <site-packages>/parsl/tests -k "not cleannet and not unix_filesystem_permissions_required" \
        --config tests/parsl_configs/htex_failover_local.py

The same as Parsl's htex_local config but pinned to 127.0.0.1, with the provider wrapped.
"""

import tempfile

from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import SimpleLauncher
from parsl.providers import LocalProvider

from hotspare_parsl import FailoverProvider, block_error_handler, retry_handler


def fresh_config() -> Config:
    provider = FailoverProvider(LocalProvider(init_blocks=1, max_blocks=1, launcher=SimpleLauncher()),
                                run_dir=tempfile.mkdtemp(prefix="hotspare-conformance-"))
    return Config(
        executors=[HighThroughputExecutor(label="htex_local", address="127.0.0.1", loopback_address="127.0.0.1",
                                          worker_debug=True, cores_per_worker=1, encrypted=True, provider=provider,
                                          block_error_handler=block_error_handler)],
        strategy="none",
        retry_handler=retry_handler,
    )
