"""Experiment: the sweep, the default against the plain trie on workload shapes drawn at random.

The workload matrix (:mod:`.workloads`) measures fixed rows, and a shape between them goes
unmeasured. The sweep draws its shapes from a space of parameters instead, each a point of it
(:class:`Params`) that :func:`drawn` makes from the run's seed and the shape's number alone: the
same seed draws the same shapes. The parameters and how each is drawn:

* **dialect**: AMQP, MQTT or NATS, a third each;
* **subscriptions**: log-uniform from 1,000 to 1,000,000 (``--quick``: at most 5,000);
* **the mix of patterns**: the share with a one-level wildcard (``*``, MQTT ``+``) in place of a
  word after the first (none in a quarter of the shapes, else up to 60 %) and the share ending
  in a multi-level one (``#``, NATS ``>``; none in a quarter, else up to 30 %); a pattern's first
  word is always literal;
* **fan-out**: subscribers per pattern, log-uniform from 1 to 1,000;
* **depth and vocabulary**: topics of 2 to 8 words, each drawn by Zipf rank from a vocabulary
  of 10 to 10,000 words (log-uniform), as :func:`.shapes.realistic` draws them;
* **repeats**: the share of lookups that look up again a topic seen earlier in the sequence,
  uniform from 0 to 95 %, the topic repeated drawn by Zipf rank of first sight (the first topic
  seen the hottest, as a few topics are in real traffic); the others are new topics, each made
  from a pattern drawn at random (a small table has few topics to make: its topics repeat more
  than drawn, and the report gives the share that did);
* **unmatched**: the share of lookups whose topic matches nobody: words of the vocabulary, but a
  first word that is no pattern's (none in a quarter of the shapes, else up to 90 %); repeats
  are drawn among the topics of a lookup's kind, matched or not;
* **writes per lookup**: none in a third of the shapes, else log-uniform from 1 in 10,000 to 1
  in 10 lookups, alternately an unsubscribe of a live pair and a subscribe of a new one.

**Contenders**: the default, the plain trie (``Matcher("trie")``: the default's walk without its
result cache and memo of unions) and ``default, again``, the default built again: an A/A
control, the same code, whose ratio to the default is what the run's noise makes of a ratio on
that shape.

**Method**: each shape runs as a row of the workload matrix whose topics are read once
(:func:`.workloads.lookup_row`): every contender built and measured in a process of its own,
forked from the one holding the shape's data; rates in that process's CPU time, writes
included; rounds alternating between the contenders (each first in turn, the others shuffled);
every answer checked against the trie on a sample of topics (where the shape writes, after
bringing every contender to the same write). Three **phases**: the rate of a freshly built
matcher's first 10,000 and first 60,000 lookups, and the **steady state**, a build warmed up on
60,000 lookups and then timed on 60,000 more (each round another stretch of the sequence: its
repeats are of topics the warm-up made hot, its new topics new); ``--quick``: 1,000, 6,000 and
6,000, with budgets of 0.2 s. A ratio is the median over the rounds of the default's rate
divided by the other's in the same round. How to read the report: docs/performance.md, section
"The sweep".
"""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Final

from ..support.commandline import UsageError
from . import charts, shapes, workloads
from .contenders import AGAIN
from .report import Progress, Report
from .timing import median

__all__ = ["CONTENDERS", "SHAPES", "Params", "drawn", "made", "run"]

#: The contenders of every shape: the default, the plain trie, the default again (A/A).
CONTENDERS: Final = ("default", "trie", AGAIN)
#: Shapes a run draws, unless told (``--shapes``); a quick run draws fewer, smaller ones.
SHAPES: Final = 30
QUICK_SHAPES: Final = 6
QUICK_SUBSCRIPTIONS: Final = 5_000
#: The default's ratio to the trie under which a shape is listed (if the A/A spread allows).
UNDER: Final = 0.9

