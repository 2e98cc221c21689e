#!/usr/bin/env bash
# `make test`'s runs, in two queues at once: the Spark and harness tests spend much of their time
# waiting for JVMs and brokers, which the other queue's tests fill (on 2 cores, quiet: about 13
# minutes for the whole, where one run after another took 18).
#   queue 1: the compiled build's Spark and harness tests (-m "spark or latency or cluster"),
#            then the library's tests on the pure build (TOPICMATCH_PURE=1, PURE ARGUMENTS);
#   queue 2: the compiled build's other tests (the complement: the two halves are the whole
#            suite), then the third command, if given (make test's: the library's tests on the
#            other CPythons, scripts/test-pythons.sh).
# Every run happens even when one before it failed. Each run's output goes to its log in LOGS
# (TEST_LOGS, default out/test); a line says when each run starts and how it ended (pytest's last
# line), with the last 150 lines of its log when it failed. Ends with one line per build, then the
# third command's closing lines (it appends them to the file named by TEST_SUMMARY), and fails
# when any run did. Any pytest exit code but 0 is a failure, 5 (no tests collected) included.
#
# Usage: scripts/test-builds.sh PYTHON [PYTEST ARGUMENTS OF THE PURE RUN...] [-- COMMAND...]
set -u

python=$1
shift
pure_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    pure_args+=("$1")
    shift
done
[ $# -gt 0 ] && shift  # the --; what follows is the third command
third=("$@")

logs=${TEST_LOGS:-out/test}
mkdir -p "$logs" || exit 2
rm -f "$logs"/*.log "$logs"/*.rc
jvm="spark or latency or cluster"  # the tests that start JVMs and brokers of their own

verdict() {
    case $1 in
        0) echo "passed" ;;
        5) echo "FAILED (exit 5: no tests collected)" ;;
        *) echo "FAILED (exit $1)" ;;
    esac
}

run() {  # run NAME WHAT [VARIABLE=VALUE...] COMMAND...: output to LOGS/NAME.log, exit code to LOGS/NAME.rc
    local name=$1 what=$2 line="" word start=$SECONDS rc
    shift 2
    for word in "$@"; do
        [[ $word == *" "* ]] && word="\"$word\""
        line+="${line:+ }$word"
    done
    echo "make test: $what: $line (output: $logs/$name.log)"
    env "$@" > "$logs/$name.log" 2>&1
    rc=$?
    echo "$rc" > "$logs/$name.rc"
    # pytest's closing line ("=== 1789 passed, 34 skipped in 722.97s ==="), if it wrote one.
    last=$(grep -E '^=+ .*( in [0-9.]+s)' "$logs/$name.log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//')
    echo "make test: $what: $(verdict "$rc") after $((SECONDS - start)) s${last:+ ($last)}"
    if [ "$rc" -ne 0 ]; then
        echo "make test: $what: the last 150 lines of $logs/$name.log:"
        tail -n 150 "$logs/$name.log" | sed 's/^/    /'
    fi
}

code() {  # code NAME: the exit code a run wrote (1 if it wrote none: it was stopped)
    cat "$logs/$1.rc" 2>/dev/null || echo 1
}

summary=""
if [ ${#third[@]} -gt 0 ]; then
    summary=$(mktemp "${TMPDIR:-/tmp}/make-test-summary.XXXXXX")
fi

# Job control: each queue in a process group of its own, so that Ctrl+C (or a TERM) stops every
# run of both (a background job of a shell without it ignores SIGINT, and pytest would go on).
set -m
queues=()
stop() {
    echo "make test: interrupted" >&2
    for pid in "${queues[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null
    done
    exit 130
}
trap stop INT TERM
trap '[ -n "$summary" ] && rm -f "$summary"' EXIT

(
    run compiled-jvm "compiled build, Spark and harness tests" "$python" -m pytest -m "$jvm"
    run pure "pure build" TOPICMATCH_PURE=1 "$python" -m pytest "${pure_args[@]}"
) &
queues+=($!)
(
    run compiled-rest "compiled build, the other tests" "$python" -m pytest -m "not ($jvm)"
    if [ ${#third[@]} -gt 0 ]; then
        run others "the other CPythons" TEST_SUMMARY="$summary" "${third[@]}"
    fi
) &
queues+=($!)
wait "${queues[@]}"

compiled=0
[ "$(code compiled-jvm)" -eq 0 ] && [ "$(code compiled-rest)" -eq 0 ] || compiled=1
pure=$(code pure)
echo "make test: compiled build: $(verdict "$compiled") (Spark and harness tests: \
$(verdict "$(code compiled-jvm)"); the other tests: $(verdict "$(code compiled-rest)"))"
echo "make test: pure build: $(verdict "$pure")"
others=0
if [ -n "$summary" ]; then
    others=$(code others)
    cat "$summary"
    # A third command that said nothing failed before its end (or is not test-pythons.sh).
    [ -s "$summary" ] || echo "make test: ${third[*]}: FAILED (exit $others, no closing lines)"
fi
[ "$compiled" -eq 0 ] && [ "$pure" -eq 0 ] && [ "$others" -eq 0 ]
