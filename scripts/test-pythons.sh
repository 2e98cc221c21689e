#!/usr/bin/env bash
# `make test`'s runs on the other CPythons (`make test-pythons` runs them alone). For every
# version pyproject.toml declares (its `Programming Language :: Python :: 3.X` classifiers) and
# every one planned (--planned), but the main interpreter's (--main: `make test`'s compiled and
# pure runs are its), it finds an interpreter, installs the package compiled into a venv of its
# own (.venv-3.X, installed again only when what it is built from changed) and runs the library's
# tests there. Ends with one line per version, found or not, and fails when a declared version's
# run failed. A planned version is run where found, but its failure is reported, not counted:
# the package does not declare it yet (docs/compiled.md, "Python versions").
#
# Where an interpreter is looked for, in this order (the first that runs and is that version
# wins): `python3.X` on PATH (a pyenv shim of a version not selected does not run, and is passed
# over), then `$(pyenv root)/versions/3.X*/bin/python3.X`, the newest first, where pyenv is on
# PATH. A free-threaded build (python3.13t, ...) is looked for the same way and reported, not run:
# the Matcher refuses to run without the GIL.
#
# Each run takes a snapshot of the work tree first (the files git tracks or would track; outside
# git, all but what builds and venvs leave), installs the package from it with every extra and the
# dev dependency group, and runs the snapshot's tests/ against it, and its modules' doctests where
# it is installed: the tests and the source of one moment, in a checkout others may be editing
# meanwhile. Not an editable install: that one would compile into src/ and rewrite
# src/topicmatch/_compiled.json, the record by which the main venv's editable build is checked at
# import. The venv's stamp (.venv-3.X/.installed) is a hash of what the package is built from
# (pyproject.toml, setup.py, README.md, src/), this script and the interpreter: the same again,
# and nothing is installed.
#
# Usage: scripts/test-pythons.sh [--main PYTHON] [--planned "3.14 ..."] [--list] [PYTEST ARGS...]
#   --main PYTHON     the main interpreter, whose version is left to make test's own runs
#   --planned VERS    versions looked for beyond the declared ones
#   --list            say what is found for each version; build and run nothing
#   PYTEST ARGS       default: the library's fast tests (`make test-fast`'s -m)
# With TEST_SUMMARY=FILE in the environment (scripts/test-builds.sh), the closing lines are
# appended to FILE instead of printed.
set -u

script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$script")/.." || exit 2
root=$PWD

main=""
planned=""
list=0
while [ $# -gt 0 ]; do
    case $1 in
        --main) main=$2; shift 2 ;;
        --planned) planned=$2; shift 2 ;;
        --list) list=1; shift ;;
        --) shift; break ;;
        *) break ;;
    esac
