"""The layering of docs/architecture.md, checked: the core imports the standard library only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import topicmatch
from topicmatch._extras import EXTRAS

PACKAGE = Path(topicmatch.__file__).parent
OUTER = {"bench", "spark", "cli"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import a module runs: level 0 for absolute ones; imports for
    type checkers only (under ``if TYPE_CHECKING:``) are not run, and not counted."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for statement in node.body
        for inner in ast.walk(statement)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


def test_the_core_imports_only_the_standard_library_and_itself() -> None:
    """An adapter of topicmatch.compat may also import the library it adapts, the packages of
    the extra named as it is (compat/amqtt.py: the ``amqtt`` extra)."""
    # __main__.py is `python -m topicmatch`: the command line's entry, not the core.
    core = [
        PACKAGE / "__init__.py",
        *sorted(p for p in PACKAGE.glob("_*.py") if p.name != "__main__.py"),
        *sorted((PACKAGE / "compat").glob("*.py")),
    ]
    assert len(core) > 20
    for path in core:
        for level, module in _imports(path):
            top = module.split(".", maxsplit=1)[0]
            if level == 0 and top != "topicmatch":
                adapted = EXTRAS.get(path.stem, ()) if path.parent.name == "compat" else ()
                assert top in sys.stdlib_module_names or top in adapted, (path.name, module)
            else:
                inner = module.split(".")[1:2] if level == 0 else [top]
                assert not set(inner) & OUTER, (path.name, module)


#: Modules beside the core that the outer layers share (docs/architecture.md): not the core's.
SUPPORT = {"_progress", "_extras", "_pair_files", "_workloads", "_demo"}


def test_the_outer_layers_use_only_the_cores_public_names() -> None:
    """spark, bench and cli import the core through ``topicmatch`` itself (its ``__all__``),
    never from a private module of it, type-checking imports included: the core may change
    its insides without them knowing."""
    checked = 0
    for layer in sorted(OUTER):
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            depth = len(path.relative_to(PACKAGE).parts) - 1  # package levels below topicmatch
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    if node.level == depth + 1:  # relative to topicmatch itself
                        module = node.module or ""
                    elif node.level == 0 and (node.module or "").startswith("topicmatch."):
                        module = (node.module or "").split(".", 1)[1]
                    else:
                        continue
                    top = module.split(".", maxsplit=1)[0]
                    if not top:
                        names = {a.name for a in node.names} - {"__version__"}
                        assert names <= set(topicmatch.__all__), (str(path.relative_to(PACKAGE)), node.lineno)
                    elif top.startswith("_"):
                        assert top in SUPPORT, (str(path.relative_to(PACKAGE)), node.lineno, module)
                    checked += 1
    assert checked > 40
