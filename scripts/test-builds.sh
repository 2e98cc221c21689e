#!/usr/bin/env bash
# `make test`'s two runs: the whole suite on the compiled build, then the library's tests on the
# pure build (TOPICMATCH_PURE=1), the second even when the first failed. Ends with one line per
# build, and fails when either run did. Any pytest exit code but 0 is a failure, 5 (no tests
# collected) included.
#
# Usage: scripts/test-builds.sh PYTHON [PYTEST ARGUMENTS OF THE PURE RUN...]
set -u

python=$1
shift

# Ctrl+C stops both runs (pytest exits 2 on an interrupt, which would otherwise go on).
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
run pure TOPICMATCH_PURE=1 "$python" -m pytest "$@"
pure=$?

echo "make test: compiled build: $(verdict "$compiled")"
echo "make test: pure build: $(verdict "$pure")"
[ "$compiled" -eq 0 ] && [ "$pure" -eq 0 ]
