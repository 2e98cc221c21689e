"""Subscription files as text, TSV or CSV, read by one rule (``topicmatch match`` and ``route``).

The rule, for both formats:

* One (pattern, subscriber) pair per line: fields separated by a tab (TSV: a field cannot hold
  a tab, and nothing is quoted) or a comma (CSV, with CSV's double quotes around a field that
  holds a comma, a quote or a line break). Blank lines are skipped.
* A first line that has fields named ``pattern`` and ``subscriber`` is a header: it says which
  columns they are (other columns are allowed and ignored, and every line then has the header's
  number of fields). Without a header a line has exactly two fields, the pattern first.
* An empty subscriber, or a pattern or subscriber that starts or ends with whitespace, is an
  error: such a line would silently match nothing, or deliver to a name nobody uses. (An empty
  pattern is the dialect's to judge: AMQP's matches the empty routing key.) Every error names
  the file and the line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

__all__ = ["read_pairs"]


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
    """
    if csv_format:
        reader = csv.reader(lines)
        layout = "pattern,subscriber"
    else:
        reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
        layout = "pattern<TAB>subscriber"
    width, p, s = 2, 0, 1
    first = True
    for row in reader:
        if not any(field.strip() for field in row):
            continue
        where = f"{source}:{reader.line_num}"
        if first:
            first = False
            if "pattern" in row and "subscriber" in row:
                width, p, s = len(row), row.index("pattern"), row.index("subscriber")
                continue
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
