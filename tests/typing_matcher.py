"""What typed code gets from ``Matcher[S]``: checked by mypy (``make check``), never run.

An error here (a wrong ``assert_type``, or an ``ignore`` that mypy no longer needs) fails the
check, so the subscriber type is pinned where users see it.
"""

from collections.abc import Hashable
from typing import assert_type

from topicmatch import Matcher, MatcherSnapshot

typed = Matcher[str]("trie", "mqtt")
assert_type(typed.lookup("a/b"), frozenset[str])
assert_type(typed.lookup_many(["a/b"]), list[frozenset[str]])
assert_type(typed.subscriptions(), dict[str, frozenset[str]])
assert_type(typed.snapshot(), MatcherSnapshot[str])
assert_type(typed.snapshot().lookup("a/b"), frozenset[str])
typed.subscribe("a/b", 1)  # type: ignore[arg-type]  # an int is not a str subscriber

untyped = Matcher()  # no annotation needed: the subscriber type defaults to Hashable
assert_type(untyped.lookup("a"), frozenset[Hashable])
