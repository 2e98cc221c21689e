"""The subscriptions file format of ``topicmatch match`` and ``topicmatch route``: one
``pattern<TAB>subscriber`` per line; blank lines are skipped."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["tsv_pairs"]


def tsv_pairs(lines: Iterable[str], source: str, error: type[Exception]) -> Iterator[tuple[int, str, str]]:
    """(line number, pattern, subscriber) per line; a malformed line raises ``error`` naming it.

    >>> list(tsv_pairs(["a.*\\tx\\n", "\\n", "#\\ty"], "subs.tsv", ValueError))
    [(1, 'a.*', 'x'), (3, '#', 'y')]
    >>> list(tsv_pairs(["a.b"], "subs.tsv", ValueError))
    Traceback (most recent call last):
    ...
    ValueError: subs.tsv:1: expected 'pattern<TAB>subscriber', found no tab
    """
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        pattern, tab, subscriber = line.partition("\t")
        if not tab:
            raise error(f"{source}:{number}: expected 'pattern<TAB>subscriber', found no tab")
        if not subscriber:
            raise error(f"{source}:{number}: the subscriber is empty")
        yield number, pattern, subscriber
