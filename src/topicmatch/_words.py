"""The dialect-neutral form every algorithm works on, and the one-pattern matcher.

A dialect turns pattern text into a tuple of *tokens*: literal words (``str``) and the two
wildcards :data:`STAR` (exactly one word) and :data:`HASH` (zero or more words). MQTT's ``+``
becomes ``STAR``; NATS's ``>`` (one or more tokens) becomes ``STAR, HASH``. The wildcards are
singletons that are not strings, so a literal word spelled ``*`` (possible in MQTT, and in a
published AMQP or NATS topic) can never be confused with a wildcard.

Patterns are canonicalised before any algorithm sees them: inside a run of wildcards, ``HASH``
after ``HASH`` adds nothing (``#.#`` is ``#``) and ``HASH`` before ``STAR`` equals ``STAR`` before
``HASH`` (``#.*`` is ``*.#``: both mean "one or more words"). So a run of wildcards is always
``STAR``* followed by at most one ``HASH``. Tries then never have a ``HASH`` node with wildcard
children, and equivalent patterns share structure.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final, TypeAlias

__all__ = ["HASH", "STAR", "Token", "Tokens", "Wildcard", "canonical", "pattern_matches"]


class Wildcard(enum.Enum):
    """The two wildcard tokens, compared by identity. An enum so that type checkers narrow a
    token to ``str`` once it is neither (``if token is STAR: ... elif token is HASH: ...
    else: <a str>``); members pickle by name, so identity survives a trip to another process
    (Spark workers)."""

    STAR = "*"
    HASH = "#"

    def __repr__(self) -> str:
        return f"<{self.value}>"

    # Identity is equality for these singletons: hash them as objects, in C (Enum's own hash
    # runs Python code, 4x slower as a dict key: the optimized bitmap's rows are keyed by token).
    __hash__ = object.__hash__


STAR: Final = Wildcard.STAR
"""Matches exactly one word."""
HASH: Final = Wildcard.HASH
"""Matches zero or more words."""

Token: TypeAlias = "str | Wildcard"
Tokens: TypeAlias = "tuple[Token, ...]"


def canonical(tokens: Tokens) -> Tokens:
    """Rewrite each run of wildcards as its STARs followed by at most one HASH.

    >>> canonical(("a", HASH, STAR, HASH, "b"))
    ('a', <*>, <#>, 'b')
    """
    out: list[Token] = []
    stars = 0
    has_hash = False
    for token in tokens:
        if token is STAR:
            stars += 1
        elif token is HASH:
            has_hash = True
        else:
            if stars or has_hash:
                out.extend([STAR] * stars)
                if has_hash:
                    out.append(HASH)
                stars, has_hash = 0, False
            out.append(token)
    out.extend([STAR] * stars)
    if has_hash:
        out.append(HASH)
    return tuple(out)


def pattern_matches(tokens: Tokens, words: Sequence[str], dollar_rule: bool = False) -> bool:
    """Whether one canonical pattern matches one topic's words.

    ``dollar_rule`` applies MQTT's rule that a topic whose first word starts with ``$`` is not
    matched by a pattern whose first token is a wildcard.

    The classic two-pointer wildcard match: on a mismatch, go back to the last ``HASH`` and let it
    swallow one more word. It never backtracks further than the last ``HASH`` (a later ``HASH``
    can absorb anything an earlier one could), so it runs in O(len(tokens) * len(words)) at
    worst and in linear time on ordinary patterns, never exponentially.

    >>> pattern_matches(("a", HASH, "b"), ("a", "x", "y", "b"))
    True
    >>> pattern_matches((HASH,), ("$SYS", "b"), dollar_rule=True)
    False
    """
    if dollar_rule and words and tokens and type(tokens[0]) is not str and words[0][:1] == "$":
        return False
    np, nw = len(tokens), len(words)
    p = w = 0
    back_p = back_w = -1
    while w < nw:
        if p < np:
            token = tokens[p]
            if token is HASH:
                back_p, back_w = p, w
                p += 1
                continue
            if token is STAR or token == words[w]:
                p += 1
                w += 1
                continue
        if back_p < 0:
            return False
        # Let the last HASH absorb one more word and retry after it.
        back_w += 1
        w = back_w
        p = back_p + 1
    while p < np and tokens[p] is HASH:
        p += 1
    return p == np
