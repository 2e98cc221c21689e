"""The layering of docs/architecture.md, checked on every module of both distributions.

An import is every ``import`` and ``from ... import`` a module holds (those for type checkers
under ``if TYPE_CHECKING:`` included) and every string that names a module of ours whole
(``importlib.import_module("topicmatch.spark.commands")``, a table of experiment modules).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import topicmatch
import topicmatch_latency

PACKAGE = Path(topicmatch.__file__).parent
HARNESS = Path(topicmatch_latency.__file__).parent

#: Modules beside the core that every layer may use: standard library only, documented in
#: docs/architecture.md ("Support modules").
SUPPORT = {"_commandline", "_extras", "_pair_files", "_progress"}
#: topicmatch's outer layers, one subpackage each; the latency harness is a layer of its own.
LAYERS = {"bench", "cli", "compat", "spark"}

_OURS = re.compile(r"topicmatch(_latency)?(\.[A-Za-z_]\w*)+")


def _module_name(path: Path) -> str:
    root = PACKAGE.parent if path.is_relative_to(PACKAGE) else HARNESS.parent
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, run_only: bool = False) -> Iterator[tuple[int, str, list[str]]]:
    """(line, absolute module, names taken from it) of every import and module-naming string;
    ``run_only``: leave out the imports for type checkers (never run)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for statement in node.body
        for inner in ast.walk(statement)
    }
    for node in ast.walk(tree):
        if run_only and id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names = [alias.name for alias in node.names]
            submodules = [name for name in names if _is_module(f"{module}.{name}")]
            for name in submodules:  # `from . import _bench`: an import of that module
                yield node.lineno, f"{module}.{name}", []
            if len(submodules) < len(names):
                yield node.lineno, module, [name for name in names if name not in submodules]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _OURS.fullmatch(node.value):
            yield node.lineno, node.value, []


def _is_module(dotted: str) -> bool:
    top, *rest = dotted.split(".")
    root = {"topicmatch": PACKAGE, "topicmatch_latency": HARNESS}.get(top)
    if root is None or not rest:
        return False
    path = root.joinpath(*rest)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _modules(root: Path) -> list[Path]:
    return sorted(root.rglob("*.py"))


def _where(path: Path) -> str:
    """The layer of a module: 'core', 'support', 'main', a name of LAYERS, or 'harness'."""
    if path.is_relative_to(HARNESS):
        return "harness"
    parts = path.relative_to(PACKAGE).parts
    if len(parts) > 1:
        return parts[0]
    stem = path.stem
    if stem == "__main__":
        return "main"
    return "support" if stem in SUPPORT else "core"


def _layer_of(module: str) -> str | None:
    """The layer a module of ours belongs to (None: not ours)."""
    parts = module.split(".")
    if parts[0] == "topicmatch_latency":
        return "harness"
    if parts[0] != "topicmatch":
        return None
    if len(parts) == 1:
        return "public"
    if parts[1] in LAYERS:
        return parts[1]
    if parts[1] in SUPPORT:
        return "support"
    return "public" if parts[1] == "__version__" else "core"


def _public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split(".")[1:])


def test_every_subpackage_has_a_layer() -> None:
    """A new subpackage must be placed in docs/architecture.md's layers before it can pass."""
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == LAYERS
    assert {p.stem for p in PACKAGE.glob("_*.py")} >= SUPPORT


def test_the_core_imports_only_the_standard_library_and_itself() -> None:
    """What the core runs is the standard library (a type checker may see more)."""
    core = [p for p in _modules(PACKAGE) if _where(p) == "core"]
    assert len(core) > 20
    for path in core:
        for line, module, _ in _imports(path, run_only=True):
            layer = _layer_of(module)
            if layer is None:
                assert module.split(".")[0] in sys.stdlib_module_names, (path.name, line, module)
            else:
                assert layer in ("core", "public"), (path.name, line, module)


def test_the_support_modules_use_the_standard_library_and_the_cores_public_names() -> None:
    for path in (PACKAGE / f"{name}.py" for name in sorted(SUPPORT)):
        for line, module, names in _imports(path, run_only=True):
            layer = _layer_of(module)
            if layer is None:
                assert module.split(".")[0] in sys.stdlib_module_names, (path.name, line, module)
            elif layer == "public":
                assert set(names) <= {*topicmatch.__all__, "__version__"}, (path.name, line, names)
            else:
                assert layer == "support", (path.name, line, module)


def test_no_layer_imports_another_layers_private_module_or_the_cores() -> None:
    """cli, spark, bench, compat and the latency harness take from topicmatch its public names
    (``__all__``), the support modules, their own modules, and public modules of other layers
    (``topicmatch.bench.machine``, ``topicmatch.spark.commands``); topicmatch never imports the
    harness. Type-checking imports and importlib strings count."""
    checked = 0
    for path in [*_modules(PACKAGE), *_modules(HARNESS)]:
        where = _where(path)
        if where in ("core", "support"):
            continue
        for line, module, names in _imports(path):
            layer = _layer_of(module)
            if layer is None or layer == where:
                continue
            checked += 1
            place = (str(path.relative_to(path.parents[1])), line, module)
            assert layer != "harness", place  # topicmatch does not depend on the harness
            if layer == "public":
                assert set(names) <= {*topicmatch.__all__, "__version__"}, (*place, names)
            elif layer == "core":
                raise AssertionError(("a private module of the core", *place))
            elif layer != "support":
                assert _public(module), ("another layer's private module", *place)
    assert checked > 50


def test_the_check_sees_importlib_strings_and_relative_imports() -> None:
    """The scan itself: a string naming a module, and a relative import, are imports."""
    found = {module for _, module, _ in _imports(PACKAGE / "cli" / "_pipeline.py")}
    assert "topicmatch.spark.commands" in found  # an importlib string
    assert "topicmatch._commandline" in found  # `from .._commandline import ...`


def test_the_public_names_are_listed_once() -> None:
    """``__all__`` is the one list: each of its classes reports ``topicmatch`` as its module."""
    for name in topicmatch.__all__:
        value = getattr(topicmatch, name)
        if isinstance(value, type):
            assert value.__module__ == "topicmatch", name
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert source.count('"Matcher"') == 1
