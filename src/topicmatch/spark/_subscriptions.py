"""The subscription table: read, validated before any work, versioned, and shipped as data.

A :class:`Subscriptions` holds (pattern, subscriber) pairs for one dialect. Every pattern is
validated on the driver when the table is built, so an invalid one stops the job before any
Spark work, with the file and line (or row) and the reason, unless ``skip_invalid=True``: then
it is left out and listed in :attr:`Subscriptions.skipped`.

Subscribers are strings or integers. Each distinct subscriber gets a dense id (its index in
:attr:`Subscriptions.subscribers`); the workers match to ids and turn ids back into values with
one vectorised ``take``. The :attr:`~Subscriptions.version` is a hash of the content (dialect
included): the workers key their matcher by it, so a new version of the table gets a new
matcher, and the streaming summary names the version that routed each batch.
"""

from __future__ import annotations

import hashlib
import pickle
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped, unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]

from .. import InvalidPatternError, Matcher, make_dialect
from ..support.pair_files import LISTED, pair_format, read_pair_file
from ._errors import InvalidSubscriptionError, SubscriptionsError
from ._levels import plain_mask

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["Skipped", "Subscriptions", "fingerprint"]

#: (where, pattern, reason) of a pattern left out with ``skip_invalid=True``
Skipped = tuple[str, str, str]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


