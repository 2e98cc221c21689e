"""The type variables of the public signatures: the subscriber type, and the arguments that the
functions taking them check themselves.

``S``, the subscriber type: ``Matcher[str]`` returns ``frozenset[str]``, and a bare ``Matcher``
is ``Matcher[Hashable]``. ``Text``, ``Count`` and ``Flag``: a str, an int and a bool to type
checkers, checked at run time by the function that takes them (so the compiled build raises
the same typed errors as the pure one: below, and docs/compiled.md).

A module of its own, never compiled: the default of ``S`` (``Hashable``) needs
``typing_extensions``'s ``TypeVar`` for type checkers (``typing.TypeVar`` takes a default from
Python 3.13 on), and the ``TYPE_CHECKING`` branch that says so runs as written only in
interpreted code (a compiled module takes the branch type checkers take, and the core has no
runtime dependency).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, TypeVar

__all__ = ["Count", "Flag", "S", "Text"]

if TYPE_CHECKING:
    from typing_extensions import TypeVar as _TypeVarWithDefault

    S = _TypeVarWithDefault("S", bound=Hashable, default=Hashable)
else:
    S = TypeVar("S", bound=Hashable)

#: A str that the function taking it checks itself at run time (a pattern, a topic, a name): type
#: checkers take a str only, and anything else raises the function's typed error. A type variable
#: rather than ``str`` for the compiled build: mypyc checks an argument annotated ``str`` on entry
#: and raises a bare ``TypeError`` before the function's own check runs, and it erases a
#: constrained type variable to ``object`` (docs/compiled.md). Both constraints are ``str``: a
#: constrained type variable takes two.
Text = TypeVar("Text", str, str)
#: An int that the function taking it checks itself (a limit, a size), for the same reason.
Count = TypeVar("Count", int, int)
#: A bool that the function taking it checks itself, for the same reason.
Flag = TypeVar("Flag", bool, bool)
