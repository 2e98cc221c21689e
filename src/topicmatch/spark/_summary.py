"""What a routing run reports: printed for people, and written as JSON beside the output.

Messages in, deliveries out, messages matched by nobody, invalid topics (quarantined), top
subscribers by volume, elapsed time and rates, the subscriptions version, and for a stream one
record per micro-batch naming the subscriptions version that routed it.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..support.commandline import counted, rate

__all__ = ["REASONS", "Summary"]

#: Why messages are quarantined: the key of each kind of reason, and its noun (singular, plural).
REASONS = {
    "invalid_topic": ("invalid topic", "invalid topics"),
    "null_topic": ("null topic", "null topics"),
    "too_big": ("too big", "too big"),
    "not_json": ("not valid JSON", "not valid JSON"),
}


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


@dataclass
class Summary:
    """The figures of one run of ``topicmatch route`` (batch or stream)."""

    mode: str
    dialect: str
    subscriptions: dict[str, Any]
    messages: int = 0
    deliveries: int = 0
    unmatched: int = 0
    invalid: int = 0
    #: the quarantined messages by reason (:data:`REASONS`), counted in the written quarantine
    #: (a stream counts those of its run when it ends)
    quarantine_reasons: dict[str, int] = field(default_factory=dict)
    top_subscribers: list[tuple[Any, int]] = field(default_factory=list)
    #: how many subscribers not in ``top_subscribers`` have as many deliveries as its last one
    top_tied: int = 0
    elapsed_seconds: float = 0.0
    output: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    batches: list[dict[str, Any]] = field(default_factory=list)
    versions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def messages_per_second(self) -> float:
        return _rate(self.messages, self.elapsed_seconds)

    @property
    def deliveries_per_second(self) -> float:
        return _rate(self.deliveries, self.elapsed_seconds)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["top_subscribers"] = [{"subscriber": s, "deliveries": n} for s, n in self.top_subscribers]
        data["elapsed_seconds"] = round(self.elapsed_seconds, 3)
        data["messages_per_second"] = round(self.messages_per_second, 1)
        data["deliveries_per_second"] = round(self.deliveries_per_second, 1)
        return data

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=False, default=str) + "\n"

    def text(self) -> str:
        """The summary for a terminal: a headline, then one fact per line."""
        seconds = self.elapsed_seconds
        deliveries = counted(self.deliveries, "delivery", "deliveries")
        headline = f"routed {counted(self.messages, 'message')} -> {deliveries}"
        if self.messages:
            headline += f" ({self.deliveries / self.messages:.2f} per message)"
        headline += f" in {seconds:.1f} s"
        if self.messages:  # no "0 msg/s" for a run that had nothing to route
            headline += (
                f": {rate(self.messages, seconds, 'msg/s')}, {rate(self.deliveries, seconds, 'deliveries/s')}"
            )
        lines = [headline]
        share = f" ({self.unmatched / self.messages:.1%})" if self.messages else ""
        lines.append(f"  matched by nobody  {counted(self.unmatched, 'message')}{share}")
        quarantined = self.output.get("quarantine")
        where = f" -> {quarantined}" if self.invalid and quarantined else ""
        reasons = ", ".join(
            counted(count, *REASONS[reason]) for reason, count in self.quarantine_reasons.items() if count
        )
        why = f": {reasons}" if reasons else ""
        lines.append(f"  quarantined        {counted(self.invalid, 'message')}{why}{where}")
        subs = self.subscriptions
        skipped = (
            f", {counted(len(subs['skipped']), 'invalid pattern')} skipped" if subs.get("skipped") else ""
        )
        lines.append(
            f"  subscriptions      {subs['subscriptions']:,} ({counted(subs['subscribers'], 'subscriber')}), "
            f"{self.dialect}, version {subs['version']} from {subs['source']}{skipped}"
        )
        literal = counted(subs.get("joined_literal", 0), "literal subscription")
        if subs.get("plan") == "split":
            lines.append(
                f"  plan               split: {literal} joined "
                f"on the topic, {subs['matched_in_workers']:,} matched in the workers"
            )
        elif subs.get("plan") == "shard":
            lines.append(
                f"  plan               shard: {literal} joined "
                f"on the topic, {subs['matched_in_workers']:,} matched in the workers in "
                f"{counted(subs['shards'], 'shard')} by first word (largest shard {subs['largest_shard']:,}, "
                f"including {subs['in_every_shard']:,} in every shard: those starting with a wildcard)"
            )
        elif subs.get("plan"):
            lines.append(f"  plan               {subs['plan']}: every subscription matched in the workers")
        if self.filters:
            lines.append("  filter             " + ", ".join(f"{k} {v}" for k, v in self.filters.items()))
        if self.top_subscribers:
            lines.append(f"  top subscribers    {self._top_text()}")
        for batch in self.batches:
            lines.append(
                f"  batch {batch['batch']:<4}         version {batch['version']}: "
                f"{counted(batch['messages'], 'message')} "
                f"-> {counted(batch['deliveries'], 'delivery', 'deliveries')}, {batch['unmatched']:,} "
                f"unmatched, {batch['invalid']:,} invalid"
            )
        layout = self.output.get("layout", "exploded")
        # Nested: a row per message with a subscriber, which the figures above already give.
        rows = self.messages - self.unmatched - self.invalid
        shape = (
            f", nested: {counted(rows, 'row')}, one per message with subscribers"
            if layout == "nested"
            else ""
        )
        lines.append(f"output: {self.output.get('deliveries')} ({self.output.get('format')}{shape})")
        if self.output.get("summary"):
            lines.append(f"summary: {self.output['summary']}")
        return "\n".join(lines)

    def _top_text(self) -> str:
        """The top subscribers, those with equal counts together ("a, b 12 each"), and how many
        more tie with the last (a list cut in the middle of a tie is in name order, and says so)."""
        parts = []
        for count, group in itertools.groupby(self.top_subscribers, key=lambda entry: entry[1]):
            names = [str(subscriber) for subscriber, _ in group]
            parts.append(f"{', '.join(names)} {count:,}{' each' if len(names) > 1 else ''}")
        text = "; ".join(parts)
        if self.top_tied:
            last = self.top_subscribers[-1][1]
            text += f"; {counted(self.top_tied, 'more subscriber')} with {last:,} (ties listed by name)"
        return text
