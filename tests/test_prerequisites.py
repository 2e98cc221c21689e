"""scripts/check-prerequisites.sh, which `make` runs before it installs anything: each missing
piece is one line naming its fix, and nothing missing is silent. A stand-in python answers
the script's questions as a machine without them would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check-prerequisites.sh"


def _run(tmp_path: Path, check: str, python: str, *, gcc: bool) -> subprocess.CompletedProcess[str]:
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    if gcc:
        (bin_ / "gcc").write_text("#!/bin/sh\nexit 0\n")
        (bin_ / "gcc").chmod(0o755)
    return subprocess.run(
        ["/bin/bash", str(SCRIPT), python, check],
        capture_output=True,
        text=True,
        env={"PATH": str(bin_)},
        check=False,
    )


def _python(tmp_path: Path, *, old: bool = False, venv: bool = True, headers: bool = True) -> str:
    """A stand-in for python3: the real one, but for what the flags take away."""
    fake = tmp_path / "python3"
    fake.write_text(
        "#!/bin/sh\n"
        f'case "$2" in\n'
        f"  *ensurepip*) exit {0 if venv else 1} ;;\n"
        f"  *Python.h*) exit {0 if headers else 1} ;;\n"
        f"  *version_info*) exit {1 if old else 0} ;;\n"
        f"  *python_version*) echo {'3.9.2' if old else '3.11.7'} ;;\n"
        "esac\n"
    )
    fake.chmod(0o755)
    return str(fake)


def test_a_complete_machine_passes_silently(tmp_path: Path) -> None:
    for check in ("venv", "compiler"):
        command = ["bash", str(SCRIPT), sys.executable, check]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert (done.returncode, done.stderr) == (0, ""), check


@pytest.mark.parametrize(
    ("check", "flags", "gcc", "fixes"),
    [
        ("venv", {"venv": False}, True, ["apt-get install python3-venv"]),
        ("venv", {"old": True}, True, ["needs 3.11 or newer"]),
        ("compiler", {}, False, ["apt-get install gcc"]),
        ("compiler", {"headers": False}, True, ["apt-get install python3-dev"]),
        ("compiler", {"headers": False}, False, ["apt-get install gcc", "apt-get install python3-dev"]),
    ],
)
def test_each_missing_piece_is_one_line_with_its_fix(
    tmp_path: Path, check: str, flags: dict[str, bool], gcc: bool, fixes: list[str]
) -> None:
    done = _run(tmp_path, check, _python(tmp_path, **flags), gcc=gcc)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == len(fixes), lines
    for line, fix in zip(lines, fixes, strict=True):
        assert line.startswith("make: "), line
        assert fix in line, line