#: The matrix's sizes where the sweep differs: its early windows, the steady state's lookups
#: (``once``) and their budgets; builds as the matrix's (300 s at most, 5 s in a quick run).
FULL = replace(workloads.FULL, early=(10_000, 60_000), once=60_000, once_budget=5.0, early_budget=5.0)
QUICK = replace(workloads.QUICK, early=(1_000, 6_000), once=6_000, once_budget=0.2, early_budget=0.2)

#: Each dialect's word separator, one-level and multi-level wildcard.
_SYNTAX: Final = {"amqp": (".", "*", "#"), "mqtt": ("/", "+", "#"), "nats": (".", "*", ">")}


@dataclass(frozen=True)
class Params:
    """One shape of the sweep before its data are made: a point of the space :func:`drawn` draws
    from (the module's docstring gives each parameter's range)."""

    dialect: str
    subscriptions: int
    one: float  # share of patterns with a one-level wildcard
    many: float  # share of patterns ending in a multi-level wildcard
    fanout: int  # subscribers per pattern
    depth: int  # words per topic (a pattern ending in a multi-level wildcard: fewer)
    vocabulary: int  # words a topic's word is drawn from
    repeats: float  # share of lookups that look up an earlier topic again
    unmatched: float  # share of lookups whose topic matches nobody
    writes: float  # writes per lookup

    @property
    def patterns(self) -> int:
        return max(1, self.subscriptions // self.fanout)

    @property
    def every(self) -> int:
        """Lookups per write (0: no writes)."""
        return max(1, round(1 / self.writes)) if self.writes else 0

    def line(self) -> str:
        """The shape in one line.

        >>> shape = Params("mqtt", 20_000, 0.15, 0.05, 10, 5, 100, 0.5, 0.2, 0.001)
        >>> print(shape.line())  # doctest: +NORMALIZE_WHITESPACE
        mqtt, 20,000 subscriptions (2,000 patterns x 10), 15 % with +, 5 % with #, depth 5,
        100 words, 50 % repeats, 20 % unmatched, 1 write per 1,000 lookups
        """
        _, one, many = _SYNTAX[self.dialect]
        writes = f"1 write per {self.every:,} lookups" if self.every else "no writes"
        return (
            f"{self.dialect}, {self.subscriptions:,} subscriptions ({self.patterns:,} patterns x "
            f"{self.fanout:,}), {self.one:.0%} with {one}, {self.many:.0%} with {many}, depth "
            f"{self.depth}, {self.vocabulary:,} words, {self.repeats:.0%} repeats, "
            f"{self.unmatched:.0%} unmatched, {writes}"
        ).replace("%", " %")

    def label(self) -> str:
        """A few words for a chart's axis: dialect, subscriptions, writes."""
        writes = f"1 write/{self.every:,}" if self.every else "no writes"
        return f"{self.dialect} {_short(self.subscriptions)} subs, {writes}"


def _percent(share: float) -> str:
    return f"{share:.0%}".replace("%", " %")


def _short(count: int) -> str:
    return f"{count / 1e6:.1f}M" if count >= 1e6 else f"{count / 1e3:.0f}k" if count >= 1e3 else f"{count}"


def drawn(seed: int, index: int) -> Params:
    """Shape ``index`` of the sweep of ``seed``: a pure function of the two (a generator seeded
    with both), so the same seed draws the same shapes whatever else the run does.

    >>> drawn(7, 3) == drawn(7, 3) != drawn(8, 3)
    True
    """
    rng = random.Random(f"sweep {seed} {index}")

    def log_uniform(low: float, high: float) -> float:
        return float(low * (high / low) ** rng.random())

    def often_none(none: float, high: float) -> float:
        return 0.0 if rng.random() < none else rng.uniform(0.0, high)

    dialect = rng.choice(tuple(_SYNTAX))
    subscriptions = round(log_uniform(1_000, 1_000_000))
    one, many = often_none(0.25, 0.6), often_none(0.25, 0.3)
    fanout = round(log_uniform(1, 1_000))
    depth = rng.randint(2, 8)
    vocabulary = round(log_uniform(10, 10_000))
    repeats = rng.uniform(0.0, 0.95)
    unmatched = often_none(0.25, 0.9)
    writes = 0.0 if rng.random() < 1 / 3 else log_uniform(1e-4, 0.1)
    return Params(dialect, subscriptions, one, many, fanout, depth, vocabulary, repeats, unmatched, writes)


def made(params: Params, name: str, seed: int, lookups: int, writes: int) -> shapes.Shape:
    """The data of ``params``: its (pattern, subscriber) pairs, ``lookups`` topics and ``writes``
    writes at least (a shape without writes gets none), from a generator seeded with ``seed``
    and ``name``. Its topics are read once (``once``): each phase reads a stretch of its own,
    and the repeats are within the sequence. O(subscriptions x depth + lookups x depth)."""
    rng = random.Random(f"sweep data {seed} {name}")
    zipf = shapes.Zipf(params.vocabulary, rng)
    separator, one, many = _SYNTAX[params.dialect]

    def pattern() -> list[str]:
        words = [zipf.word() for _ in range(params.depth)]
        if rng.random() < params.one:
            words[rng.randrange(1, params.depth)] = one
        if rng.random() < params.many:
            del words[rng.randrange(1, params.depth) :]
            words.append(many)
        return words

    table = [pattern() for _ in range(params.patterns)]
    pairs = [(separator.join(table[k % len(table)]), k) for k in range(params.subscriptions)]

    def new_topic(unmatched: bool) -> str:
        if unmatched:  # no pattern's first word is a "u" word
            return separator.join(["u" + zipf.word()[1:], *(zipf.word() for _ in range(params.depth - 1))])
        words: list[str] = []
        for word in rng.choice(table):
            if word == one:
                words.append(zipf.word())
            elif word == many:
                words += [zipf.word() for _ in range(rng.randint(1, params.depth - len(words)))]
            else:
                words.append(word)
        return separator.join(words)

    # Each lookup is first matched or not, then a repeat or new within its kind (so that each
    # share is the one drawn); repeats draw among the topics of its kind seen so far by Zipf rank
    # of first sight: cumulative[n - 1] is the total weight of the first n.
    cumulative = list(itertools.accumulate(1 / rank for rank in range(1, lookups + 1)))
    seen: dict[bool, list[str]] = {False: [], True: []}
    known: set[str] = set()
    topics: list[str] = []
    for _ in range(lookups):
        unmatched = rng.random() < params.unmatched
        kind = seen[unmatched]
        if kind and rng.random() < params.repeats:
            n = len(kind)
            topics.append(kind[bisect.bisect_left(cumulative, rng.random() * cumulative[n - 1], 0, n)])
            continue
        topic = new_topic(unmatched)
        for _ in range(3):  # a few more tries at a topic not seen yet
            if topic not in known:
                break
            topic = new_topic(unmatched)
        if topic not in known:
            known.add(topic)
            kind.append(topic)
        topics.append(topic)
    ops: list[tuple[bool, str, int]] = []
    live = list(pairs)
    for k in range((writes // 2 + 1) if params.every else 0):
        victim = rng.randrange(len(live))
        ops.append((False, *live[victim]))
        live[victim] = (separator.join(pattern()), params.subscriptions + k)
        ops.append((True, *live[victim]))
    return shapes.Shape(name, params.dialect, pairs, topics, once=True, writes=ops, every=params.every)


def _repeated(shape: shapes.Shape) -> float:
    """The share of the shape's lookups that look up a topic looked up before."""
    return 1 - len(set(shape.topics)) / max(1, len(shape.topics))


@dataclass
class _Swept:
    """One shape's results: its parameters, the share of its lookups that repeated, its row."""

    params: Params
    repeated: float
    row: workloads.Row

    def ratios(self, phase: str, name: str) -> list[float]:
        """The default's rate divided by ``name``'s, round by round, low to high."""
        return sorted(self.row.round_ratios(phase, name))

    def ratio(self, phase: str, name: str) -> float | None:
        ratios = self.ratios(phase, name)
        return median(ratios) if ratios else None

    def decided(self, phase: str) -> bool:
        """Under :data:`UNDER` against the trie by more than the A/A control strays from 1."""
        ratio, aa = self.ratio(phase, "trie"), self.ratio(phase, AGAIN)
        return ratio is not None and aa is not None and ratio < UNDER and abs(aa - 1) < 1 - ratio


def _cell(ratios: list[float]) -> str:
    """A median ratio and the range of its rounds: ``0.93 (0.88-1.01)``."""
    if not ratios:
        return "-"
    mid = f"{median(ratios):.2f}"
    return mid if len(ratios) == 1 else f"{mid} ({ratios[0]:.2f}-{ratios[-1]:.2f})"


def _shape_table(swept: list[_Swept], phases: list[str]) -> tuple[list[str], list[list[str]]]:
    headers = ["shape", "what it is", "repeated"]
    for phase in phases:
        headers += [f"÷ trie, {phase}", f"A/A, {phase}"]
    lines = []
    for s in swept:
        cells = [s.row.name, s.params.line(), _percent(s.repeated)]
        for phase in phases:
            cells += [_cell(s.ratios(phase, "trie")), _cell(s.ratios(phase, AGAIN))]
        notes = "; ".join(f"{name}: {note}" for name, note in s.row.notes.items() if name in CONTENDERS)
        lines.append([*cells, notes])
    return [*headers, "note"], lines


def _summary(swept: list[_Swept], phases: list[str]) -> tuple[list[str], list[list[str]]]:
    headers = [
        "phase",
        "default ÷ trie, median of the shapes",
        "A/A, median of the shapes",
        f"shapes under {UNDER}",
        "of which decided (A/A nearer 1 than the ratio)",
    ]
    lines = []
    for phase in phases:
        ratios = [r for s in swept if (r := s.ratio(phase, "trie")) is not None]
        aa = [r for s in swept if (r := s.ratio(phase, AGAIN)) is not None]
        under = [s for s in swept if (s.ratio(phase, "trie") or UNDER) < UNDER]
        decided = [s.row.name for s in under if s.decided(phase)]
        lines.append(
            [
                phase,
                f"{median(ratios):.2f}" if ratios else "-",
                f"{median(aa):.2f}" if aa else "-",
                str(len(under)),
                f"{len(decided)}" + (f": {', '.join(decided)}" if decided else ""),
            ]
        )
    return headers, lines


def _subset_table(swept: list[_Swept], phases: list[str]) -> tuple[list[str], list[list[str]]]:
    """The shapes given, each phase's ratio to the trie beside its A/A."""
    headers = ["shape", "repeated", *(f"÷ trie / A/A, {phase}" for phase in phases)]
    lines = [
        [
            s.row.name,
            _percent(s.repeated),
            *(f"{_cell(s.ratios(p, 'trie'))} / {_cell(s.ratios(p, AGAIN))}" for p in phases),
        ]
        for s in swept
    ]
    return headers, lines


def _chart(swept: list[_Swept], phases: list[str]) -> Any:
    labels = [f"{s.row.name}: {s.params.label()}, {_percent(s.repeated)} repeated" for s in swept]
    panels = {
        ("steady state (warmed up)" if phase == workloads.STEADY else f"a fresh matcher's {phase} lookups"): [
            (median(r), r[0], r[-1], abs(aa - 1) if (aa := s.ratio(phase, AGAIN)) is not None else None)
            if (r := s.ratios(phase, "trie"))
            else None
            for s in swept
        ]
        for phase in phases
    }
    return charts.ratio_dots(
        labels,
        panels,
        "The default's lookup rate ÷ the plain trie's, per shape drawn (rows) and phase (panels):\n"
        "over 1 the default is faster",
        "default ÷ trie (log scale)",
        marks=(UNDER,),
    )


def run(
    out: Path,
    repeat: int,
    quick: bool,
    progress: Progress,
    seed: int | None = None,
    shape_count: int | None = None,
) -> Path:
    """Draw ``shape_count`` shapes (default :data:`SHAPES`, quick :data:`QUICK_SHAPES`) from ``seed``
    (default: a random one, printed first and in the report), measure each contender on each and
    write the report."""
    count = (QUICK_SHAPES if quick else SHAPES) if shape_count is None else shape_count
    if count < 1:
        raise UsageError(f"--shapes must be at least 1, not {count}")
    if seed is None:
        seed = random.SystemRandom().randrange(1_000_000)
    progress(f"seed {seed}, {count} shapes (the same shapes again: --seed {seed})")
    sizes = QUICK if quick else FULL
    phases = workloads.phases_of(sizes)
    lookups = (repeat + 2) * sizes.once  # the steady rounds' stretches and a warm-up's
    most = max(sizes.early[-1], 2 * sizes.once)  # lookups of one contender's process at most
    swept = []
    for index in range(count):
        params = drawn(seed, index)
        if quick:
            params = replace(params, subscriptions=min(params.subscriptions, QUICK_SUBSCRIPTIONS))
        name = f"s{index:02d}"
        progress(f"{name}: {params.line()}")
        shape = made(params, name, seed, lookups, most // max(1, params.every) + 2)
        (row,) = workloads.lookup_row(shape, params.line(), sizes, repeat, progress, False, CONTENDERS)
        swept.append(_Swept(params, _repeated(shape), row))
    report = Report(
        "sweep",
        out,
        "The sweep: the default against the plain trie on shapes drawn at random",
        {
            "seed": seed,
            "shapes": count,
            "repeat": repeat,
            "early": sizes.early,
            "steady_lookups": sizes.once,
            "early_budget_s": sizes.early_budget,
            "steady_budget_s": sizes.once_budget,
            **({"quick_subscriptions": QUICK_SUBSCRIPTIONS} if quick else {}),
        },
        quick=quick,
    )
    report.text(
        f"Seed **{seed}**: `topicmatch bench sweep --seed {seed} --shapes {count}"
        + (" --quick" if quick else "")
        + "` draws the same shapes again."
    )
    report.text(__doc__ or "")
    report.text(
        "## Summary\n\nPer phase, the median over the shapes of the default's ratio to the plain trie "
        "and to itself built again (A/A), and the shapes whose ratio to the trie is under "
        f"{UNDER}: decided where the A/A control strays from 1 by less than the ratio does."
    )
    report.table(*_summary(swept, phases))
    many = [s for s in swept if s.repeated >= 0.5]
    report.text(
        "## Shapes where half or more of the lookups repeat\n\n"
        + ("Where the default's result cache can earn its keep." if many else "None in this run.")
    )
    if many:
        report.table(*_subset_table(many, phases))
    report.chart(
        "sweep",
        _chart(swept, phases),
        "The default's rate ÷ the plain trie's per shape and phase: dot the median of the rounds, "
        "line their range, grey band the A/A control's distance from 1",
    )
    report.text(
        "## Every shape\n\n*÷ trie*: the default's rate divided by the plain trie's, median over the "
        "rounds (low-high); *A/A*: the same against the default built again; *repeated*: the share "
        "of the shape's lookups that looked up a topic again (above the repeats drawn where a small "
        "table has few topics to make)."
    )
    report.table(*_shape_table(swept, phases))
    for s in swept:
        report.result(
            s.row.name,
            {
                "line": s.params.line(),
                "params": asdict(s.params),
                "repeated": s.repeated,
                "samples": s.row.samples,
                "paired": s.row.paired,
                "notes": s.row.notes,
                "builds_s": {n: e.get("builds_s", []) for n, e in s.row.extra.items()},
            },
        )
    return report.write()
