#!/usr/bin/env bash
# Install the real message brokers used by the conformance tests
# (and the Java that Spark needs: 17 on Debian 12, 21 on Debian 13)
# (tests/brokers) and the latency harness (topicmatch bench latency/commitlog):
# RabbitMQ, Mosquitto, nats-server, Redis and ActiveMQ from Debian's packages.
#
# Why this script exists: the tests and the harness start their own private,
# loopback-only broker instances (topicmatch_latency.servers); they only need
# the binaries. So the packages are installed WITHOUT letting them start their
# system-wide services (a temporary policy-rc.d that denies every service
# action), and any system instance that got started anyway is stopped by PID.
#
# Idempotent and fast: when all the packages are installed it does nothing.
# Must run as root (or with sudo) on Debian 12 or 13. apt's output goes to a log file
# (LOG, default out/install-brokers.log); the script prints one line, or on
# failure the log's last lines.
set -euo pipefail

# The brokers, and a Java for Spark (and ActiveMQ): Debian 12 ships OpenJDK 17,
# Debian 13 OpenJDK 21 (no 17); Spark 4 runs on both. The first of JAVA_CANDIDATES
# already installed is kept, else the first this release's packages hold.
BROKERS=(rabbitmq-server mosquitto nats-server redis-server activemq)
JAVA_CANDIDATES=(openjdk-17-jre-headless openjdk-21-jre-headless)
LOG="${LOG:-out/install-brokers.log}"
# Users the Debian packages run their services as; used to find a system
# instance that was started despite policy-rc.d.
SERVICE_USERS=(rabbitmq mosquitto nats redis activemq)
# --plan: print the packages this script would install and stop (no root, no
# apt-get update: it asks apt's current lists; tests/test_install_brokers.py).
# --java: the Java alone, no broker (what `make demo` needs for Spark).
PLAN=0
for arg in "$@"; do
    case "$arg" in
        --plan) PLAN=1 ;;
        --java) BROKERS=() ;;
        *) echo "install-brokers: unknown option $arg (--plan, --java)" >&2; exit 2 ;;
    esac
done

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep '^install ok installed$' > /dev/null  # no -q: see below
}

installed_java() {
    local pkg
    for pkg in "${JAVA_CANDIDATES[@]}"; do
        if is_installed "$pkg"; then
            echo "$pkg"
            return 0
        fi
    done
    return 1
}

available_java() {
    local pkg
    for pkg in "${JAVA_CANDIDATES[@]}"; do
        # grep reads to the end (no -q): stopping at the candidate line would end apt-cache
        # with SIGPIPE, and pipefail would take it for "no candidate" (Debian 13 does).
        if apt-cache policy "$pkg" 2>/dev/null | grep '^ *Candidate: [^(]' > /dev/null; then
            echo "$pkg"
            return 0
        fi
    done
    return 1
}

missing=()
for pkg in "${BROKERS[@]+"${BROKERS[@]}"}"; do
    if ! is_installed "$pkg"; then
        missing+=("$pkg")
    fi
done
java="$(installed_java || true)"

if [ "$PLAN" -eq 1 ]; then
    if [ -z "$java" ]; then
        java="$(available_java)" || {
            echo "install-brokers: none of ${JAVA_CANDIDATES[*]} is in this release's packages" >&2
            exit 1
        }
        missing+=("$java")
    fi
    echo "${missing[*]+"${missing[*]}"}"
    exit 0
fi

if [ "${#missing[@]}" -eq 0 ] && [ -n "$java" ]; then
    echo "install-brokers: ${BROKERS[*]+"${BROKERS[*]} "}$java already installed"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        exec sudo -- "$0" "$@"
    fi
    echo "install-brokers: must run as root to install: ${missing[*]}" >&2
    exit 1
fi

# PIDs of processes owned by the service users, before installing: only
# processes that appear during the install are ours to stop afterwards.
service_pids() {
    local user
    for user in "${SERVICE_USERS[@]}"; do
        if id -u "$user" >/dev/null 2>&1; then
            pgrep -u "$user" || true
        fi
    done | sort
}

before_pids="$(service_pids)"

# Deny every service start during the install (exit status 101 = "action
# forbidden", see /usr/share/doc/init-system-helpers/README.policy-rc.d).
# An existing policy-rc.d (e.g. a container's) is kept and restored.
POLICY=/usr/sbin/policy-rc.d
policy_backup=""
if [ -e "$POLICY" ]; then
    policy_backup="$(mktemp)"
    cp -p "$POLICY" "$policy_backup"
fi

restore_policy() {
    if [ -n "$policy_backup" ]; then
        cp -p "$policy_backup" "$POLICY"
        rm -f "$policy_backup"
    else
        rm -f "$POLICY"
    fi
}
trap restore_policy EXIT

printf '#!/bin/sh\n# temporary, written by install-brokers.sh\nexit 101\n' >"$POLICY"
chmod 755 "$POLICY"

export DEBIAN_FRONTEND=noninteractive
mkdir -p "$(dirname "$LOG")"
if ! apt-get update >"$LOG" 2>&1; then
    echo "install-brokers: apt-get update failed; the end of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
fi
if [ -z "$java" ]; then
    java="$(available_java)" || {
        echo "install-brokers: none of ${JAVA_CANDIDATES[*]} is in this release's packages; install a Java 17 or 21 runtime and run it again" >&2
        exit 1
    }
    missing+=("$java")
fi
if ! apt-get install -y --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}" >>"$LOG" 2>&1; then
    echo "install-brokers: apt-get failed; the end of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
fi

restore_policy
trap - EXIT

# Stop, by PID, any system instance (and its epmd) that started anyway.
after_pids="$(service_pids)"
new_pids="$(comm -13 <(echo "$before_pids") <(echo "$after_pids") | grep -E '^[0-9]+$' || true)"
if [ -n "$new_pids" ]; then
    echo "install-brokers: stopping system broker processes: $(echo "$new_pids" | tr '\n' ' ')" >>"$LOG"
    # shellcheck disable=SC2086
    kill -TERM $new_pids 2>/dev/null || true
    for _ in $(seq 1 50); do
        alive=""
        for pid in $new_pids; do
            if kill -0 "$pid" 2>/dev/null; then alive="$alive $pid"; fi
        done
        [ -z "$alive" ] && break
        sleep 0.2
    done
    for pid in $new_pids; do
        kill -KILL "$pid" 2>/dev/null || true
    done
fi

for pkg in "${missing[@]}"; do
    if ! is_installed "$pkg"; then
        echo "install-brokers: $pkg failed to install" >&2
        exit 1
    fi
done
echo "install-brokers: installed ${missing[*]} (apt's output: $LOG)"
