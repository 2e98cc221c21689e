"""A million subscriptions, topics looked up again: the default against itself without a cache.

    .venv/bin/python benchmarks/million_repeat.py [ROUNDS]

The workload matrix's *subs-1M repeat* cell is measured on 0.5 s per contender in turns of
0.05 s among eight processes of 600 MB each, and moves from run to run (0.77-1.00 of the trie).
Here each variant (``default``, ``no cache``: ``cache_size=0``, ``trie``) is a fresh matcher of
the matrix's million AMQP subscriptions in a process of its own, forked per round, the order
reversed every other round: it looks up 24,000 topics once (as the matrix's warm-up slice),
then the first 6,000 of them again. Printed per round and variant: thread CPU µs per lookup of
each pass, and for the default what its cache holds after them (its bytes, whether admission is
on, the misses left of its wait).
"""

from __future__ import annotations

import os
import sys
import time
import traceback

import default_parts  # benchmarks/default_parts.py, beside this script: its rows and variants

from topicmatch.bench import shapes

VARIANTS = ("default", "no cache", "trie")
ONCE, AGAIN = 24_000, 6_000


def _child(shape: shapes.Shape, variant: str, out: int) -> None:
    m = default_parts._matcher(variant, shape)
    began = time.thread_time()
    for topic in shape.topics[:ONCE]:
        m.lookup(topic)
    middle = time.thread_time()
    for topic in shape.topics[:AGAIN]:
        m.lookup(topic)
    end = time.thread_time()
    cache = m._cache
    held = ""
    if cache is not None:
        held = f"; cache: {cache.bytes} bytes, admission on {cache.admission.on}, quiet {cache.quiet}"
    once, again = (middle - began) / ONCE * 1e6, (end - middle) / AGAIN * 1e6
    line = f"{variant}: once {once:.1f} µs, again {again:.1f} µs{held}\n"
    os.write(out, line.encode())


def main(rounds: int) -> None:
    shape = default_parts._shape("subs-1M")
    for r in range(rounds):
        for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    _child(shape, variant, write)
                except BaseException:
                    traceback.print_exc()  # os._exit skips the interpreter's own report
                    code = 1
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            os.close(write)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"the {variant} process of round {r + 1} failed (its traceback above)")
            print(f"round {r + 1}, " + os.read(read, 1000).decode().strip(), flush=True)
            os.close(read)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
