r"""The naive way to route on Spark, for the benchmark only: a cross join filtered by ``rlike``.

Each pattern becomes a Java regular expression over the topic with a separator in front of
every word (``stock.nyse.ibm`` is matched as ``.stock.nyse.ibm``), so that a word, a one-word
wildcard and a many-words wildcard are each one regex piece:

* a word ``w``: ``\.w``;
* the one-word wildcard: ``\.[^.]*`` (NATS: ``\.[^.]+``, as an empty token matches nothing);
* the many-words wildcard: ``(?:\.[^.]*)*`` (NATS: ``(?:\.[^.]+)*``).

(``/`` in place of ``.`` for MQTT.) The tokens come from the dialect's own parser, so the
regex means exactly what the pattern means: NATS ``>`` is "one word, then many", an MQTT
``$share/g/f`` is ``f``, and MQTT's ``$`` rule is a look-ahead refusing a ``$`` first word
to a pattern that starts with a wildcard. The subscriptions (the small side) are broadcast,
every message is tested against every regex, and a subscriber whose several patterns match a
message is de-duplicated at the end. (Broadcasting the messages instead, so that each task
keeps one compiled regex for many messages, measured the same: the evaluations dominate.)
"""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .. import Wildcard, make_dialect
from ..spark import Subscriptions

__all__ = ["naive_route", "pattern_regex"]

_META = set("\\.[]{}()<>*+-=!?^$|&~#@%\"' /")


def _quote(word: str) -> str:
    return "".join("\\" + c if c in _META else c for c in word)


def pattern_regex(pattern: str, dialect: str = "amqp") -> str:
    r"""A Java (and Python) regex matching ``SEP + topic`` exactly when ``pattern`` matches ``topic``.

    >>> pattern_regex("stock.*.ibm")
    '^\\.stock\\.[^\\.]*\\.ibm$'
    >>> import re
    >>> [bool(re.search(pattern_regex("a.#.b"), "." + t)) for t in ("a.b", "a.x.y.b", "a.bb")]
    [True, True, False]
    >>> [bool(re.search(pattern_regex("+/t", "mqtt"), "/" + t)) for t in ("k/t", "$SYS/t")]
    [True, False]
    """
    rules = make_dialect(dialect)
    sep = _quote(rules.separator)
    word = f"[^{sep}]+" if dialect == "nats" else f"[^{sep}]*"
    tokens = rules.parse_pattern(pattern)
    parts = []
    if dialect == "mqtt" and tokens and (tokens[0] is Wildcard.STAR or tokens[0] is Wildcard.HASH):
        parts.append(f"(?!{sep}\\$)")  # a '$' topic is hidden from leading wildcards
    for token in tokens:
        if token is Wildcard.STAR:
            parts.append(sep + word)
        elif token is Wildcard.HASH:
            parts.append(f"(?:{sep}{word})*")
        else:
            parts.append(sep + _quote(str(token)))
    return "^" + "".join(parts) + "$"


def naive_route(
    spark: SparkSession,
    messages: DataFrame,
    table: Subscriptions,
    key_col: str = "offset",
    topic_col: str = "topic",
) -> DataFrame:
    """The deliveries of ``route``, computed the naive way (one row per message and subscriber).

    ``key_col`` identifies a message, for the final de-duplication. Valid topics only: the
    naive way has no notion of an invalid topic.
    """
    regexes = pa.array([pattern_regex(pattern, table.dialect) for pattern in table.patterns], pa.string())
    owners = table.subscribers.take(pa.array(table.subscriber_ids))
    # From Arrow: a local relation in the plan (from Python rows it would be a Python-fed RDD).
    subscriptions = spark.createDataFrame(pa.table({"regex": regexes, "subscriber": owners}))
    separator = make_dialect(table.dialect).separator
    topic = F.col(topic_col)
    # AMQP's empty key has zero words: its subject is '' rather than a separator alone.
    subject = F.when(topic == "", F.lit("")).otherwise(F.concat(F.lit(separator), topic))
    prepared = messages.withColumn("_subject", subject)
    joined = prepared.crossJoin(F.broadcast(subscriptions)).where(F.expr("_subject RLIKE regex"))
    return joined.select(*messages.columns, "subscriber").dropDuplicates([key_col, "subscriber"])
