#!/usr/bin/env bash
# dask-jobqueue's own test suite against hotspare's FailoverSLURMCluster/FailoverPBSCluster, and against upstream's
# plain classes for comparison, on the project's 4-node SLURM bed (tests/testbed). See README.md here.
#
#   conformance/dask_jobqueue/run.sh [--keep] [EXTRA PYTEST ARGS...]
#
# Runs, for classes in plain, failover: no -E (scheduler-free tests), -E slurm, -E pbs (slurm-wlm-torque's
# qsub/qdel over the bed). The bed is up for all of it: test_slurm.py calls sinfo at import time and errors at
# collection when sinfo exists but reaches no controller, so even the scheduler-free run needs SLURM_CONF.
# Each -E run gets a freshly booted bed. The bed uses fixed ports shared with other engineers: the whole script
# runs under flock /tmp/hotspare-bed.lock. Exit 1 if a test passed plain and not failover.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [[ "${HOTSPARE_BED_LOCKED:-}" != 1 ]]; then
    HOTSPARE_BED_LOCKED=1 exec flock /tmp/hotspare-bed.lock "$0" "$@"
fi

keep=0
if [[ "${1:-}" == --keep ]]; then keep=1; shift; fi

py="$repo/.venv/bin/python"
export PYTHONDONTWRITEBYTECODE=1  # nothing written into the checkout, not even ignored caches
# Not under pytest's 0700 temp dirs: munged needs every directory above its socket traversable.
work=$(mktemp -d /tmp/hotspare-jobqueue-conformance.XXXXXX)
chmod 755 "$work"
results="$work/results"
mkdir -p "$results"
export HOTSPARE_BED="$work/bed"
export SLURM_CONF="$HOTSPARE_BED/etc/slurm.conf"

bed() { (cd "$repo/tests" && "$py" -m testbed "$@"); }

finish() {
    local rc=$?
    if [[ -f "$HOTSPARE_BED/bed.json" ]]; then bed down || true; fi
    if [[ $keep == 1 ]]; then echo "logs and JUnit files kept in $results"; else rm -rf "$work"; fi
    exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

fresh_bed() {
    if [[ -f "$HOTSPARE_BED/bed.json" ]]; then bed down; fi
    bed up >/dev/null
}

# One pytest run; its last line and the JUnit file go to $results. A hung run is stopped after 30 min.
run() {
    local classes=$1 env=$2; shift 2
    local name="$classes-$env" envopt=()
    [[ $env != none ]] && envopt=(-E "$env")
    echo "== $name"
    ( cd "$work" && PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" timeout -k 30 1800 \
        "$py" -m pytest -p jobqueue_conformance -p no:cacheprovider -c /dev/null --rootdir "$work" \
        --jobqueue-classes "$classes" "${envopt[@]}" --basetemp "$work/tmp-$name" \
        --junitxml "$results/$name.xml" -o junit_family=xunit1 -q -rfEsx "$@" --pyargs dask_jobqueue.tests \
        >"$results/$name.log" 2>&1 ) || true
    tail -n 1 "$results/$name.log"
    if [[ $env != none ]] && squeue -h | grep -q .; then
        echo "   jobs left on the bed after $name (cancelled):"; squeue -h; scancel --user "$(id -un)"
    fi
}

fresh_bed
for classes in plain failover; do
    run "$classes" none "$@"
done
for env in slurm pbs; do
    for classes in plain failover; do
        fresh_bed
        run "$classes" "$env" "$@"
    done
done

echo "== plain vs failover (passed counts per environment)"
"$py" "$here/compare.py" "$results"
