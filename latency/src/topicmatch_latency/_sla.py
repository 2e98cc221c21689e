"""Latency targets (an SLA) and the rates of a load sweep: parsed here, judged on results.

Imported by the command line at every start, so it needs only the standard library (the results
it judges bring NumPy and hdrh with them).

What meets an SLA: a run's corrected distribution (from each request's intended start), at every
target. A rate counts only if it was sustained
(an unsustained rate's latencies measure a queue that grows with the run's length, see
:meth:`._result.LatencyResult.notes`) and only if it had the samples to show each percentile of
the SLA (p99.99 needs 10,000). A full-throttle run (``max``) is drawn as the saturation point:
its latencies are service times, not response times under a schedule, so it never meets an SLA.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._result import LatencyResult

__all__ = ["Sla", "Verdict", "highest_met", "parse_rates"]

_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_TARGET = re.compile(r"\s*p?(\d+(?:\.\d+)?)\s*(?::|<=)\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)\s*")


@dataclass(frozen=True)
class Verdict:
    """Whether one run met the SLA: True, False, or None when it had too few samples to tell."""

    met: bool | None
    reasons: tuple[str, ...]

    def cell(self) -> str:
        if self.met is None:
            return "unknown: " + "; ".join(self.reasons)
        return "meets" if self.met else "misses: " + "; ".join(self.reasons)


@dataclass(frozen=True)
class Sla:
    """Latency targets: ``(percentile, limit in ns)``, for example p99 <= 10 ms, p99.99 <= 100 ms.

    >>> Sla.parse("99:10ms,99.99:100ms").text()
    'p99 <= 10 ms, p99.99 <= 100 ms'
    """

    targets: tuple[tuple[float, int], ...]

    @classmethod
    def parse(cls, text: str) -> Sla:
        """From ``99:10ms,99.99:100ms`` (also ``p99<=10ms``; units ns, us, ms, s); ValueError
        with the expected form otherwise."""
        targets = []
        for part in text.split(","):
            match = _TARGET.fullmatch(part)
            if not match:
                raise ValueError(f"not an SLA target: {part.strip()!r} (expected e.g. 99:10ms,99.99:100ms)")
            percentile = float(match[1])
            if not 0 < percentile < 100:
                raise ValueError(f"an SLA percentile must be between 0 and 100, not {percentile:g}")
            targets.append((percentile, round(float(match[2]) * _UNIT_NS[match[3]])))
        return cls(tuple(sorted(targets)))

    def text(self) -> str:
        return ", ".join(f"p{p:g} <= {_human(limit)}" for p, limit in self.targets)

    def judge(self, result: LatencyResult) -> Verdict:
        """The verdict on one run's corrected distribution."""
        from ._histograms import value_at  # noqa: PLC0415 - heavy: only with a result
        from ._result import format_ms, samples_needed  # noqa: PLC0415

        if result.full_throttle:
            return Verdict(False, ("full throttle: no schedule, service times only",))
        reasons = []
        if not result.sustained:
            reasons.append(f"rate not sustained ({result.achieved_rate:,.0f}/s of {result.rate:,.0f}/s)")
        histogram = result.histogram("corrected")
        count = histogram.get_total_count()
        unknown = []
        for percentile, limit in self.targets:
            if count < samples_needed(percentile):
                unknown.append(f"p{percentile:g} needs {samples_needed(percentile):,} samples, has {count:,}")
                continue
            value = value_at(histogram, percentile)
            if value > limit:
                reasons.append(f"p{percentile:g} = {format_ms(value)} ms > {_human(limit)}")
        if reasons:
            return Verdict(False, tuple(reasons))
        if unknown:
            return Verdict(None, tuple(unknown))
        return Verdict(True, ())


def _human(ns: int) -> str:
    for unit in ("s", "ms", "us"):
        if ns >= _UNIT_NS[unit] and ns % _UNIT_NS[unit] == 0:
            return f"{ns // _UNIT_NS[unit]} {unit}"
    return f"{ns} ns"


def parse_rates(text: str) -> list[int | None]:
    """``500,1000,2000,max`` -> [500, 1000, 2000, None] (None: full throttle), ascending, each once;
    ValueError with the expected form otherwise."""
    rates: set[int] = set()
    full = False
    for part in (p.strip() for p in text.split(",")):
        if part == "max":
            full = True
        elif part.isdigit() and int(part) > 0:
            rates.add(int(part))
        else:
            raise ValueError(
                f"not a rate: {part!r} (expected positive integers or max, e.g. 500,1000,2000,max)"
            )
    return [*sorted(rates), *([None] if full else [])]


def highest_met(results: Sequence[LatencyResult], sla: Sla) -> tuple[LatencyResult | None, list[str]]:
    """The run of the highest rate that met ``sla``, and the lower rates that did not (a noisy
    machine can miss at a low rate and meet at a higher one: the reader must see it)."""
    scheduled = sorted((r for r in results if not r.full_throttle), key=lambda r: r.rate)
    met = [bool(sla.judge(r).met) for r in scheduled]  # each run judged once
    best = next((r for r, ok in zip(reversed(scheduled), reversed(met), strict=True) if ok), None)
    below = [
        f"{r.rate:,.0f}/s"
        for r, ok in zip(scheduled, met, strict=True)
        if best is not None and r.rate < best.rate and not ok
    ]
    return best, below
