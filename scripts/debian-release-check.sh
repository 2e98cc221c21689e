#!/usr/bin/env bash
# Does a Debian release's own packages carry topicmatch? Builds a minimal root file system of
# that release from Debian's packages (debootstrap; kept and reused when ROOT already holds
# one), copies this checkout's last commit (`git archive HEAD`: what is committed, not the work
# tree) into ROOT/root/topicmatch, and in a chroot runs what a user of that release would: the
# README's prerequisites from apt, scripts/install-brokers.sh (brokers and the release's Java),
# `make venv` (the compiled core on the release's CPython), the Spark tests (local and a
# standalone cluster), and `make demo`. Prints one line per step, its status and seconds; the
# full output goes to ROOT/root/topicmatch-check.log.
#
# Usage: scripts/debian-release-check.sh ROOT [RELEASE] [MIRROR]
#   ROOT     the root file system's directory (made when missing)
#   RELEASE  a Debian codename, default trixie (Debian 13)
#   MIRROR   default http://deb.debian.org/debian
# Needs root and debootstrap (apt-get install debootstrap); the network only for Debian's and
# Python's package registries. The chroot shares the host's network: its brokers and Spark
# listen on 127.0.0.1 like the tests on the host, each on a free port.
set -u

if [ $# -lt 1 ]; then
    sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;/^set -u/d'
    exit 2
fi
root=$(mkdir -p "$1" && cd "$1" && pwd)
release=${2:-trixie}
mirror=${3:-http://deb.debian.org/debian}
here=$(cd "$(dirname "$0")/.." && pwd)
log="$root/root/topicmatch-check.log"

if [ "$(id -u)" != 0 ]; then
    echo "debian-release-check: needs root (debootstrap, chroot, mount)" >&2
    exit 2
fi
if [ ! -x "$root/bin/sh" ]; then
    command -v debootstrap >/dev/null || { echo "debian-release-check: no debootstrap; apt-get install debootstrap" >&2; exit 2; }
    echo "debootstrap $release into $root (a few minutes)"
    debootstrap --variant=minbase "$release" "$root" "$mirror" >/dev/null || exit 1
fi

mounted=()
cleanup() {
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null; done
}
trap cleanup EXIT
for fs in proc sys dev dev/pts; do
    if ! mountpoint -q "$root/$fs"; then
        mount --bind "/$fs" "$root/$fs" && mounted+=("$root/$fs")
    fi
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's own certificate authorities (a proxy's on a company network, say), which its pip
# and apt trust: the chroot's bundle gets them in the prerequisites step (update-ca-certificates).
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true

rm -rf "$root/root/topicmatch"
mkdir -p "$root/root/topicmatch"
git -C "$here" archive HEAD | tar -x -C "$root/root/topicmatch"
: > "$log"

step() {  # step NAME COMMAND...: run COMMAND in the chroot, in the copy; one line of result
    local name=$1 start rc
    shift
    start=$(date +%s)
    echo "== $name: $*" >> "$log"
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
        /bin/bash -c "cd /root/topicmatch && $*" >> "$log" 2>&1
    rc=$?
    printf '%-24s %s  %4d s\n' "$name" "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")" $(($(date +%s) - start))
    return $rc
}

echo "$(. "$root/etc/os-release" && echo "$PRETTY_NAME"), commit $(git -C "$here" log -1 --format=%h)"
step prerequisites "apt-get update -q && apt-get install -y -q python3 python3-venv python3-dev gcc make git ca-certificates && update-ca-certificates" &&
    step install-brokers "bash scripts/install-brokers.sh" &&
    step "make venv" "make venv" &&
    step "spark tests" ".venv/bin/python -m pytest -q -m \"spark and not cluster\" tests/spark" &&
    step "spark cluster tests" ".venv/bin/python -m pytest -q -m cluster tests/spark" &&
    step "make demo" "make demo"
rc=$?
echo "log: $log"
exit $rc
