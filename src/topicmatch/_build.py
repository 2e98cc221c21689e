"""Which build of the core runs: compiled by mypyc, or its pure-Python source as it is.

One source, two builds (docs/compiled.md). An install on a machine with a C compiler compiles the
modules listed in pyproject.toml's ``[tool.topicmatch] compiled`` (setup.py) and records them,
with a hash of each one's source, in ``_compiled.json`` beside them; the ``.py`` files stay
installed too. Then:

* ``TOPICMATCH_PURE=1`` in the environment runs the pure build anyway: a finder put before
  Python's own imports ``topicmatch``'s modules from their ``.py`` files, never from the
  compiled extensions beside them (to profile or debug the core in Python, or to test both
  builds from one install). The same variable at install time compiles nothing.
* A compiled build whose source changed since it was built (an editable install, edited) is
  refused at import with an :class:`ImportError` that says how to rebuild it, rather than run
  code that is no longer the source's.

:data:`BUILD` says which build runs (``topicmatch.BUILD``; ``topicmatch --version`` shows it).
This module and ``__init__`` are never compiled: they decide how the others are imported.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Final

__all__ = ["BUILD", "BUILD_NOTE", "COMPILED_MODULES", "PURE_VARIABLE"]

#: The environment variable that asks for the pure build (at install time and at run time).
PURE_VARIABLE: Final = "TOPICMATCH_PURE"

_PACKAGE: Final = __name__.rpartition(".")[0]
_HERE: Final = Path(__file__).resolve().parent


def _pure_requested() -> bool:
    return os.environ.get(PURE_VARIABLE, "") not in ("", "0")


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the package's modules as their ``.py`` source where a compiled extension of the same
    name sits beside it; leaves every other import to Python's own finders."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith(_PACKAGE + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if (
            spec is None
            or spec.origin is None
            or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)
        ):
            return spec
        source = Path(spec.origin).with_name(fullname.rpartition(".")[2] + ".py")
        return importlib.util.spec_from_file_location(fullname, source) if source.is_file() else spec


def _stale(record: dict[str, str]) -> list[str]:
    """The compiled modules whose source is no longer the one they were compiled from."""
    stale = []
    for module, digest in record.items():
        source = _HERE.joinpath(*module.split(".")).with_suffix(".py")
        if source.is_file() and hashlib.sha256(source.read_bytes()).hexdigest() != digest:
            stale.append(module)
    return stale


def _extensions() -> set[str]:
    """The modules of the package that have a compiled extension beside them."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return {
        ".".join((*path.relative_to(_HERE).parent.parts, path.name.partition(".")[0]))
        for path in _HERE.rglob("*")
        if path.name.endswith(suffixes)
    }


def _choose() -> tuple[str, str, tuple[str, ...]]:
    """(the build that runs, a note on why, the modules compiled), after setting up the imports
    it needs."""
    record_path = _HERE / "_compiled.json"
    if _pure_requested():
        sys.meta_path.insert(0, _SourceFirst())
        return "pure", f"{PURE_VARIABLE} is set", ()
    record: dict[str, str] = json.loads(record_path.read_text())["modules"] if record_path.is_file() else {}
    rebuild = (
        f"rebuild it (`make venv`, or `pip install -e .`), or run the source as it is with {PURE_VARIABLE}=1"
    )
    unrecorded = _extensions() - set(record)
    if unrecorded:
        raise ImportError(
            f"topicmatch's package holds compiled modules its build did not record "
            f"({', '.join(sorted(unrecorded))}: left by an earlier build): {rebuild}"
        )
    if not record:
        return "pure", "installed without compiling", ()
    stale = _stale(record)
    if stale:
        raise ImportError(
            f"topicmatch's compiled core is older than its source ({', '.join(f'{m}.py' for m in stale)} "
            f"changed since it was built): {rebuild}"
        )
    return "compiled", f"{len(record)} core modules compiled by mypyc", tuple(record)


#: ``"compiled"`` or ``"pure"``: which build of the core this process runs; why (a few words);
#: and the modules that run compiled (none in the pure build).
BUILD, BUILD_NOTE, COMPILED_MODULES = _choose()
