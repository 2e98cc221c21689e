"""What every command shares, whichever layer or package declares it: the usage error, the
runner signature, the check of optional extras, the benchmarks' ``--out`` and ``--repeat``.

It sits beside the core (standard library only) so that the command line, the Spark pipeline,
the benchmarks and the latency harness (``topicmatch_latency``) all use it without importing
each other. A command sets ``run=`` to a function ``run(options, stdin, stdout, stderr) -> int``. Heavy
dependencies are imported inside ``run`` after :func:`require`, so ``topicmatch --help`` stays
fast and works without any extra installed.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TextIO

from .extras import EXTRAS, extra_of, install_hint

__all__ = [
    "Runner",
    "UsageError",
    "add_out",
    "add_repeat",
    "counted",
    "rate",
    "repeat_of",
    "require",
    "require_extra",
]

Runner = Callable[[argparse.Namespace, TextIO, TextIO, TextIO], int]


class UsageError(Exception):
    """A problem with a command's input or environment: printed as one line, exit code 2."""


def require(module: str) -> ModuleType:
    """Import ``module``, or fail with the command that installs the extra providing it
    (:data:`topicmatch.support.extras.EXTRAS`)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".", maxsplit=1)[0]
        raise UsageError(f"this needs the '{top}' package: {install_hint(extra_of(module))}") from None


def require_extra(extra: str) -> None:
    """Fail, as :func:`require` does, unless every module of ``extra`` can be imported."""
    for module in EXTRAS[extra]:
        require(module)


def add_out(parser: argparse.ArgumentParser, default: str) -> None:
    """The ``--out DIR`` of a benchmark command (its reports go to out/bench/NAME by default)."""
    help_text = f"output directory (default: {default})"
    parser.add_argument("--out", type=Path, metavar="DIR", default=Path(default), help=help_text)


def add_repeat(
    parser: argparse.ArgumentParser, what: str, default: int = 5, quick: int | None = None
) -> None:
    """The ``--repeat N`` of a benchmark command; ``what`` says what is repeated. With ``quick``,
    ``--quick`` lowers the default to it: the option is then None unless given, and the runner
    takes :func:`repeat_of` it."""
    if quick is None:
        help_text = f"{what}; the median is reported (default: {default})"
        parser.add_argument("--repeat", type=int, metavar="N", default=default, help=help_text)
        return
    help_text = f"{what}; the median is reported (default: {default}, with --quick {quick})"
    parser.add_argument("--repeat", type=int, metavar="N", default=None, help=help_text)
    parser.set_defaults(repeat_defaults=(default, quick))


def repeat_of(options: argparse.Namespace) -> int:
    """The ``--repeat`` of a command declared by ``add_repeat(..., quick=...)``: as given, else
    its default for a ``--quick`` run or a full one."""
    if options.repeat is not None:
        return int(options.repeat)
    default, quick = options.repeat_defaults
    return int(quick if options.quick else default)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural unless it is one, thousands separated.

    >>> counted(1, "delivery", "deliveries"), counted(1_000, "file"), counted(0, "message")
    ('1 delivery', '1,000 files', '0 messages')
    """
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def rate(count: float, seconds: float, unit: str) -> str:
    """``count`` per second as a person reads it: whole numbers from 10 on, two significant
    digits below (never "0 msg/s" for a small job that took a while), "-" without a time.

    >>> rate(1_000_000, 2.0, "msg/s"), rate(2, 6.7, "msg/s"), rate(5, 0, "msg/s")
    ('500,000 msg/s', '0.3 msg/s', '- msg/s')
    """
    if seconds <= 0:
        return f"- {unit}"
    per = count / seconds
    return f"{per:,.0f} {unit}" if per >= 10 or per == 0 else f"{per:.2g} {unit}"
