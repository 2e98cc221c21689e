"""The workloads of every benchmark, the demo and the latency harness: seeded, reproducible.

The generators (standard library only):

* :func:`study_throughput`: the topic-matching study's throughput workload: 1,000 three-word
  subscriptions over the digits 0-9 (subscriber ``i`` gets ``*.d.d`` when ``i % 10 == 0``, else
  ``d.*.d`` when ``i % 25 == 0``, else ``d.d.*`` when ``i % 45 == 0``, else three literal
  digits) and messages where message ``i`` is subscription ``i % 1000`` with each ``*``
  replaced by a random digit;
* :func:`random_subscriptions`: the study's "hot" matcher, random five-word patterns;
* :class:`Zipf` and :func:`realistic`: AMQP patterns and topics with Zipf-distributed words.

The shapes of ``topicmatch bench workloads`` (what traffic looks like outside the study), each
a :class:`Shape`: the dialect, the (pattern, subscriber) pairs, and the topics to look up, all
from a fixed seed. The shapes, and the systems they stand for:

* ``study``: the topic-matching study's throughput workload (1,000 three-word subscriptions over
  the digits, topics that repeat); the one the study measured.
* ``distinct``: IoT fleets, where every device publishes on its own topic and a topic is seen
  once: MQTT filters of 5 levels over a 20-word vocabulary (15 % ``+``, 5 % with a last ``#``),
  and topics of 5 random words, all different, each looked up once.
* ``zipf``: a market-data or event bus, where a few topics are hot: AMQP patterns with
  Zipf-distributed words (:func:`realistic`, 2-5 words), and lookups that draw
  from a pool of topics by Zipf rank, so the hottest topics repeat and the tail does not.
* ``unmatched``: a gateway that sees much traffic nobody subscribed to: MQTT, 90 % of the
  lookups under first levels that no filter names, the rest like ``zipf``.
* ``churn``: a broker whose clients come and go: MQTT subscriptions, and a stream of
  subscribe/unsubscribe pairs to interleave with the lookups at a fixed rate.
* ``fanout``: one filter with many subscribers (a broadcast channel), or a few filters sharing
  them: lookups return sets of tens of thousands.
* ``million``: a large table (AMQP, Zipf words), where a lookup's *first* sight of a topic and
  later repeats differ most.
* ``burst``: a NATS server's mix: many subscriptions, a thousand hot subjects, then a burst of
  subjects never seen before, then the hot subjects again (``Shape.hot`` and ``Shape.topics``).

``topicmatch bench sweep`` draws its shapes from a space of parameters instead: :mod:`.sweep`.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

__all__ = [
    "Shape",
    "Zipf",
    "burst",
    "burst_name",
    "churn",
    "distinct",
    "fanout",
    "fanout_name",
    "million",
    "million_name",
    "random_subscriptions",
    "realistic",
    "study",
    "study_throughput",
    "unmatched",
    "zipf",
    "zipf_draws",
]


def study_throughput(messages: int, seed: int = 7, subscriptions: int = 1000) -> tuple[list[str], list[str]]:
    """Return (patterns, topics); pattern ``i`` belongs to subscriber ``i``."""
    rng = random.Random(seed)
    digits = "0123456789"
    patterns = []
    for i in range(subscriptions):
        words = [rng.choice(digits) for _ in range(3)]
        if i % 10 == 0:
            words[0] = "*"
        elif i % 25 == 0:
            words[1] = "*"
        elif i % 45 == 0:
            words[2] = "*"
        patterns.append(".".join(words))
    topics = []
    for i in range(messages):
        words = patterns[i % subscriptions].split(".")
        topics.append(".".join(rng.choice(digits) if w == "*" else w for w in words))
    return patterns, topics


def random_subscriptions(count: int, words: int = 5, seed: int = 7, vocabulary: int = 100) -> list[str]:
    """``count`` random patterns of ``words`` words (the study's "hot" matcher), about one word in
    ten a ``*``; words drawn uniformly from ``vocabulary`` short words."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(vocabulary)]
    return [
        ".".join("*" if rng.random() < 0.1 else rng.choice(vocab) for _ in range(words)) for _ in range(count)
    ]


class Zipf:
    """Words drawn from a Zipf distribution (exponent 1) over a vocabulary: a few hot words, a
    long tail, as topic words are in real systems. Sampling is O(log vocabulary) by bisection."""

    def __init__(self, vocabulary: int, rng: random.Random) -> None:
        self.words = [f"z{i}" for i in range(vocabulary)]
        total = 0.0
        self.cumulative = []
        for rank in range(1, vocabulary + 1):
            total += 1.0 / rank
            self.cumulative.append(total)
        self.rng = rng

    def word(self) -> str:
        return self.words[bisect.bisect_left(self.cumulative, self.rng.random() * self.cumulative[-1])]


def realistic(
    subscriptions: int, topics: int, seed: int = 7, vocabulary: int = 1000
) -> tuple[list[str], list[str]]:
    """AMQP patterns and topics with Zipf-distributed words, 1-5 words each.

    Patterns: each word is ``*`` with probability 0.03, and one pattern in 20 ends in ``#``, so
    about 13 % of patterns have a wildcard. Topics: words from the same distribution, so hot
    words match hot subscriptions, as in real traffic.
    """
    rng = random.Random(seed)
    zipf = Zipf(vocabulary, rng)
    patterns = []
    for _ in range(subscriptions):
        n = rng.randint(1, 5)
        words = ["*" if rng.random() < 0.03 else zipf.word() for _ in range(n)]
        if rng.random() < 0.05:
            words[-1] = "#"
        patterns.append(".".join(words))
    topic_list = [".".join(zipf.word() for _ in range(rng.randint(1, 5))) for _ in range(topics)]
    return patterns, topic_list


@dataclass
class Shape:
    """One row's data: ``pairs`` to subscribe, ``topics`` to look up (in this order).

    ``once`` means the runs take consecutive slices of ``topics`` and never read a slice twice: on
    the matrix's rows every topic is then new to the matcher when looked up; a sweep's shape
    (:mod:`.sweep`) repeats topics within the sequence, as traffic does. ``writes`` are
    (subscribe?, pattern, subscriber) operations to interleave with the lookups: on the churn row
    paced in time; with ``every`` (lookups per write), one after every ``every`` lookups.
    """

    name: str
    dialect: str
    pairs: list[tuple[str, int]]
    topics: list[str]
    once: bool = False
    writes: list[tuple[bool, str, int]] = field(default_factory=list)
    every: int = 0  # lookups per write (0: the writes, if any, are paced in time: churn)
    hot: list[str] = field(default_factory=list)  # burst only: the subjects hot before and after

    @property
    def patterns(self) -> int:
        return len({p for p, _ in self.pairs})


def zipf_draws(pool: list[str], count: int, rng: random.Random) -> list[str]:
    """``count`` topics drawn from ``pool`` with probability proportional to 1 / rank."""
    weights = [1.0 / rank for rank in range(1, len(pool) + 1)]
    return rng.choices(pool, weights=weights, k=count)


def study(messages: int) -> Shape:
    patterns, topics = study_throughput(messages)
    return Shape("study", "amqp", [(p, i) for i, p in enumerate(patterns)], topics)


def _iot_filters(count: int, rng: random.Random, vocabulary: list[str]) -> list[str]:
    out = []
    for _ in range(count):
        levels = ["+" if rng.random() < 0.15 else rng.choice(vocabulary) for _ in range(5)]
        if rng.random() < 0.05:
            levels[-1] = "#"
        out.append("/".join(levels))
    return out


def distinct(filters: int, topics: int, seed: int = 11) -> Shape:
    """``topics`` different 5-word MQTT topics (at most 20**5), each to be looked up once."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(20)]
    pairs = [(f, i) for i, f in enumerate(_iot_filters(filters, rng, vocabulary))]
    out = []
    for code in rng.sample(range(20**5), topics):
        words = []
        for _ in range(5):
            code, digit = divmod(code, 20)
            words.append(vocabulary[digit])
        out.append("/".join(words))
    return Shape(f"distinct-{filters // 1000}k", "mqtt", pairs, out, once=True)


def _zipf_patterns(count: int, seed: int) -> list[str]:
    """AMQP patterns of 2-5 Zipf words (``realistic`` keeps 1-5: one-word ones are redrawn)."""
    patterns: list[str] = []
    draw = 0
    while len(patterns) < count:
        batch, _ = realistic(count, 0, seed=seed + draw)
        patterns += [p for p in batch if "." in p]
        draw += 1
    return patterns[:count]


def zipf(subscriptions: int, lookups: int, pool: int = 50_000, seed: int = 12) -> Shape:
    rng = random.Random(seed)
    patterns = _zipf_patterns(subscriptions, seed)
    _, topic_pool = realistic(0, pool, seed=seed + 100)
    return Shape(
        "zipf", "amqp", [(p, i) for i, p in enumerate(patterns)], zipf_draws(topic_pool, lookups, rng)
    )


def _to_mqtt(pattern: str) -> str:
    return "/".join("+" if w == "*" else w for w in pattern.split("."))


def unmatched(subscriptions: int, lookups: int, pool: int = 50_000, seed: int = 13) -> Shape:
    """MQTT filters whose first level is always a word; 90 % of the topics start elsewhere."""
    rng = random.Random(seed)
    filters = []
    for p in _zipf_patterns(subscriptions, seed):
        words = p.split(".")
        if words[0] in ("*", "#"):
            words[0] = "z0"
        filters.append(_to_mqtt(".".join(words)))
    _, topic_pool = realistic(0, pool, seed=seed + 100)
    zipf_words = Zipf(1000, rng)
    mixed = []
    for topic in topic_pool:
        if rng.random() < 0.9:  # the same shape, under a first level nobody subscribed to
            topic = f"u{zipf_words.word()[1:]}." + topic
        mixed.append(topic.replace(".", "/"))
    return Shape(
        "unmatched", "mqtt", [(f, i) for i, f in enumerate(filters)], zipf_draws(mixed, lookups, rng)
    )


def churn(subscriptions: int, lookups: int, writes: int, seed: int = 14) -> Shape:
    """MQTT subscriptions of a broker's clients and ``writes`` operations that replace them.

    Each write pair unsubscribes a live (filter, client) pair and subscribes a new one, so the
    table keeps its size.
    """
    rng = random.Random(seed)
    filters = [_to_mqtt(p) for p in _zipf_patterns(subscriptions + writes, seed)]
    pairs = [(f, i) for i, f in enumerate(filters[:subscriptions])]
    live = list(pairs)
    ops: list[tuple[bool, str, int]] = []
    for k in range(writes // 2):
        victim = rng.randrange(len(live))
        pattern, subscriber = live[victim]
        ops.append((False, pattern, subscriber))
        new = (filters[subscriptions + k], subscriptions + k)
        live[victim] = new
        ops.append((True, *new))
    _, pool = realistic(0, 50_000, seed=seed + 100)
    topics = [t.replace(".", "/") for t in zipf_draws(pool, lookups, rng)]
    return Shape("churn", "mqtt", pairs, topics, writes=ops)


def fanout(subscribers: int, filters: int, lookups: int, seed: int = 15) -> Shape:
    """``subscribers`` clients spread evenly over ``filters`` MQTT filters under ``fleet/``.

    Filter 0 is ``fleet/+/status``, then ``fleet/#``, ``fleet/+/+``, ``+/+/status``,
    ``fleet/v<k>/+``...: every lookup (``fleet/v<k>/status`` for 1,000 vehicles) matches several.
    """
    rng = random.Random(seed)
    shapes = ["fleet/+/status", "fleet/#", "fleet/+/+", "+/+/status", "#"]
    names = [shapes[k] if k < len(shapes) else f"fleet/v{k}/+" for k in range(filters)]
    pairs = [(names[i % filters], i) for i in range(subscribers)]
    topics = [f"fleet/v{rng.randrange(1000)}/status" for _ in range(lookups)]
    return Shape(fanout_name(subscribers, filters), "mqtt", pairs, topics)


def fanout_name(subscribers: int, filters: int) -> str:
    """:func:`fanout`'s name: ``fanout-20k``, ``fanout-100k/10``."""
    return f"fanout-{subscribers // 1000}k" + (f"/{filters}" if filters > 1 else "")


def million(subscriptions: int, lookups: int, seed: int = 16) -> Shape:
    """AMQP Zipf patterns (``realistic``) and distinct topics of the same words."""
    patterns, pool = realistic(subscriptions, lookups * 2, seed=seed)
    topics = list(dict.fromkeys(pool))[:lookups]
    pairs = [(p, i) for i, p in enumerate(patterns)]
    return Shape(million_name(subscriptions), "amqp", pairs, topics, once=True)


def million_name(subscriptions: int) -> str:
    """:func:`million`'s name: ``subs-20k``, ``subs-1M``."""
    label = f"{subscriptions // 1000}k" if subscriptions < 1_000_000 else f"{subscriptions // 1_000_000}M"
    return f"subs-{label}"


def burst(subscriptions: int, hot: int, topics: int, seed: int = 17) -> Shape:
    """NATS subscriptions of services and devices (``svc<a>.<device>.<metric>``: 95 % literal, 5 %
    a device's every metric ``svc<a>.<device>.*``, 1 in 10,000 a service's every subject
    ``svc<a>.>``, as monitors subscribe), ``hot`` subscribed subjects, and ``topics`` subjects
    that are all different and none of them hot (all under subscribed services, so lookups walk).
    A subject's subscribers are a few: a broker's cache holds a thousand hot results in little
    memory, as the NATS server's sublist does."""
    rng = random.Random(seed)
    pairs: list[tuple[str, int]] = []
    subjects: list[str] = []
    for i in range(subscriptions):
        words = [f"svc{rng.randrange(20)}", f"d{rng.randrange(subscriptions)}", f"m{rng.randrange(8)}"]
        draw = rng.random()
        if draw < 0.0001:
            words[1:] = [">"]
        elif draw < 0.05:
            words[2] = "*"
        else:
            subjects.append(".".join(words))
        pairs.append((".".join(words), i))
    hot_subjects = rng.sample(subjects, hot)
    seen = set(hot_subjects)
    new: list[str] = []
    while len(new) < topics:
        subject = f"svc{rng.randrange(20)}.n{rng.randrange(10 * topics)}.m{rng.randrange(8)}"
        if subject not in seen:
            seen.add(subject)
            new.append(subject)
    return Shape(burst_name(subscriptions), "nats", pairs, new, hot=hot_subjects)


def burst_name(subscriptions: int) -> str:
    """:func:`burst`'s name: ``burst-1000k``."""
    return f"burst-{subscriptions // 1000}k"
