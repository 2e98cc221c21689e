"""What every command module shares: the usage error, the runner signature, optional extras.

A command module exposes ``add_commands(subparsers)`` (top-level commands) and/or
``add_bench_commands(subparsers)`` (``topicmatch bench ...`` experiments). Each command sets
``run=`` to a function ``run(options, stdin, stdout, stderr) -> int``. Heavy dependencies are
imported inside ``run`` through :func:`require`, so ``topicmatch --help`` stays fast and works
without any extra installed.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TextIO

__all__ = ["Runner", "UsageError", "require"]

Runner = Callable[[argparse.Namespace, TextIO, TextIO, TextIO], int]


class UsageError(Exception):
    """A problem with a command's input or environment: printed as one line, exit code 2."""


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or fail with the command that installs the extra providing it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(
            f"this needs the '{module.split('.', maxsplit=1)[0]}' package: pip install 'topicmatch[{extra}]'"
        ) from None
