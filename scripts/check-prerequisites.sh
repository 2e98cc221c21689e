#!/usr/bin/env bash
# What `make` needs before it installs anything, checked first, each failure one line with its fix:
#   check-prerequisites.sh PYTHON venv      Python 3.11+ and its venv module (ensurepip)
#   check-prerequisites.sh PYTHON compiler  gcc and the Python headers (the compiled core, make test)
# Exit 0 when all is there, 1 after printing every missing piece.
set -uo pipefail
PYTHON="${1:?usage: check-prerequisites.sh PYTHON venv|compiler}"
WHAT="${2:?usage: check-prerequisites.sh PYTHON venv|compiler}"
failed=0

fail() {
    echo "make: $1" >&2
    failed=1
}

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    fail "no $PYTHON on PATH: apt-get install python3 (3.11 or newer), or make PYTHON=/path/to/python3.11"
    exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    fail "$PYTHON is $("$PYTHON" -c 'import platform; print(platform.python_version())'), topicmatch needs 3.11 or newer: make PYTHON=python3.11 (or newer)"
fi
case "$WHAT" in
    venv)
        if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
            fail "$PYTHON cannot make a virtual environment (no ensurepip): apt-get install python3-venv"
        fi
        ;;
    compiler)
        if ! command -v gcc >/dev/null 2>&1 && ! command -v cc >/dev/null 2>&1; then
            fail "no C compiler, which the compiled core needs: apt-get install gcc"
        fi
        if ! "$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
            fail "no Python headers (Python.h), which the compiled core needs: apt-get install python3-dev"
        fi
        ;;
    *)
        echo "check-prerequisites.sh: unknown check $WHAT (venv, compiler)" >&2
        exit 2
        ;;
esac
exit "$failed"
