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
# runs under flock /tmp/hotspare-bed.lock. Exit 1 if a test passed plain and not failover and failed again in a rerun.
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
# run CLASSES ENV XML [PYTEST ARGS...] [-- TARGETS...]: one leg, its JUnit into XML and its log beside it; TARGETS
# (default: the whole of dask_jobqueue.tests) are node ids to run instead.
run() {
    local classes=$1 env=$2 xml=$3 name
    shift 3
    name=$(basename "$xml" .xml)
    local envopt=() args=() targets=(--pyargs dask_jobqueue.tests)
    [[ $env != none ]] && envopt=(-E "$env")
    while [[ $# -gt 0 && $1 != -- ]]; do args+=("$1"); shift; done
    if [[ ${1:-} == -- ]]; then shift; targets=("$@"); fi
    echo "== $name"
    ( cd "$work" && PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" timeout -k 30 1800 \
        "$py" -m pytest -p jobqueue_conformance -p no:cacheprovider -c /dev/null --rootdir "$work" \
        --jobqueue-classes "$classes" "${envopt[@]}" --basetemp "$work/tmp-$name" \
        --junitxml "$xml" -o junit_family=xunit1 -q -rfEsx "${args[@]}" "${targets[@]}" \
        >"${xml%.xml}.log" 2>&1 ) || true
    tail -n 1 "${xml%.xml}.log"
    if [[ $env != none ]] && squeue -h | grep -q .; then
        echo "   jobs left on the bed after $name (cancelled):"; squeue -h; scancel --user "$(id -un)"
    fi
}

tests_dir=$("$py" -c 'import os, dask_jobqueue.tests as t; print(os.path.dirname(t.__file__))')
fresh_bed
for classes in plain failover; do
    run "$classes" none "$results/$classes-none.xml" "$@"
done
for env in slurm pbs; do
    for classes in plain failover; do
        fresh_bed
        run "$classes" "$env" "$results/$classes-$env.xml" "$@"
    done
done

# A test that passed plain and not failover runs again with the failover classes, three times: one that passes
# every time is an upstream flake (compare.py names it), one that fails again is ours.
for env in none slurm pbs; do
    mapfile -t again < <("$py" "$here/compare.py" --rerun-targets "$env" "$results")
    [[ ${#again[@]} -gt 0 ]] || continue
    mkdir -p "$results/reruns"
    for n in 1 2 3; do
        fresh_bed
        run failover "$env" "$results/reruns/failover-$env-$n.xml" "$@" -- "${again[@]/#/$tests_dir/}"
    done
done

echo "== plain vs failover (passed counts per environment)"
"$py" "$here/compare.py" "$results"
