"""Subscription files as text, TSV or CSV, read by one rule (``topicmatch match`` and ``route``),
and the two checks both commands make of the patterns they read.

The rule, for both formats:

* One (pattern, subscriber) pair per line: fields separated by a tab (TSV: a field cannot hold
  a tab, and nothing is quoted) or a comma (CSV, with CSV's double quotes around a field that
  holds a comma, a quote or a line break). Blank lines are skipped.
* A first line that has fields named ``pattern`` and ``subscriber`` is a header: it says which
  columns they are (other columns are allowed and ignored, and every line then has the header's
  number of fields). A CSV file must start with one (a CSV file's first line is a header by
  custom, and ``filter,client`` taken for a subscription would deliver to "client"); a TSV file
  may (without one a line has exactly two fields, the pattern first), but a first line naming
  one of the two columns and not the other is refused as a header that lost a name.
* An empty subscriber, or a pattern or subscriber that starts or ends with whitespace, is an
  error: such a line would silently match nothing, or deliver to a name nobody uses. (An empty
  pattern is the dialect's to judge: AMQP's matches the empty routing key.) Every error names
  the file and the line.

The checks: :func:`invalid_patterns` writes the one error that lists a file's invalid patterns
(at most :data:`LISTED`, the rest counted); :func:`dialect_warning` notices patterns written for
another dialect than the one they are read with.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Iterator, Sequence

__all__ = ["HEADERS", "LISTED", "dialect_warning", "invalid_patterns", "read_pairs"]

#: The headers a subscription file may start with, one per text format.
HEADERS = {"csv": "pattern,subscriber", "tsv": "pattern<TAB>subscriber"}


def read_pairs(
    lines: Iterable[str], source: str, error: type[Exception], *, csv_format: bool = False
) -> Iterator[tuple[int, str, str]]:
    """(line number, pattern, subscriber) per pair; a line that breaks the rule raises ``error``.

    >>> list(read_pairs(["pattern\\tsubscriber\\n", "a.*\\tx\\n", "\\n", "#\\ty"], "subs.tsv", ValueError))
    [(2, 'a.*', 'x'), (4, '#', 'y')]
    >>> list(read_pairs(["subscriber,pattern,note", 'x,"a,b",hi'], "subs.csv", ValueError, csv_format=True))
    [(2, 'a,b', 'x')]
    >>> list(read_pairs(["a.b\\tx\\ty"], "subs.tsv", ValueError))
    Traceback (most recent call last):
    ...
    ValueError: subs.tsv:1: expected 2 fields (pattern<TAB>subscriber), found 3
    >>> list(read_pairs(["filter,client", "a.*,x"], "subs.csv", ValueError, csv_format=True))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: subs.csv:1: expected a header naming the columns pattern and subscriber (...), not [...]
    """
    if csv_format:
        reader = csv.reader(lines)
        layout = HEADERS["csv"]
    else:
        reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
        layout = HEADERS["tsv"]
    width, p, s = 2, 0, 1
    first = True
    for row in reader:
        if not any(field.strip() for field in row):
            continue
        where = f"{source}:{reader.line_num}"
        if first:
            first = False
            named = {"pattern", "subscriber"} & set(row)
            if len(named) == 2:
                width, p, s = len(row), row.index("pattern"), row.index("subscriber")
                continue
            if named or csv_format:
                raise error(
                    f"{where}: expected a header naming the columns pattern and subscriber "
                    f"({HEADERS['csv']} for CSV, {HEADERS['tsv']} for TSV; other columns are "
                    f"ignored), not {row!r}"
                )
        if len(row) != width:
            expected = f"{width} fields, as the header" if width != 2 else f"2 fields ({layout})"
            raise error(f"{where}: expected {expected}, found {len(row)}")
        pattern, subscriber = row[p], row[s]
        if not subscriber:
            raise error(f"{where}: the subscriber is empty")
        for what, value in (("pattern", pattern), ("subscriber", subscriber)):
            if value != value.strip():
                raise error(f"{where}: the {what} {value!r} starts or ends with whitespace")
        yield reader.line_num, pattern, subscriber


#: How many invalid patterns one error lists; the others are counted.
LISTED = 20


def invalid_patterns(listed: Sequence[str], total: int) -> str:
    """The one error of ``total`` invalid patterns, ``listed`` the first of them (each
    ``"file:line: reason"``, at most :data:`LISTED`): the first on the first line, then the
    others one per line, then how many more.

    >>> print(invalid_patterns(["s.tsv:2: bad 'a'", "s.tsv:5: bad 'b'"], 30))
    s.tsv:2: bad 'a'; 30 invalid patterns in all:
      s.tsv:5: bad 'b'
      ... and 28 more
    """
    if total == 1:
        return listed[0]
    lines = [f"{listed[0]}; {total:,} invalid patterns in all:", *(f"  {entry}" for entry in listed[1:])]
    if total > len(listed):
        lines.append(f"  ... and {total - len(listed):,} more")
    return "\n".join(lines)


#: Each dialect's separator and wildcards, as :func:`dialect_warning` compares them.
_LOOKS = {"amqp": (".", ("*", "#")), "mqtt": ("/", ("+", "#")), "nats": (".", ("*", ">"))}
#: How many patterns :func:`dialect_warning` looks at (the first ones): its cost is bounded.
SAMPLE = 10_000


def dialect_warning(patterns: Iterable[str], dialect: str) -> str | None:
    """A warning when most patterns look written for another dialect than ``dialect``: they use
    another dialect's separator and not this one's, or a wildcard word this dialect does not have
    (``+`` is a plain word in AMQP, ``>`` in AMQP and MQTT, ``#`` in NATS). Such patterns are
    valid, and silently match other topics than their author meant. None when no other dialect
    fits more than half of the first :data:`SAMPLE` patterns. O(their total length).

    >>> print(dialect_warning(["sensors/+/temp", "sensors/#", "a/b"], "amqp"))
    ... # doctest: +NORMALIZE_WHITESPACE
    3 of 3 patterns look like mqtt patterns (separator '/', wildcards + #), not amqp ones:
    pass --dialect mqtt if they are
    >>> dialect_warning(["stock.*.ibm", "stock.#"], "amqp") is None
    True
    """
    sample = list(itertools.islice(patterns, SAMPLE))
    separator, wildcards = _LOOKS[dialect]
    best, best_count = "", 0
    for other, (other_separator, other_wildcards) in _LOOKS.items():
        if other == dialect:
            continue
        foreign = set(other_wildcards) - set(wildcards)
        count = sum(
            1
            for pattern in sample
            if (other_separator != separator and other_separator in pattern and separator not in pattern)
            or not foreign.isdisjoint(pattern.split(other_separator))
        )
        if count > best_count:
            best, best_count = other, count
    if 2 * best_count <= len(sample):
        return None
    other_separator, other_wildcards = _LOOKS[best]
    return (
        f"{best_count:,} of {len(sample):,} patterns look like {best} patterns (separator "
        f"{other_separator!r}, wildcards {' '.join(other_wildcards)}), not {dialect} ones: "
        f"pass --dialect {best} if they are"
    )