class Subscriptions:
    """A validated, versioned subscription table for one dialect.

    Build it with :meth:`from_pairs`, :meth:`from_dataframe`, :meth:`from_arrow` or :meth:`read`.
    ``len()`` is the number of rows kept (duplicates included: subscribing twice is idempotent).
    """

    __slots__ = (
        "_payload",
        "_plain",
        "dialect",
        "patterns",
        "pedantic",
        "skipped",
        "source",
        "subscriber_ids",
        "subscribers",
        "version",
    )

    def __init__(
        self,
        patterns: list[str],
        subscriber_ids: np.ndarray[Any, np.dtype[np.int32]],
        subscribers: pa.Array,
        dialect: str,
        pedantic: bool,
        source: str,
        skipped: list[Skipped],
    ) -> None:
        self.patterns = patterns
        self.subscriber_ids = subscriber_ids
        self.subscribers = subscribers
        self.dialect = dialect
        self.pedantic = pedantic
        self.source = source
        self.skipped = skipped
        digest = hashlib.sha256(f"{dialect}|{pedantic}|{len(patterns)}\x00".encode())
        digest.update("\x00".join(patterns).encode("utf-8", "surrogatepass"))
        digest.update(b"\x01" + subscriber_ids.tobytes())
        digest.update(b"\x01" + repr(subscribers.to_pylist()).encode("utf-8", "surrogatepass"))
        self.version: str = digest.hexdigest()[:12]
        self._payload: bytes | None = None
        self._plain: BoolArray | None = None

    def __len__(self) -> int:
        return len(self.patterns)

    def __repr__(self) -> str:
        return (
            f"<Subscriptions {self.dialect} version={self.version} rows={len(self)} "
            f"subscribers={len(self.subscribers)} source={self.source!r}>"
        )

    # -- building --------------------------------------------------------------------------
    @classmethod
    def from_arrow(
        cls,
        patterns: pa.Array,
        subscribers: pa.Array,
        *,
        dialect: str = "amqp",
        pedantic: bool = False,
        skip_invalid: bool = False,
        source: str = "subscriptions",
        where: Callable[[int], str] | None = None,
    ) -> Subscriptions:
        """Validate the two columns; ``where(i)`` names row ``i`` in errors (default ``row i+1``)."""
        where = where or (lambda i: f"{source}: row {i + 1}")
        if isinstance(patterns, pa.ChunkedArray):
            patterns = patterns.combine_chunks()
        if isinstance(subscribers, pa.ChunkedArray):
            subscribers = subscribers.combine_chunks()
        if not (pa.types.is_string(patterns.type) or pa.types.is_large_string(patterns.type)):
            raise SubscriptionsError(f"{source}: the pattern column must hold strings, not {patterns.type}")
        kind = subscribers.type
        if pa.types.is_large_string(kind) or pa.types.is_null(kind):
            subscribers = subscribers.cast(pa.string())
        elif not (pa.types.is_string(kind) or pa.types.is_integer(kind)):
            raise SubscriptionsError(f"{source}: subscribers must be strings or integers, not {kind}")
        for name, column in (("pattern", patterns), ("subscriber", subscribers)):
            if column.null_count:
                first = pc.index(pc.is_null(column), True).as_py()
                raise SubscriptionsError(f"{where(first)}: the {name} is null")
        dialect_rules = make_dialect(dialect, pedantic=pedantic)
        texts: list[str] = patterns.to_pylist()
        # A plain pattern (ordinary ASCII words) is valid in every dialect: only the others are
        # parsed here, one by one (a table of ten million device topics is mostly plain).
        plain = plain_mask(patterns, dialect_rules)
        bad: list[int] = []
        skipped: list[Skipped] = []
        checked: dict[str, str | None] = {}  # pattern -> reason it is invalid, or None
        for i in np.flatnonzero(~plain).tolist():
            pattern = texts[i]
            if pattern in checked:
                reason = checked[pattern]
            else:
                reason = checked[pattern] = _check(dialect_rules, pattern)
            if reason is None:
                continue
            if skip_invalid or len(skipped) < LISTED:
                skipped.append((where(i), pattern, reason))
            bad.append(i)
        if bad and not skip_invalid:  # one error listing them (the first LISTED), before any work
            first, pattern, reason = skipped[0]
            raise InvalidSubscriptionError(first, dialect, pattern, reason, skipped[1:], len(bad))
        if bad:
            keep = np.ones(len(texts), dtype=bool)
            keep[bad] = False
            subscribers = subscribers.filter(pa.array(keep))
            texts = [text for text, kept in zip(texts, keep.tolist(), strict=True) if kept]
            plain = plain[keep]
        # Ids in the subscribers' sorted order (Arrow sorts strings by their UTF-8 bytes, as
        # Spark compares them): a worker's sorted ids are then sorted subscribers, which is
        # what route's nested layout promises.
        distinct = pc.unique(subscribers)
        distinct = distinct.take(pc.sort_indices(distinct))
        ids = pc.index_in(subscribers, value_set=distinct).to_numpy(zero_copy_only=False).astype(np.int32)
        table = cls(texts, ids, distinct, dialect, pedantic, source, skipped)
        table._plain = plain
        return table

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, Any]], **options: Any) -> Subscriptions:
        """From (pattern, subscriber) pairs; errors name the pair's position (``pair 3``)."""
        rows = list(pairs)
        for i, row in enumerate(rows):
            if not isinstance(row, tuple | list) or len(row) != 2:
                raise SubscriptionsError(f"pair {i + 1}: expected (pattern, subscriber), got {row!r}")
        try:
            subscribers = pa.array([row[1] for row in rows])
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise SubscriptionsError(f"subscribers must all be strings or all integers: {error}") from None
        options.setdefault("source", "pairs")
        options.setdefault("where", lambda i: f"pair {i + 1}")
        return cls.from_arrow(pa.array([row[0] for row in rows], pa.string()), subscribers, **options)

    @classmethod
    def from_dataframe(
        cls,
        frame: DataFrame,
        *,
        pattern_col: str = "pattern",
        subscriber_col: str = "subscriber",
        **options: Any,
    ) -> Subscriptions:
        """From a Spark DataFrame's two columns, collected to the driver (rows in collect order)."""
        missing = [c for c in (pattern_col, subscriber_col) if c not in frame.columns]
        if missing:
            raise SubscriptionsError(
                f"the subscriptions have no column {', '.join(map(repr, missing))} "
                f"(columns: {', '.join(frame.columns)})"
            )
        table = frame.select(pattern_col, subscriber_col).toArrow()
        options.setdefault("source", "subscriptions DataFrame")
        return cls.from_arrow(table.column(0), table.column(1), **options)

    @classmethod
    def read(cls, path: str | Path, **options: Any) -> Subscriptions:
        """Read a subscription file as ``topicmatch match`` and ``route`` both read it.

        The format comes from the name (:func:`~topicmatch.support.pair_files.pair_format`:
        Parquet, CSV, JSON lines or TSV; a directory is Parquet, a name without an ending TSV);
        the text formats follow :mod:`topicmatch.support.pair_files`' one rule. Errors name the
        file and line (text formats) or the row (Parquet).
        """
        name = str(path)
        options.setdefault("source", name)
        fmt = pair_format(path, SubscriptionsError)
        if fmt != "parquet":
            rows = read_pair_file(path, SubscriptionsError, fmt)
            lines = [line for line, _, _ in rows]
            options.setdefault("where", lambda i: f"{name}:{lines[i]}")
            patterns = pa.array([pattern for _, pattern, _ in rows], pa.string())
            try:
                subscribers = pa.array([subscriber for *_, subscriber in rows])
            except OverflowError:  # one kind on every line (pair_files checked), but over 64 bits
                raise SubscriptionsError(f"{name}: the integer subscribers must fit in 64 bits") from None
            return cls.from_arrow(patterns, subscribers, **options)
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as error:
            raise SubscriptionsError(f"cannot read {name}: {_first_line(error)}") from None
        missing = [c for c in ("pattern", "subscriber") if c not in table.column_names]
        if missing:
            raise SubscriptionsError(
                f"{name} has no column {', '.join(map(repr, missing))} "
                f"(columns: {', '.join(table.column_names)})"
            )
        options.setdefault("where", lambda i: f"{name}: row {i + 1}")
        return cls.from_arrow(table.column("pattern"), table.column("subscriber"), **options)

    # -- using -----------------------------------------------------------------------------
    def plain_rows(self) -> BoolArray:
        """Per row, whether its pattern is *plain*: ordinary ASCII words as
        :meth:`~topicmatch.Dialect.plain_topics` defines them, within the word limit. Such a
        pattern is valid in every dialect and has no wildcard: it matches the equal topic only."""
        if self._plain is None:
            self._plain = plain_mask(pa.array(self.patterns, pa.string()), make_dialect(self.dialect))
        return self._plain

    def pairs(self) -> Iterator[tuple[str, Any]]:
        """The (pattern, subscriber) pairs kept, in the table's order, subscribers by value."""
        values = self.subscribers.to_pylist()
        for pattern, sid in zip(self.patterns, self.subscriber_ids.tolist(), strict=True):
            yield pattern, values[sid]

    def matcher(self) -> Matcher:
        """A pure-Python :class:`~topicmatch.Matcher` of these pairs, subscribers by value.

        The reference the pipeline is tested against; not used by the pipeline itself.
        """
        matcher = Matcher(dialect=self.dialect, pedantic=self.pedantic)
        for pattern, subscriber in self.pairs():
            matcher.subscribe(pattern, subscriber)
        return matcher

    def payload(self) -> bytes:
        """What the workers receive: the pairs, compressed (built once, then kept)."""
        if self._payload is None:
            data = (self.patterns, self.subscriber_ids.tobytes(), self.subscribers)
            self._payload = zlib.compress(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL), 1)
        return self._payload

    def describe(self) -> dict[str, object]:
        """The facts the summaries print: version, source, counts, skipped patterns."""
        return {
            "version": self.version,
            "source": self.source,
            "dialect": self.dialect,
            "subscriptions": len(self),
            "subscribers": len(self.subscribers),
            "skipped": [{"where": w, "pattern": p, "reason": r} for w, p, r in self.skipped],
        }


def unpack_payload(payload: bytes) -> tuple[list[str], np.ndarray[Any, np.dtype[np.int32]], pa.Array]:
    """The inverse of :meth:`Subscriptions.payload`, run in the workers."""
    patterns, ids, subscribers = pickle.loads(zlib.decompress(payload))
    return patterns, np.frombuffer(ids, dtype=np.int32), subscribers


def fingerprint(path: str | Path) -> tuple[tuple[str, int, int], ...]:
    """(name, size, mtime) of the file or of every file under the directory: cheap change check."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    out = []
    for file in files:
        try:
            stat = file.stat()
        except OSError:
            continue
        out.append((str(file), stat.st_size, stat.st_mtime_ns))
    return tuple(out)


def _check(dialect: Any, pattern: str) -> str | None:
    try:
        dialect.parse_pattern(pattern)
    except InvalidPatternError as error:
        return str(error.reason)
    return None


def _first_line(error: BaseException) -> str:
    text = str(getattr(error, "strerror", None) or error)
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__
