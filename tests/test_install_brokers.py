"""scripts/install-brokers.sh chooses packages each Debian release has: its ``--plan`` asks a
stand-in apt (``apt-cache policy``, ``dpkg-query``) that answers from the releases' recorded
package lists (tests/fixtures/debian-packages.tsv, read from Debian 12's and 13's archives), and
every package it would install must be one the release holds. Debian 13 has no OpenJDK 17."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install-brokers.sh"
BROKERS = ["rabbitmq-server", "mosquitto", "nats-server", "redis-server", "activemq"]


def _archive(release: str) -> dict[str, str]:
    rows = (ROOT / "tests" / "fixtures" / "debian-packages.tsv").read_text().splitlines()
    return {
        pkg: version
        for line in rows
        if not line.startswith("#")
        for rel, pkg, version in [line.split("\t")]
        if rel == release
    }


def _plan(tmp_path: Path, release: str, installed: list[str], *options: str) -> list[str]:
    """The packages the script would install, on ``release`` with ``installed`` present."""
    archive = _archive(release)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    # apt-cache's own layout, its version table after the candidate: long here (1 MB, past any
    # pipe's buffer), so that a reader that stops at the candidate line (grep -q) ends it with
    # SIGPIPE, as Debian 13's apt-cache is ended, every time.
    policy = "\n".join(f"  {pkg}) version='{version}' ;;" for pkg, version in archive.items())
    (bin_ / "apt-cache").write_text(
        '#!/bin/sh\n[ "$1" = policy ] || exit 1\nversion="(none)"\ncase "$2" in\n'
        + policy
        + "\nesac\n"
        + 'printf "%s:\\n  Installed: (none)\\n  Candidate: %s\\n  Version table:\\n" "$2" "$version"\n'
        + 'yes "     $version 500" | head -c 1000000\n'
    )
    (bin_ / "dpkg-query").write_text(
        '#!/bin/sh\ncase "$3" in\n'
        + "".join(f"  {pkg}) printf 'install ok installed' ;;\n" for pkg in installed)
        + "  *) exit 1 ;;\nesac\n"
    )
    for tool in bin_.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", str(SCRIPT), "--plan", *options], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    planned = done.stdout.split()
    assert set(planned) <= set(archive), (release, set(planned) - set(archive))
    return planned


@pytest.mark.parametrize(
    ("release", "java"), [("bookworm", "openjdk-17-jre-headless"), ("trixie", "openjdk-21-jre-headless")]
)
def test_each_release_gets_the_java_it_has(tmp_path: Path, release: str, java: str) -> None:
    assert _plan(tmp_path, release, []) == [*BROKERS, java]


def test_java_alone_is_what_make_demo_asks_for(tmp_path: Path) -> None:
    assert _plan(tmp_path, "trixie", ["mosquitto"], "--java") == ["openjdk-21-jre-headless"]


def test_an_installed_java_is_kept(tmp_path: Path) -> None:
    assert _plan(tmp_path, "bookworm", ["openjdk-21-jre-headless", "mosquitto"]) == [
        b for b in BROKERS if b != "mosquitto"
    ]


def test_a_release_without_either_java_is_one_clear_line(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "apt-cache").write_text("#!/bin/sh\necho '  Candidate: (none)'\n")
    (bin_ / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    for tool in bin_.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", str(SCRIPT), "--plan"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0
    assert "openjdk-17-jre-headless openjdk-21-jre-headless" in done.stderr
