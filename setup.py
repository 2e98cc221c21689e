"""How the core is built: compiled by mypyc from its own Python source, or left as it is.

The project's metadata is in pyproject.toml; this file holds only the one decision a static
file cannot make. The modules listed in pyproject.toml's ``[tool.topicmatch] compiled`` are
compiled by mypyc (into one shared library, ``topicmatch__mypyc``, and one small extension per
module) when

* the environment variable ``TOPICMATCH_PURE`` is unset, empty or ``0``, and
* this Python can build C extensions: its C compiler (``sysconfig``'s ``CC``) compiles a file
  that includes ``Python.h``.

Otherwise nothing is compiled and the wheel is pure (``py3-none-any``): the same ``.py`` files run
as they are. A compiled build also writes ``_compiled.json`` beside the extensions: the modules it
compiled and a hash of each one's source, which ``topicmatch._build`` checks at import (an
editable install whose source changed since its build says so instead of running stale code).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sysconfig
import tempfile
import tomllib
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
PACKAGE = "topicmatch"
SOURCE = ROOT / "src" / PACKAGE


def compiled_modules() -> list[str]:
    """The modules to compile: pyproject.toml's ``[tool.topicmatch] compiled``."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        return list(tomllib.load(file)["tool"]["topicmatch"]["compiled"])


def source_of(module: str) -> Path:
    """A compiled module's source file under the package (``_engine.trie``: ``_engine/trie.py``)."""
    return Path(*module.split(".")).with_suffix(".py")


def pure_requested() -> bool:
    return os.environ.get("TOPICMATCH_PURE", "") not in ("", "0")


def can_compile() -> bool:
    """Whether this Python's C compiler builds a file that includes ``Python.h``."""
    cc = sysconfig.get_config_var("CC")
    include = sysconfig.get_paths()["include"]
    if not cc or not (Path(include) / "Python.h").is_file():
        return False
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "probe.c"
        probe.write_text("#include <Python.h>\nint probe(void) { return Py_IsInitialized(); }\n")
        try:
            run = subprocess.run(
                [*shlex.split(cc), "-I", include, "-c", str(probe), "-o", str(Path(scratch) / "probe.o")],
                capture_output=True,
                check=False,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return run.returncode == 0


def _decide() -> bool:
    if pure_requested():
        print("topicmatch: TOPICMATCH_PURE is set: the core is not compiled (a pure-Python build)")
        return False
    if not can_compile():
        print("topicmatch: no working C compiler for this Python: the core is not compiled (a pure build)")
        return False
    return True


COMPILE = _decide()


class _Distribution(Distribution):
    """A distribution whose wheel is platform-specific exactly when the core is compiled (its
    extensions are made by :class:`_BuildCompiled`, so setup() is given none up front: an sdist
    then holds the Python source and nothing generated)."""

    def has_ext_modules(self) -> bool:
        return COMPILE


class _BuildCompiled(build_ext):
    """build_ext of the mypyc extensions, generated when a build needs them, not when setup.py is
    read (which every command does, metadata included). An sdist holds no generated C: it is
    built from the Python source again wherever it is installed."""

    def finalize_options(self) -> None:
        from mypyc.build import mypycify  # noqa: PLC0415 - a build requirement, used by compiled builds only

        self.modules = compiled_modules()
        self.distribution.ext_modules = mypycify(
            [str(Path("src") / PACKAGE / source_of(module)) for module in self.modules],
            opt_level="3",
            group_name=PACKAGE,
        )
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def get_source_files(self) -> list[str]:
        return []

    def run(self) -> None:
        # The package's own folder (a top-level module's extension lies there).
        top = next(module for module in self.modules if "." not in module)
        target = Path(self.get_ext_fullpath(f"{PACKAGE}.{top}")).parent
        old_record = target / "_compiled.json"
        if old_record.is_file():
            # An earlier build in place (an editable install): its extensions of modules no longer
            # compiled would be imported instead of their source. Only what it recorded goes.
            for module in json.loads(old_record.read_text())["modules"]:
                if module not in self.modules:
                    Path(self.get_ext_fullpath(f"{PACKAGE}.{module}")).unlink(missing_ok=True)
        super().run()
        record = {
            module: hashlib.sha256((SOURCE / source_of(module)).read_bytes()).hexdigest()
            for module in self.modules
        }
        (target / "_compiled.json").write_text(json.dumps({"modules": record}, indent=1) + "\n")


setup(distclass=_Distribution, cmdclass={"build_ext": _BuildCompiled} if COMPILE else {})
