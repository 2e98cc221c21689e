"""The ``bench`` extra is complete: in a fresh venv holding topicmatch with that extra alone, every
module that a ``topicmatch bench`` experiment loads imports.

Which modules those are is read from the code, so the list cannot go stale: the experiments'
modules (``topicmatch.cli._bench.EXPERIMENTS``), then every module of ours they import, each
import followed (top-level and inside functions, ``importlib.import_module`` and ``__import__``
strings, a ``"module:Class"`` string, a string naming a module of ours whole); what is neither
ours nor the standard library's is what the extra must provide. ``bench pipeline`` needs the
``spark`` extra as well (it says so when it runs) and is not one of them; the harness's
experiments are the latency distribution's.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.machinery import PathFinder
from pathlib import Path

import pytest

import topicmatch
from topicmatch.cli._bench import EXPERIMENTS

from .test_architecture import _imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(topicmatch.__file__).parent
#: A "module:object" string, as entry points and the amqtt benchmark's table of brokers name them.
ENTRY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def _file_of(module: str) -> Path | None:
    """The source file of a module of ours, or None (not ours, or no such module)."""
    top, *rest = module.split(".")
    if top != "topicmatch":
        return None
    path = PACKAGE.joinpath(*rest)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _named_in(path: Path) -> Iterator[str]:
    """Every module ``path`` may load when it runs: its imports as the architecture test reads
    them (type-checking ones left out), and the modules it names in strings for others to load."""
    for _line, module, _names in _imports(path, run_only=True):
        yield module
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ENTRY.fullmatch(node.value):
            yield node.value.partition(":")[0]  # "amqtt.broker:Broker"
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            yield node.args[0].value


def modules_loaded_by_the_experiments() -> tuple[set[str], set[str]]:
    """(the modules of ours, the other packages' modules) that the experiments can load."""
    ours: set[str] = set()
    others: set[str] = set()
    todo = [module for module, _help in EXPERIMENTS.values()]
    while todo:
        module = todo.pop()
        if module in ours:
            continue
        path = _file_of(module)
        assert path is not None, module
        ours.add(module)
        for named in _named_in(path):
            if named.split(".")[0] == "topicmatch":
                if _file_of(named):
                    todo.append(named)
            elif named.split(".")[0] not in sys.stdlib_module_names:
                others.add(named)
    return ours, others


def test_the_scan_finds_what_the_experiments_import_lazily() -> None:
    """The scan itself: imports inside functions, a module run as a child, a "module:Class"."""
    ours, others = modules_loaded_by_the_experiments()
    assert {"topicmatch.bench.amqtt_server", "topicmatch.compat.amqtt", "topicmatch.bench.charts"} <= ours
    assert {"hdrh.histogram", "paho.mqtt.matcher", "matplotlib.pyplot", "amqtt.broker"} <= others
    assert not any(name.split(".")[0] in ("os", "json", "topicmatch") for name in others)
    # Each is a package the dev venv holds: a string the scan took for one ("tab:red") is not.
    # (PathFinder searches sys.path alone: another test may have left a stand-in in sys.modules.)
    missing = [name for name in sorted(others) if PathFinder.find_spec(name.split(".")[0]) is None]
    assert missing == []


def _snapshot(into: Path) -> Path:
    """What a pip install of topicmatch reads, copied, so that its build writes nothing here."""
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, into / name)
    shutil.copytree(
        ROOT / "src",
        into / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "_compiled.json", "*.egg-info"),
    )
    return into


def fresh_venv_imports(project: Path, scratch: Path, modules: list[str]) -> subprocess.CompletedProcess[str]:
    """A new venv in ``scratch`` with ``project[bench]`` alone (pure build, from the package
    registry), then one process importing ``modules`` in order: its output names each failure."""
    venv = scratch / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(TOPICMATCH_PURE="1", MPLBACKEND="Agg")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=900)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", f"{project}[bench]"], check=True, env=env, timeout=1500
    )
    check = (
        "import importlib, sys\n"
        "failed = []\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as error:\n"
        "        failed.append(f'{name}: {type(error).__name__}: {error}')\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(1 if failed else 0)\n"
    )
    return subprocess.run(
        [python, "-c", check, *modules],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_a_venv_with_the_bench_extra_alone_imports_every_module_the_experiments_load(tmp_path: Path) -> None:
    """Needs the package registry (pip installs the extra's packages into the new venv)."""
    ours, others = modules_loaded_by_the_experiments()
    (tmp_path / "project").mkdir()
    project = _snapshot(tmp_path / "project")
    done = fresh_venv_imports(project, tmp_path, sorted(others) + sorted(ours))
    assert done.returncode == 0, f"in a venv with topicmatch[bench] alone:\n{done.stdout}{done.stderr}"
