"""The optional extras: which packages each provides, in one table, and the install hint.

The core needs nothing beyond the standard library. ``topicmatch.spark`` needs the ``spark``
extra and checks for it when imported; a command that needs an extra checks when it runs
(``topicmatch.support.commandline.require``), so ``topicmatch --help`` works with none installed. This
table mirrors ``[project.optional-dependencies]`` in pyproject.toml, by import name
(tests/test_cli.py checks that the two agree).
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Final

__all__ = ["EXTRAS", "extra_of", "install_hint", "missing"]

#: extra -> the top-level modules it provides (import names, not distribution names)
EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "amqtt": ("amqtt",),
    "kombu": ("kombu",),
    "spark": ("pyspark", "pyarrow", "pandas", "numpy"),
    "connect": ("pyspark", "pyarrow", "pandas", "numpy", "grpc", "grpc_status", "google", "zstandard"),
    "bench": ("matplotlib", "numpy", "paho", "kombu", "amqtt", "hdrh"),
}


def install_hint(extra: str) -> str:
    return f"pip install 'topicmatch[{extra}]'"


def extra_of(module: str) -> str:
    """The extra that provides ``module`` (a dotted name; its top-level package decides)."""
    top = module.split(".", maxsplit=1)[0]
    for extra, modules in EXTRAS.items():
        if top in modules:
            return extra
    raise KeyError(f"no extra provides {module!r}")


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    return [name for name in EXTRAS[extra] if find_spec(name) is None]
