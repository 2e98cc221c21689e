"""The layering of docs/architecture.md, checked on every module of both distributions, and where
benchmarks live (docs/performance.md's rule): the experiments users run are ``topicmatch bench``
commands in ``topicmatch.bench``; the maintainers' scripts of benchmarks/ use public names only.

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

PACKAGE = Path(topicmatch.__file__).parent
#: The latency harness's source in this checkout: read as text, so it need not be installed.
HARNESS = Path(__file__).resolve().parents[1] / "latency" / "src" / "topicmatch_latency"

#: The package that every layer may use, beside the core: standard library and the core's public
#: names only, documented in docs/architecture.md ("Support modules").
SUPPORT = "support"
#: topicmatch's outer layers, one subpackage each; the latency harness is a layer of its own.
LAYERS = {"bench", "cli", "compat", "spark"}
#: The core's own subpackages (private, like its modules): the engine (the trie and what the
#: default adds to it).
CORE_PACKAGES = {"_engine"}

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
        return "core" if parts[0] in CORE_PACKAGES else parts[0]
    return "main" if path.stem == "__main__" else "core"


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
    if parts[1] == SUPPORT:
        return "support"
    return "public" if parts[1] == "__version__" else "core"


def _public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split(".")[1:])


def test_every_subpackage_has_a_layer() -> None:
    """A new subpackage must be placed in docs/architecture.md's layers before it can pass."""
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == {*LAYERS, SUPPORT, *CORE_PACKAGES}


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
    support = _modules(PACKAGE / SUPPORT)
    assert len(support) == 5
    for path in support:
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
    assert "topicmatch.support.commandline" in found  # `from ..support.commandline import ...`


def test_the_public_names_are_listed_once() -> None:
    """``__all__`` is the one list: each of its classes reports ``topicmatch`` as its module."""
    for name in topicmatch.__all__:
        value = getattr(topicmatch, name)
        if isinstance(value, type):
            assert value.__module__ == "topicmatch", name
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert source.count('"Matcher"') == 1


# -- where benchmarks live ------------------------------------------------------------------------
#: Modules outside topicmatch.bench that may say "bench" in their name, and why: the command's
#: declaration, and what the spark layer gives the pipeline's benchmark (public names).
BENCH_OUTSIDE = {"cli/_bench.py", "spark/bench_api.py"}


