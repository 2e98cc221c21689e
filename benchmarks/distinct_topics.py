"""How many distinct topics a generated message log holds: how many first lookups a Spark
worker makes, at most, for it.

Usage: ``.venv/bin/python benchmarks/distinct_topics.py DIR [DIR ...]`` (``DIR``: what
``topicmatch generate --out DIR`` writes; its ``messages/`` folder is read, the topic column
only). Prints the messages and their distinct topics per ``DIR``: a count, not a time, so the
machine's load does not change it.

Figures: docs/pipeline.md (the distinct topics of the benchmark cases; their data is
``topicmatch generate --messages M --subscriptions S --out DIR``, seed 7, as
``topicmatch bench pipeline`` generates it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for folder in map(Path, sys.argv[1:]):
        topics = ds.dataset(folder / "messages", format="parquet").to_table(columns=["topic"])["topic"]
        print(f"{folder}: {len(topics):,} messages, {len(pc.unique(topics)):,} distinct topics")


if __name__ == "__main__":
    main()
