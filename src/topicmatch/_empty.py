"""The empty set of subscribers: what every lookup that finds nobody returns, one object.

A module of its own, below every index: the trie's walks (:mod:`._engine.walk`), its DFA
(:mod:`._engine.dfa`) and the indexes' base (:mod:`._index`) all return it, and none of them imports
another for it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final

__all__ = ["EMPTY"]

EMPTY: Final[frozenset[Hashable]] = frozenset()
