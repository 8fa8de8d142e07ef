#!/usr/bin/env bash
# dask-jobqueue's own `-E pbs` tests against the REAL OpenPBS server of tests/testbed/pbs.py (run.sh's `-E pbs` is
# slurm-wlm-torque's qsub over the SLURM bed), with upstream's plain PBSCluster and with hotspare's
# FailoverPBSCluster; compared by compare.py. See README.md here.
#
#   conformance/dask_jobqueue/run_pbs.sh [--keep] [EXTRA PYTEST ARGS...]
#
# pytest runs INSIDE the bed's network namespace (`python -m testbed pbs exec`), so qsub/qstat/qdel reach the bed's
# server and the jobs' workers (on the bed's MOMs, which share that namespace) reach the scheduler on 127.0.0.1.
# test_slurm.py is left out of collection: it runs sinfo at import time, which fails without a SLURM controller.
# Each run gets a freshly booted bed, under the machine-wide PBS bed lock. Exit 1 if a test passed plain and not
# failover.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [[ "${HOTSPARE_PBS_LOCKED:-}" != 1 ]]; then
    HOTSPARE_PBS_LOCKED=1 exec flock /tmp/hotspare-pbs-tests.lock "$0" "$@"
fi

keep=0
if [[ "${1:-}" == --keep ]]; then keep=1; shift; fi

py="${HOTSPARE_PYTHON:-$repo/.venv/bin/python}"
export PYTHONDONTWRITEBYTECODE=1
work=$(mktemp -d /tmp/hotspare-jobqueue-pbs.XXXXXX)
chmod 755 "$work"
results="$work/results"
mkdir -p "$results"
export HOTSPARE_PBS_BED="$work/bed"
tests_dir=$("$py" -c 'import os, dask_jobqueue.tests as t; print(os.path.dirname(t.__file__))')

bed() { (cd "$repo/tests" && PYTHONPATH="$repo/tests" "$py" -m testbed pbs "$@"); }

finish() {
    local rc=$?
    if [[ -f "$HOTSPARE_PBS_BED/bed.json" ]]; then bed down || true; fi
    if [[ $keep == 1 ]]; then echo "logs and JUnit files kept in $results"; else rm -rf "$work"; fi
    exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

fresh_bed() {
    if [[ -f "$HOTSPARE_PBS_BED/bed.json" ]]; then bed down; fi
    bed up >/dev/null
}

# One pytest run in the bed; its last line and the JUnit file go to $results. A hung run is stopped after 30 min.
run() {
    local classes=$1 name="$1-pbs"
    shift
    echo "== $name (real OpenPBS)"
    ( cd "$work" && bed exec -- env PYTHONPATH="$here:$repo/src:$repo/adapters" PYTHONDONTWRITEBYTECODE=1 \
        timeout -k 30 1800 "$py" -m pytest -p jobqueue_conformance -p no:cacheprovider -c /dev/null \
        --rootdir "$work" --jobqueue-classes "$classes" -E pbs --basetemp "$work/tmp-$name" \
        --junitxml "$results/$name.xml" -o junit_family=xunit1 -q -rfEsx --ignore="$tests_dir/test_slurm.py" \
        "$@" --pyargs dask_jobqueue.tests >"$results/$name.log" 2>&1 ) || true
    tail -n 1 "$results/$name.log"
    local left
    left=$(bed exec -- qselect || true)
    if [[ -n $left ]]; then
        echo "   jobs left on the bed after $name (deleted): $left"
        # shellcheck disable=SC2086 -- one job id per word
        bed exec -- qdel -W force $left || true
    fi
}

for classes in plain failover; do
    fresh_bed
    run "$classes" "$@"
done

echo "== plain vs failover (passed counts)"
"$py" "$here/compare.py" "$results"