done
if [ $# -eq 0 ]; then
    set -- -m "not brokers and not spark and not cluster and not latency and not slow"
fi
summary=${TEST_SUMMARY:-}

# Ctrl+C stops every run (pytest exits 2 on an interrupt, which would otherwise go on).
trap 'echo "make test: interrupted" >&2; exit 130' INT
tree=""  # the snapshot of the work tree, once taken (removed at the end)

lines=()
say() { lines+=("make test: $*"); }

# What an interpreter is, on one line: "3.12 cpython 0 /path/python3.12 3.12.1 /its/base/prefix"
# (the 0: not free-threaded). A venv's line differs from its base interpreter's by the path only.
probe() {
    timeout 60 "$1" -c 'import sys, sysconfig
print("%d.%d" % sys.version_info[:2], sys.implementation.name,
      int(sysconfig.get_config_var("Py_GIL_DISABLED") or 0), sys.executable,
      "%d.%d.%d" % sys.version_info[:3], sys.base_prefix)' 2>/dev/null
}
same_python() {  # same_python PROBE_LINE PROBE_LINE: all but the path alike
    [ "$(cut -d' ' -f1-3,5- <<<"$1")" = "$(cut -d' ' -f1-3,5- <<<"$2")" ]
}

pyenv_root=""
if command -v pyenv >/dev/null 2>&1; then
    pyenv_root=$(pyenv root 2>/dev/null)
fi

# find_python VERSION FREE_THREADED(0|1): prints the interpreter's probe line, or fails.
find_python() {
    local version=$1 threaded=$2 name candidate info v impl gil_disabled
    local candidates=()
    name=python$version
    [ "$threaded" -eq 1 ] && name+=t
    candidate=$(command -v "$name" 2>/dev/null) && candidates+=("$candidate")
    if [ -n "$pyenv_root" ]; then
        while IFS= read -r candidate; do  # the newest patch release first: 3.12.10 before 3.12.9
            candidates+=("$candidate")
        done < <(ls -d "$pyenv_root"/versions/"$version"*/bin/"$name" 2>/dev/null | sort -rV)
    fi
    for candidate in "${candidates[@]}"; do
        [ -x "$candidate" ] || continue
        info=$(probe "$candidate") || continue
        read -r v impl gil_disabled _ <<<"$info"
        if [ "$v" = "$version" ] && [ "$impl" = cpython ] && [ "$gil_disabled" = "$threaded" ]; then
            echo "$info"
            return 0
        fi
    done
    return 1
}

# snapshot DIR: the work tree's files copied into DIR.
snapshot() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked (deleted ones dropped) and untracked files, none that .gitignore ignores.
        git ls-files -z -co --exclude-standard |
            while IFS= read -r -d '' file; do [ -e "$file" ] && printf '%s\0' "$file"; done |
            tar -cf - --null -T - | tar -xf - -C "$1"
    else
        tar -cf - --exclude='./.venv*' --exclude=./.git --exclude='*.so' --exclude=_compiled.json \
            --exclude=__pycache__ --exclude='*.egg-info' --exclude=build --exclude='./.*_cache' \
            --exclude=./.hypothesis --exclude=./out --exclude=./dist . | tar -xf - -C "$1"
    fi
}

# install VENV PROBE_LINE SNAPSHOT: the package compiled into VENV from SNAPSHOT, unless its stamp
# says it holds that source already.
install() {
    local venv=$1 info=$2 source=$3 stamp=$1/.installed python hash venv_info extras
    python=$(cut -d' ' -f4 <<<"$info")
    hash=$({
        echo "$info"
        sha256sum "$script" | cut -d' ' -f1
        # What the builds write into the snapshot (pip's metadata, bytecode) left out.
        tar -cf - -C "$source" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
            --exclude='*.egg-info' --exclude=__pycache__ pyproject.toml setup.py README.md src | sha256sum
    } | sha256sum)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
        echo "make test: $venv is up to date"
        return 0
    fi
    rm -f "$stamp"
    venv_info=$(probe "$venv/bin/python")
    if [ -z "$venv_info" ] || ! same_python "$venv_info" "$info"; then
        echo "make test: creating $venv ($python)"
        rm -rf "$venv"
        "$python" -m venv "$venv" || return 1
    fi
    echo "make test: installing the package (compiled) into $venv"
    # Every extra, and the dev group, which pip reads from 25.1 on (a new venv's pip may be older).
    "$venv/bin/python" -m pip install --quiet 'pip>=25.1' || return 1
    extras=$("$venv/bin/python" "$source/scripts/extras.py" "$source/pyproject.toml") || return 1
    "$venv/bin/python" -m pip install --quiet "$source[$extras]" --group "$source/pyproject.toml:dev" || return 1
    echo "$hash" >"$stamp"
}

verdict() {
    case $1 in
        0) echo "passed" ;;
        5) echo "FAILED (exit 5: no tests collected)" ;;
        *) echo "FAILED (exit $1)" ;;
    esac
}

main_version=""
if [ -n "$main" ] && main_info=$(probe "$main"); then
    read -r main_version _ _ _ main_full _ <<<"$main_info"
fi
declared=$(grep -o '"Programming Language :: Python :: 3\.[0-9]*"' pyproject.toml | grep -o '3\.[0-9]*' | sort -uV)
planned=$(for version in $planned; do grep -qx "$version" <<<"$declared" || echo "$version"; done)
versions=$(echo $declared $planned)
where="python3.X on PATH${pyenv_root:+ and in $pyenv_root/versions}"
echo "make test: looking for CPython $(echo $declared) (declared)${planned:+ and $(echo $planned) (planned)}:" \
    "$where${main_version:+ (the main interpreter: $main_version)}"

