#!/usr/bin/env bash
# `make test`'s runs: the whole suite on the compiled build, then the library's tests on the
# pure build (TOPICMATCH_PURE=1), then, if given one, a third command (`make test`'s: the library's
# tests on the other CPythons, scripts/test-pythons.sh), each even when one before it failed.
# Ends with one line per build, then the third command's closing lines (it appends them to the
# file named by TEST_SUMMARY), and fails when any run did. Any pytest exit code but 0 is a
# failure, 5 (no tests collected) included.
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

# Ctrl+C stops every run (pytest exits 2 on an interrupt, which would otherwise go on).
trap 'echo "make test: interrupted" >&2; exit 130' INT

run() {  # run BUILD [VARIABLE=VALUE...] COMMAND...: says what it runs, returns its exit code
    local build=$1 line="" word
    shift
    for word in "$@"; do
        [[ $word == *" "* ]] && word="\"$word\""
        line+="${line:+ }$word"
    done
    echo "make test: $build build: $line"
    env "$@"
}

verdict() {
    case $1 in
        0) echo "passed" ;;
        5) echo "FAILED (exit 5: no tests collected)" ;;
        *) echo "FAILED (exit $1)" ;;
    esac
}

run compiled "$python" -m pytest
compiled=$?
run pure TOPICMATCH_PURE=1 "$python" -m pytest "${pure_args[@]}"
pure=$?
others=0
summary=""
if [ $# -gt 0 ]; then
    summary=$(mktemp "${TMPDIR:-/tmp}/make-test-summary.XXXXXX")
    trap 'rm -f "$summary"' EXIT
    TEST_SUMMARY=$summary "$@"
    others=$?
fi

echo "make test: compiled build: $(verdict "$compiled")"
echo "make test: pure build: $(verdict "$pure")"
if [ -n "$summary" ]; then
    cat "$summary"
    # A third command that said nothing failed before its end (or is not test-pythons.sh).
    [ -s "$summary" ] || echo "make test: $*: FAILED (exit $others, no closing lines)"
fi
[ "$compiled" -eq 0 ] && [ "$pure" -eq 0 ] && [ "$others" -eq 0 ]
