#!/usr/bin/env bash
# dask-jobqueue's own `-E pbs` tests against the REAL OpenPBS server of tests/testbed/pbs.py (run.sh's `-E pbs` is
# slurm-wlm-torque's qsub over the SLURM bed), with upstream's plain PBSCluster and with hotspare's
# FailoverPBSCluster; compared by compare.py. See README.md here.
#
#   conformance/dask_jobqueue/run_pbs.sh [--keep] [--bed DIR] [EXTRA PYTEST ARGS...]
#
# pytest runs INSIDE the bed's network namespace (`python -m testbed pbs exec`), so qsub/qstat/qdel reach the bed's
# server and the jobs' workers (on the bed's MOMs, which share that namespace) reach the scheduler on 127.0.0.1.
# test_slurm.py is left out of collection: it runs sinfo at import time, which fails without a SLURM controller.
# Each run gets a freshly booted bed, under the machine-wide PBS bed lock (set HOTSPARE_PBS_LOCKED=1 when the caller
# holds it already: flock(1) run again on the same file by a child of the holder waits forever). --bed DIR: run both
# legs on the running bed recorded in DIR/bed.json instead (tests/test_conformance_pbs.py lends the test session's
# bed: no boot), neither brought up nor down here; jobs a leg leaves are deleted either way. The work directory is
# made under $TMPDIR (default /tmp). Exit 1 if a test passed plain and not failover, and failed again in one of
# three failover reruns (compare.py: a test that passes all three is named as flaky, not counted).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [[ "${HOTSPARE_PBS_LOCKED:-}" != 1 ]]; then
    HOTSPARE_PBS_LOCKED=1 exec flock /tmp/hotspare-pbs-tests.lock "$0" "$@"
fi

keep=0 lent=""
while [[ "${1:-}" == --keep || "${1:-}" == --bed ]]; do
    case $1 in
        --keep) keep=1; shift ;;
        --bed) lent=$(cd "${2:?--bed needs the directory of a running bed}" && pwd); shift 2 ;;
    esac
done

py="${HOTSPARE_PYTHON:-$repo/.venv/bin/python}"
export PYTHONDONTWRITEBYTECODE=1
work=$(mktemp -d "${TMPDIR:-/tmp}/hotspare-jobqueue-pbs.XXXXXX")
chmod 755 "$work"
results="$work/results"
mkdir -p "$results"
export HOTSPARE_PBS_BED="${lent:-$work/bed}"
tests_dir=$("$py" -c 'import os, dask_jobqueue.tests as t; print(os.path.dirname(t.__file__))')

bed() { (cd "$repo/tests" && PYTHONPATH="$repo/tests" "$py" -m testbed pbs "$@"); }

finish() {
    local rc=$?
    if [[ -z $lent && -f "$HOTSPARE_PBS_BED/bed.json" ]]; then bed down || true; fi
    if [[ $keep == 1 ]]; then echo "logs and JUnit files kept in $results"; else rm -rf "$work"; fi
    exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

fresh_bed() {
    if [[ -n $lent ]]; then bed exec -- qstat -B >/dev/null; return; fi  # the lender's bed: it must answer
    if [[ -f "$HOTSPARE_PBS_BED/bed.json" ]]; then bed down; fi
    bed up >/dev/null
}

# One pytest run in the bed; its last line and the JUnit file go to $results. A hung run is stopped after 30 min.
# run CLASSES XML [PYTEST ARGS...] [-- TARGETS...]: one leg, its JUnit into XML and its log beside it; TARGETS
# (default: the whole of dask_jobqueue.tests) are node ids to run instead.
run() {
    local classes=$1 xml=$2 name
    shift 2
    name=$(basename "$xml" .xml)
    local args=() targets=(--pyargs dask_jobqueue.tests)
    while [[ $# -gt 0 && $1 != -- ]]; do args+=("$1"); shift; done
    if [[ ${1:-} == -- ]]; then shift; targets=("$@"); fi
    echo "== $name (real OpenPBS)"
    ( cd "$work" && bed exec -- env PYTHONPATH="$here:$repo/src:$repo/adapters" PYTHONDONTWRITEBYTECODE=1 \
        timeout -k 30 1800 "$py" -m pytest -p jobqueue_conformance -p no:cacheprovider -c /dev/null \
        --rootdir "$work" --jobqueue-classes "$classes" -E pbs --basetemp "$work/tmp-$name" \
        --junitxml "$xml" -o junit_family=xunit1 -q -rfEsx --ignore="$tests_dir/test_slurm.py" \
        "${args[@]}" "${targets[@]}" >"${xml%.xml}.log" 2>&1 ) || true
    tail -n 1 "${xml%.xml}.log"
    local left
    left=$(bed exec -- qselect || true)
    if [[ -n $left ]]; then
        echo "   jobs left on the bed after $name (deleted): $left"
        bed exec -- qdel -W force $left || true
    fi
}

for classes in plain failover; do
    fresh_bed
    run "$classes" "$results/$classes-pbs.xml" "$@"
done

# A test that passed plain and not failover runs again with the failover classes, three times: one that passes
# every time is an upstream flake (compare.py names it), one that fails again is ours.
mapfile -t again < <("$py" "$here/compare.py" --rerun-targets pbs "$results")
if [[ ${#again[@]} -gt 0 ]]; then
    mkdir -p "$results/reruns"
    for n in 1 2 3; do
        fresh_bed
        run failover "$results/reruns/failover-pbs-$n.xml" "$@" -- "${again[@]/#/$tests_dir/}"
    done
fi

echo "== plain vs failover (passed counts)"
"$py" "$here/compare.py" "$results"