failed=0
for version in $versions; do
    if [ "$version" = "$main_version" ]; then
        if [ -n "$summary" ]; then
            say "CPython $main_full ($main): the compiled and pure builds above"
        else
            say "CPython $main_full ($main): the main interpreter, left to make test's compiled and pure runs"
        fi
        continue
    fi
    if ! info=$(find_python "$version" 0); then
        say "CPython $version: not found (skipped; looked for ${where//3.X/$version})"
        continue
    fi
    read -r _ _ _ python full _ <<<"$info"
    venv=.venv-$version
    if [ "$list" -eq 1 ]; then
        say "CPython $full: found, $python (venv $venv)"
        continue
    fi
    counted=1
    label="CPython $full (compiled, $venv)"
    if grep -qx "$version" <<<"$planned"; then
        counted=0
        label="CPython $full (compiled, $venv; planned)"
    fi
    echo "make test: CPython $full ($python): $venv, then pytest $*"
    start=$SECONDS
    if [ -z "$tree" ]; then  # one snapshot for every interpreter's run, taken before the first
        tree=$(mktemp -d "${TMPDIR:-/tmp}/topicmatch-tree.XXXXXX") || exit 2
        trap 'rm -rf "$tree"' EXIT
        snapshot "$tree" || { echo "make test: the snapshot of the work tree failed" >&2; exit 2; }
    fi
    if ! install "$venv" "$info" "$tree"; then
        say "$label: FAILED (the install failed, after $((SECONDS - start)) s)"
        failed=$((failed + counted))
        continue
    fi
    installed=$((SECONDS - start))
    python=$root/$venv/bin/python
    if ! "$python" -c 'import sys, topicmatch; sys.exit(topicmatch.BUILD != "compiled")'; then
        say "$label: FAILED (its core is not compiled: gcc and this Python's headers are needed, docs/compiled.md)"
        failed=$((failed + counted))
        continue
    fi
    # The installed package: its modules' doctests, but for the compiled ones' (as conftest.py
    # leaves them to the pure build), and its __main__ (as pyproject.toml's addopts).
    mapfile -t doctests < <(cd / && "$python" -c 'import os, topicmatch
from topicmatch._build import COMPILED_MODULES
package = os.path.dirname(topicmatch.__file__)
print(package)
for module in ("__main__", *COMPILED_MODULES): print("--ignore=" + os.path.join(package, module + ".py"))')
    start=$SECONDS
    echo "make test: CPython $full: in a snapshot of the work tree ($tree):" \
        "$venv/bin/python -m pytest $* tests ${doctests[0]}"
    (cd "$tree" && "$python" -m pytest -c pyproject.toml --rootdir . -p no:cacheprovider "$@" tests "${doctests[@]}")
    status=$?
    result="$(verdict "$status") (install ${installed} s, tests $((SECONDS - start)) s)"
    if [ "$status" -ne 0 ]; then
        if [ "$counted" -eq 1 ]; then
            failed=$((failed + 1))
        else
            result+="; not counted: $version is not declared in pyproject.toml yet"
        fi
    fi
    say "$label: $result"
done

# Free-threaded builds (CPython 3.13 on): reported, not run.
missing=()
for version in $versions; do
    [ "${version#3.}" -ge 13 ] || continue
    if info=$(find_python "$version" 1); then
        read -r _ _ _ python full _ <<<"$info"
        say "CPython ${full} free-threaded ($python): skipped: the Matcher refuses to run without the GIL (docs/compiled.md)"
    else
        missing+=("${version}t")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    say "free-threaded CPython (${missing[*]}): not found (skipped; not supported yet: docs/compiled.md)"
fi

if [ -n "$summary" ]; then
    printf '%s\n' "${lines[@]}" >>"$summary"
else
    printf '%s\n' "${lines[@]}"
fi
[ "$failed" -eq 0 ]