def test_every_topicmatch_bench_experiment_is_in_topicmatch_bench() -> None:
    """docs/performance.md's rule: a ``topicmatch bench`` experiment's code is in
    ``topicmatch.bench``, so every module the command declares or loads is there, and no other
    room of the package holds a benchmark module."""
    experiments = {  # the modules cli/_bench.py names to load when an experiment runs
        node.value
        for node in ast.walk(ast.parse((PACKAGE / "cli" / "_bench.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _is_module(node.value)
    }
    assert len(experiments) >= 10, experiments
    for module in experiments:
        assert _layer_of(module) == "bench", module  # (the entry point group is named topicmatch.bench)
    rule = (Path(__file__).resolve().parents[1] / "docs" / "performance.md").read_text(encoding="utf-8")
    assert "**Where benchmarks live**" in rule
    assert "`src/topicmatch/bench/`" in rule
    elsewhere = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "bench" in path.stem and not path.is_relative_to(PACKAGE / "bench")
    }
    assert elsewhere == BENCH_OUTSIDE


# -- benchmarks/: scripts on the public API -------------------------------------------------------
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
#: What benchmarks/ shares, imported by the scripts (not a script).
SHARED = "_common"


def _bound_to_ours(tree: ast.AST) -> dict[str, str]:
    """Local name -> the module or object of ours it was imported as."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "topicmatch":
                    local = alias.asname or alias.name.split(".")[0]
                    bound[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "topicmatch":
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _offences(source: str) -> set[str]:
    """What a benchmark reaches beyond topicmatch's public names: private modules and names
    imported (code in strings that children run included), any ``x._name`` (but ``os._exit``
    and ``._jvm``), and a store into or ``setattr`` on anything imported from topicmatch (a
    monkeypatch)."""
    tree = ast.parse(source)
    found: set[str] = set()
    trees = [tree] + [
        inner
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value
        for inner in _parsed(node.value)
    ]
    for each in trees:
        bound = _bound_to_ours(each)
        for node in ast.walk(each):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [f"{node.module}.{alias.name}" for alias in node.names]
                )
                for module in modules:
                    if module.split(".")[0] == "topicmatch":
                        private = next((part for part in module.split(".")[1:] if part.startswith("_")), None)
                        if private is not None:
                            found.add(f"imports {module.partition('.' + private)[0]}.{private}")
            elif (
                isinstance(node, ast.Constant) and isinstance(node.value, str) and _OURS.fullmatch(node.value)
            ):
                if not _public(node.value):
                    found.add(f"names {node.value}")
            elif isinstance(node, ast.Attribute) and _private_attribute(node):
                found.add(f".{node.attr}")
            for target in _stored_into(node):
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in bound
                ):
                    found.add(f"patches {bound[target.value.id]}.{target.attr}")
    return found


def _private_attribute(node: ast.Attribute) -> bool:
    """``x._name`` (not a dunder). Two private names of other projects that have none public are
    allowed: ``os._exit``, which a forked child ends with, and PySpark's gateway to the JVM
    (``spark.sparkContext._jvm``: a benchmark asks the JVM to collect its heap between runs)."""
    if not node.attr.startswith("_") or node.attr.startswith("__"):
        return False
    if node.attr == "_jvm":
        return False
    return not (isinstance(node.value, ast.Name) and node.value.id == "os" and node.attr == "_exit")


def _stored_into(node: ast.AST) -> list[ast.expr]:
    """The targets ``node`` stores into or deletes (``setattr(x, ...)``: an attribute of x)."""
    if isinstance(node, ast.Assign | ast.Delete):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
    ):
        return [ast.Attribute(value=node.args[0], attr="?")] if node.args else []
    return []


def _parsed(text: str) -> list[ast.AST]:
    """``text`` as a module, if it is Python code (a child's program), else nothing."""
    try:
        return [ast.parse(text)]
    except SyntaxError:
        return []


def _benchmarks() -> list[Path]:
    return sorted(p for p in BENCHMARKS.glob("*.py") if p.stem != SHARED)


def test_benchmarks_use_topicmatchs_public_names() -> None:
    """A benchmark measures what a user can call: no private module or name of topicmatch, no
    monkeypatch of its internals."""
    scripts = _benchmarks()
    assert len(scripts) > 10
    for path in [*scripts, BENCHMARKS / f"{SHARED}.py"]:
        assert _offences(path.read_text(encoding="utf-8")) == set(), path.name


def test_no_benchmark_imports_another() -> None:
    """What scripts share is in benchmarks/_common.py; a script is not a library."""
    names = {p.stem for p in _benchmarks()}
    for path in _benchmarks():
        for line, module, _ in _imports_of(path):
            assert module.split(".")[0] not in names, (path.name, line, module)


def _imports_of(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module, [alias.name for alias in node.names]


def test_every_benchmark_says_what_it_answers_and_is_cited() -> None:
    """Each script's docstring gives its question (first line), its command and the figure it
    makes (``Figures:``), and docs/performance.md names it: no script that no doc knows."""
    performance = (BENCHMARKS.parent / "docs" / "performance.md").read_text(encoding="utf-8")
    for path in _benchmarks():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert doc.split("\n")[0], path.name
        assert f"benchmarks/{path.name}" in doc, (path.name, "its command")
        assert "Figures:" in doc, (path.name, "the figure it makes")
        assert path.name in performance, (path.name, "not in docs/performance.md")


def test_the_benchmark_check_sees_what_it_forbids() -> None:
    """The scan itself, on code made to break each rule."""
    source = (
        "import topicmatch\n"
        "from topicmatch._engine.walk import union_of\n"
        "from topicmatch.bench import workloads\n"
        "from topicmatch.spark import _worker\n"
        "m = topicmatch.Matcher()\n"
        "m._index.match\n"
        "workloads.build = print\n"
        "setattr(topicmatch, 'collector_paused', print)\n"
        "CHILD = 'from topicmatch._build import COMPILED_MODULES'\n"
        "os._exit(0)\n"
    )
    assert _offences(source) == {
        "imports topicmatch._engine",
        "imports topicmatch.spark._worker",
        "imports topicmatch._build",
        "._index",
        "patches topicmatch.bench.workloads.build",
        "patches topicmatch.?",
    }
