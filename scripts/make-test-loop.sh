#!/usr/bin/env bash
# Does `make test` pass again and again on a busy machine? Clones this checkout's HEAD into DIR
# (fresh: what is committed), starts BUSY processes that spin a core each, and runs CI's test
# command (`CI=true bash .ci/run`) RUNS times in a row in the clone, stopping at the first
# failure. One line per run (status, seconds, load average) in DIR.summary, each run's output
# in DIR.runN.log; the busy processes are stopped on exit. The first run installs everything,
# as on a clean CI machine; the others reuse the clone's venv.
#
# Usage: scripts/make-test-loop.sh DIR [RUNS=5] [BUSY=2]
# Run it on an otherwise quiet machine: whatever else runs beside it adds to the load.
set -u
if [ $# -lt 1 ]; then
    sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;/^set -u/d'
    exit 2
fi
dir=$1
runs=${2:-5}
busy=${3:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir" "$dir".summary "$dir".run*.log
git clone -q "$here" "$dir" || exit 1
pids=()
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
for ((i = 0; i < busy; i++)); do
    python3 -c 'while 1: pass' &
    pids+=($!)
done
echo "commit $(git -C "$dir" log -1 --format='%h %s'), $busy busy processes" | tee "$dir".summary
cd "$dir" || exit 1
for ((i = 1; i <= runs; i++)); do
    start=$(date +%s)
    CI=true bash .ci/run > "$dir.run$i.log" 2>&1
    rc=$?
    line="run $i: $([ $rc = 0 ] && echo passed || echo "FAILED ($rc)") in $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "$line" | tee -a "$dir".summary
    [ $rc = 0 ] || exit $rc
done
