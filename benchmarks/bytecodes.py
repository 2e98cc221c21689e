"""Bytecodes the pure build executes per lookup, by function: the default, itself without a cache,
the trie.

    TOPICMATCH_PURE=1 .venv/bin/python benchmarks/bytecodes.py ROW [START] [COUNT]

A fresh matcher of ``default_parts``' row ``ROW`` per variant; its first ``START`` lookups run
untraced, then ``COUNT`` lookups (default 10,000) under ``sys.settrace`` with opcode events, each
counted against the function it runs in. Printed per variant: bytecodes per lookup in all and
for the functions that run the most. Seconds, not the hour ``benchmarks/instructions.py`` takes
under valgrind, and the same counts on any machine; but a bytecode is not a cost: a hash, a lock
or a ``sys.getsizeof`` is one bytecode or a few, and the C of a union is none. It says which code
runs and how often (the quiet path's bytecodes against the walk's, say), not how long it takes.
"""

from __future__ import annotations

import collections
import sys
from types import FrameType
from typing import Any

import default_parts  # benchmarks/default_parts.py, beside this script

from topicmatch import BUILD

VARIANTS = ("default", "no cache", "trie")


def _count(row: str, variant: str, start: int, count: int) -> collections.Counter[str]:
    shape = default_parts._shape(row)
    m = default_parts._matcher(variant, shape)
    topics = shape.topics
    if start + count > len(topics):
        raise SystemExit(f"{row} has {len(topics):,} lookups: START + COUNT is {start + count:,}")
    for topic in topics[:start]:
        m.lookup(topic)
    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: FrameType, event: str, _arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[frame.f_code.co_qualname] += 1
        return tracer

    lookup = m.lookup
    sys.settrace(tracer)
    try:
        for topic in topics[start : start + count]:
            lookup(topic)
    finally:
        sys.settrace(None)
    return counts


def main() -> None:
    if BUILD != "pure":
        raise SystemExit("bytecodes count the pure build: run with TOPICMATCH_PURE=1")
    if not 2 <= len(sys.argv) <= 4:
        raise SystemExit(__doc__.split("\n\n")[1])
    row = sys.argv[1]
    start = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    print(f"{row}: bytecodes per lookup, lookups {start:,} to {start + count:,} of a fresh matcher")
    for variant in VARIANTS:
        counts = _count(row, variant, start, count)
        top = ", ".join(f"{name} {n / count:.1f}" for name, n in counts.most_common(8))
        print(f"  {variant}: {sum(counts.values()) / count:.1f} ({top})", flush=True)


if __name__ == "__main__":
    main()
