"""What the pipeline's benchmark takes from the pipeline beyond :func:`~topicmatch.spark.route`.

``topicmatch bench pipeline`` (:mod:`topicmatch.bench.spark_pipeline`, and with ``--scale``
:mod:`topicmatch.bench.spark_scale`) lives with the other experiments in :mod:`topicmatch.bench`,
which uses the spark layer through public names only (tests/test_architecture.py): these.

* :func:`generate`, :data:`MESSAGE_SCHEMA`, :data:`ROW_GROUP_ROWS`, :func:`payloads`: the data
  of ``topicmatch generate``, and its pieces for a benchmark that writes its own;
* :func:`choose` and :class:`Plan`: the plan ``route(plan=...)`` runs, with what it split or cut;
* :func:`route_cold`: ``route`` of a plan with a cache key of its own, so that the workers build
  its matcher afresh (a cold run, as in a one-off batch job; ``route`` itself keeps the matcher
  of the same subscriptions across jobs);
* :func:`write`: the output as ``topicmatch route`` writes it, with :func:`writer_options`.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
from pyspark.sql import DataFrame

from ._generate import MESSAGE_SCHEMA, ROW_GROUP_ROWS, _payloads, generate
from ._io import write, writer_options
from ._plan import Plan, choose
from ._route import DEFAULT_MAX_MESSAGE_BYTES, LAYOUTS, _route

__all__ = [
    "MESSAGE_SCHEMA",
    "ROW_GROUP_ROWS",
    "Plan",
    "choose",
    "generate",
    "payloads",
    "route_cold",
    "write",
    "writer_options",
]


def payloads(rng: np.random.Generator, count: int, size: int) -> pa.Array:
    """``count`` random payloads of ``size`` ASCII letters and digits, as ``generate`` writes them."""
    return _payloads(rng, count, size)


def route_cold(
    messages: DataFrame,
    plan: Plan,
    *,
    topic_col: str = "topic",
    layout: str = "exploded",
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> DataFrame:
    """The deliveries of ``plan`` (:func:`choose`), as :func:`~topicmatch.spark.route` gives them,
    under a fresh cache key: every worker builds the plan's matcher again, empty."""
    return _route(
        messages,
        plan.matcher,
        topic_col,
        LAYOUTS[layout],
        max_message_bytes,
        cache_token=uuid.uuid4().hex,
        layout=layout,
        literal=plan.literal,
        shards=plan.shards,
    )
