"""The CPython versions the package declares, what `make test` runs them with, and what differs
between them that the library depends on (docs/compiled.md, "Python versions").

`make test` runs the library's fast tests, compiled, on every declared version it finds besides
its main interpreter (scripts/test-pythons.sh); these tests run on each of them too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from topicmatch import Matcher
from topicmatch._engine.cache import _STR_BYTES

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "test-pythons.sh"


def _project(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _declared(project: dict[str, Any]) -> list[tuple[int, int]]:
    classifiers = project["project"].get("classifiers", [])
    found = (re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c) for c in classifiers)
    return sorted((3, int(match.group(1))) for match in found if match)


def test_the_declared_versions_run_from_requires_python_without_a_gap() -> None:
    """The classifiers name every minor version from requires-python's lower bound on (3.11,
    3.12, 3.13): make test runs each one it finds (scripts/test-pythons.sh reads them), and the
    linters check the code for the lowest."""
    project = _project(ROOT / "pyproject.toml")
    declared = _declared(project)
    assert declared[:3] == [(3, 11), (3, 12), (3, 13)]
    lowest = declared[0]
    assert declared == [(3, minor) for minor in range(lowest[1], lowest[1] + len(declared))]
    assert project["project"]["requires-python"] == f">=3.{lowest[1]}"
    tools = project["tool"]
    assert tools["ruff"]["target-version"] == f"py3{lowest[1]}"
    assert tools["mypy"]["python_version"] == f"3.{lowest[1]}"
    harness = _project(ROOT / "latency" / "pyproject.toml")
    assert harness["project"]["requires-python"] == project["project"]["requires-python"]
    assert set(_declared(harness)) <= set(declared)


# -- what differs between the versions -----------------------------------------------------------
@pytest.mark.skipif(sys.maxsize < 2**32, reason="the sizes asserted are a 64-bit CPython's")
@pytest.mark.parametrize(
    ("text", "per_character", "header_311", "header_312"),
    [
        ("orders.eu", 1, 49, 41),  # ASCII
        ("caf\u00e9.m\u00fcnchen", 1, 73, 57),  # Latin-1
        ("\u0437\u0430\u043a\u0430\u0437.eu", 2, 74, 58),  # two bytes a character
        ("\U0001f4e6.eu", 4, 76, 60),  # four bytes a character
    ],
)
def test_str_is_smaller_from_3_12_and_the_cache_charge_covers_both(
    text: str, per_character: int, header_311: int, header_312: int
) -> None:
    """CPython 3.12 dropped the str's cached wchar_t copy (PEP 623): an ASCII str is 8 bytes
    smaller, any other 16 (the header with the terminator below; one character more, one kind's
    width more). The result cache charges a topic's text as ``_STR_BYTES`` plus 4
    bytes a character (topicmatch._engine.cache), which must stay at or above the real size on every
    version: on 3.11 it errs high by 4 bytes for the widest kind, from 3.12 by 20."""
    header = header_311 if sys.version_info < (3, 12) else header_312
    assert sys.getsizeof(text) == header + per_character * len(text)
    for length in (0, 1, 10, 1000):
        sample = (text * (length // len(text) + 1))[:length]
        assert _STR_BYTES + 4 * len(sample) >= sys.getsizeof(sample)


def test_sys_is_gil_enabled_exists_from_3_13_and_the_matcher_reads_it() -> None:
    """The Matcher refuses a CPython that runs without the GIL (``_require_gil``), asking
    ``sys._is_gil_enabled()``, which 3.13 added: on 3.11 and 3.12 there is no such function (and
    no free-threaded build), and from 3.13 on, the builds make test runs have the GIL on."""
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    if sys.version_info < (3, 13):
        assert gil_enabled is None
    else:
        assert gil_enabled is not None
        assert gil_enabled()
    matcher = Matcher()
    matcher.subscribe("a.*", 1)
    assert matcher.lookup("a.b") == frozenset({1})


# -- scripts/test-pythons.sh: where it looks ---------------------------------------------------
def _fake_python(path: Path, probe: str) -> None:
    """An executable at ``path`` that answers the script's probe with ``probe`` ("{0}": its path)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "{probe.format("$0")}"\n')
    path.chmod(0o755)


def _list(tmp_path: Path, *, pyenv: bool) -> list[str]:
    bin_dir = tmp_path / "bin"
    root = tmp_path / "pyenv"
    # A pyenv shim of a version not selected: on PATH, but it does not run.
    shim = bin_dir / "python3.12"
    shim.parent.mkdir(parents=True)
    shim.write_text('#!/bin/sh\necho "pyenv: python3.12: command not found" >&2\nexit 127\n')
    shim.chmod(0o755)
    if pyenv:
        (bin_dir / "pyenv").write_text(f'#!/bin/sh\n[ "$1" = root ] && echo "{root}"\n')
        (bin_dir / "pyenv").chmod(0o755)
    for version in ("3.12.9", "3.12.10"):
        _fake_python(root / "versions" / version / "bin" / "python3.12", f"3.12 cpython 0 {{0}} {version} /b")
    # A free-threaded 3.13 only: not a 3.13 with the GIL, but reported as free-threaded.
    _fake_python(root / "versions" / "3.13.1t" / "bin" / "python3.13", "3.13 cpython 1 {0} 3.13.1 /b")
    _fake_python(root / "versions" / "3.13.1t" / "bin" / "python3.13t", "3.13 cpython 1 {0} 3.13.1 /b")
    main = tmp_path / "main" / "python3.11"
    _fake_python(main, "3.11 cpython 0 {0} 3.11.7 /b")
    run = subprocess.run(
        ["bash", str(SCRIPT), "--main", str(main), "--planned", "3.14", "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "TEST_SUMMARY": ""},
    )
    return run.stdout.splitlines()


def test_the_script_finds_pyenv_versions_past_a_shim_that_does_not_run(tmp_path: Path) -> None:
    root = tmp_path / "pyenv"
    where = f"on PATH and in {root}/versions"
    assert _list(tmp_path, pyenv=True) == [
        f"make test: looking for CPython 3.11 3.12 3.13 (declared) and 3.14 (planned): python3.X {where}"
        " (the main interpreter: 3.11)",
        f"make test: CPython 3.11.7 ({tmp_path}/main/python3.11): the main interpreter, left to make"
        " test's compiled and pure runs",
        f"make test: CPython 3.12.10: found, {root}/versions/3.12.10/bin/python3.12 (venv .venv-3.12)",
        f"make test: CPython 3.13: not found (skipped; looked for python3.13 {where})",
        f"make test: CPython 3.14: not found (skipped; looked for python3.14 {where})",
        f"make test: CPython 3.13.1 free-threaded ({root}/versions/3.13.1t/bin/python3.13t): skipped: the"
        " Matcher refuses to run without the GIL (docs/compiled.md)",
        "make test: free-threaded CPython (3.14t): not found (skipped; not supported yet: docs/compiled.md)",
    ]


def test_the_script_without_pyenv_looks_on_path_only(tmp_path: Path) -> None:
    lines = _list(tmp_path, pyenv=False)
    assert "make test: CPython 3.12: not found (skipped; looked for python3.12 on PATH)" in lines
    assert "make test: free-threaded CPython (3.13t 3.14t): not found" in lines[-1]
