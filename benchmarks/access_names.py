"""What an access check costs by the length of the client's names (docs/conformance.md, "What a
check costs").

    .venv/bin/python benchmarks/access_names.py [--rounds R] [--checks N]

100 pattern rules (every fifth a ``deny``), each with ``%c`` twice, one a whole level and one
inside a level (``site17/%c/+/dev-%c/#``); a client id of 10 bytes against one of 65,000. Each
check is one ``may_receive``, ``may_publish`` and ``may_subscribe`` of short topics, asked both
ways: of :class:`~topicmatch.AccessRules` with the names (which checks them at every call) and of
the client's :class:`~topicmatch.ClientRules` (which checked them once). Each contender runs N
checks (default 2,000) in a fresh process and reports its CPU time; rounds (default 5) alternate
the order; the 10-byte id runs twice, and the spread of that A/A pair is printed beside the
ratio: a ratio inside it is no difference.

Figures: docs/conformance.md, section "Access rules, shared subscriptions and the adapters,
against the real thing" ("What a check costs"), raw results in docs/results/access_names.txt.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from topicmatch import AccessRules

RULES = "\n".join(f"pattern {'deny' if i % 5 == 0 else 'read'} site{i}/%c/+/dev-%c/#" for i in range(100))
LENGTHS = {"10 B": 10, "10 B again": 10, "64 KB": 65_000}


def run(length: int, checks: int, per_client: bool) -> float:
    """CPU seconds of ``checks`` checks by a client whose id is ``length`` bytes."""
    rules = AccessRules(RULES + "\n")
    name = "c" * length
    client = rules.client(username="u", client_id=name)
    start = time.process_time()
    for _ in range(checks):
        if per_client:
            client.may_receive("site7/c/x/dev-c/y")
            client.may_publish("site7/other/x")
            client.may_subscribe("site3/+/x/#")
        else:
            rules.may_receive("site7/c/x/dev-c/y", username="u", client_id=name)
            rules.may_publish("site7/other/x", username="u", client_id=name)
            rules.may_subscribe("site3/+/x/#", username="u", client_id=name)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--checks", type=int, default=2_000, help="checks per contender and round")
    parser.add_argument(
        "--child", nargs=3, metavar=("LENGTH", "CHECKS", "PER_CLIENT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        print(run(int(args.child[0]), int(args.child[1]), args.child[2] == "1"))
        return 0
    for per_client in (False, True):
        times: dict[str, list[float]] = {label: [] for label in LENGTHS}
        for round_ in range(args.rounds):
            order = list(LENGTHS) if round_ % 2 == 0 else list(reversed(LENGTHS))
            for label in order:
                child = [sys.executable, __file__, "--child", str(LENGTHS[label]), str(args.checks)]
                out = subprocess.run(
                    [*child, "1" if per_client else "0"], capture_output=True, text=True, check=True
                )
                times[label].append(float(out.stdout))
        base = statistics.median(times["10 B"])
        spread = [again / first for again, first in zip(times["10 B again"], times["10 B"], strict=True)]
        ratios = [long / first for long, first in zip(times["64 KB"], times["10 B"], strict=True)]
        way = "ClientRules (names checked once)" if per_client else "AccessRules with the names"
        print(f"{way}: {base / args.checks * 1e6:.0f} us per check of three, 10-byte id")
        low, high = min(ratios), max(ratios)
        print(
            f"  64 KB / 10 B: median {statistics.median(ratios):.2f} (rounds {low:.2f}-{high:.2f});"
            f" A/A 10 B / 10 B: {min(spread):.2f}-{max(spread):.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
