"""Pattern algebra against brute force: every pattern of up to three tokens over a small
alphabet, every pair, checked on every topic of up to six words (the shortest topic two such
patterns share, or that tells them apart, is shorter)."""

from __future__ import annotations

import itertools
from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import ComplexityError, InvalidPatternError, Matcher, _algebra, make_dialect

from .reference import MATCHES
from .strategies import PATTERNS

WORDS = ("a", "b", "c")  # "c" stands for every word no pattern names
LITERALS = ("a", "b")
SYNTAX = {  # the separator, and the one-word and many-words wildcards of each dialect
    "amqp": (".", "*", "#"),
    "mqtt": ("/", "+", "#"),
    "nats": (".", "*", ">"),
}


def _patterns(dialect: str) -> list[str]:
    sep, one, many = SYNTAX[dialect]
    dialect_object = make_dialect(dialect)
    out = []
    for length in range(4):
        for tokens in itertools.product((*LITERALS, one, many, "$x"), repeat=length):
            if "$x" in tokens[1:]:
                continue  # '$' matters as the first word only
            text = sep.join(tokens)
            for candidate in (text, f"$share/g/{text}") if dialect == "mqtt" else (text,):
                try:
                    dialect_object.parse_pattern(candidate)
                except InvalidPatternError:
                    continue
                out.append(candidate)
    return out


def _topics(dialect: str) -> list[str]:
    sep = SYNTAX[dialect][0]
    out = [""] if dialect == "amqp" else []
    for length in range(1, 7):
        for words in itertools.product(WORDS, repeat=length):
            out.append(sep.join(words))
            out.append(sep.join(("$x", *words[1:])))
    return sorted(set(out))


@cache
def _matched(dialect: str) -> dict[str, frozenset[str]]:
    matches, topics = MATCHES[dialect], _topics(dialect)
    return {p: frozenset(t for t in topics if matches(p, t)) for p in _patterns(dialect)}


@pytest.mark.parametrize("dialect", sorted(SYNTAX))
def test_overlaps_and_covers_agree_with_brute_force(dialect: str) -> None:
    d = make_dialect(dialect)
    matched = _matched(dialect)
    assert len(matched) > 40
    for p, q in itertools.product(matched, repeat=2):
        assert d.overlaps(p, q) == bool(matched[p] & matched[q]), (p, q)
        assert d.covers(p, q) == (matched[q] <= matched[p]), (p, q)


def test_both_answers_respect_the_word_limit() -> None:
    assert make_dialect("amqp", max_words=4).overlaps("a.b.#", "#.c.d")  # a.b.c.d
    assert not make_dialect("amqp", max_words=3).overlaps("a.b.#", "#.c.d")
    assert make_dialect("nats", max_words=2).covers("*.*", "*.>")  # no topic of three words exists
    assert not make_dialect("nats", max_words=3).covers("*.*", "*.>")


def test_the_rules_each_dialect_adds() -> None:
    amqp, mqtt, nats = (make_dialect(name) for name in ("amqp", "mqtt", "nats"))
    assert amqp.overlaps("#", "")  # AMQP's empty routing key
    assert not nats.overlaps("a.>", "a")  # '>' is one word or more
    assert mqtt.overlaps("a/#", "a")  # MQTT's '#' matches the parent level
    assert not mqtt.overlaps("$share/g/$SYS/#", "$SYS/#")  # shared: no '$' topic ever
    assert mqtt.covers("+/#", "#")  # no MQTT topic has zero levels
    assert not amqp.covers("*.#", "#")
    with pytest.raises(InvalidPatternError):
        mqtt.covers("a/#/b", "a")


def test_a_matcher_lists_the_subscriptions_that_overlap_a_pattern() -> None:
    m = Matcher[str](dialect="mqtt")
    m.subscribe_many([("a/+", "x"), ("a/b/#", "y"), ("c/#", "z"), ("$SYS/#", "w"), ("#", "v")])
    assert m.overlapping("a/b") == {"a/+": {"x"}, "a/b/#": {"y"}, "#": {"v"}}
    assert m.overlapping("$SYS/x") == {"$SYS/#": {"w"}}
    assert m.snapshot().overlapping("c") == {"c/#": {"z"}, "#": {"v"}}
    with pytest.raises(InvalidPatternError):
        m.overlapping("a/#/b")


@pytest.mark.parametrize("dialect", sorted(SYNTAX))
@given(data=st.data())
def test_the_tries_walk_finds_what_a_scan_finds(dialect: str, data: st.DataObject) -> None:
    """Matcher.overlapping on the trie (a walk of the branches) against the naive algorithm's
    (a scan with Dialect.overlaps, itself checked against brute force above)."""
    patterns = data.draw(st.lists(PATTERNS[dialect](), max_size=10))
    walked, scanned = Matcher("trie", dialect), Matcher("naive", dialect)
    for i, pattern in enumerate(patterns):
        walked.subscribe(pattern, i)
        scanned.subscribe(pattern, i)
    for _ in range(3):
        query = data.draw(PATTERNS[dialect]())
        assert walked.overlapping(query) == scanned.overlapping(query), query


@pytest.mark.pure("compiled, the walk calls _words_to_try directly, not through the module")
def test_a_literal_pattern_walks_its_branch_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trie's walk tries the words q allows: a literal pattern's walk reads no other branch."""
    m = Matcher[int]("trie", "mqtt")
    m.subscribe_many((f"devices/d{i}/cmd", i) for i in range(5_000))
    m.subscribe("+/d42/#", -1)
    tried: list[int] = []
    real = _algebra._words_to_try

    def counted(*args: object) -> list[object]:
        words = real(*args)  # type: ignore[arg-type]
        tried.append(len(words))
        return words  # type: ignore[return-value]

    monkeypatch.setattr(_algebra, "_words_to_try", counted)
    assert m.overlapping("devices/d42/cmd") == {"devices/d42/cmd": {42}, "+/d42/#": {-1}}
    assert tried  # the counter was called
    assert sum(tried) <= 10


@pytest.mark.pure("compiled, the search calls _step directly, not through the module")
def test_hostile_patterns_cost_a_bounded_number_of_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """'#.a.*.*...': a pattern whose set of positions remembers the last words, 2**stars sets.
    overlaps() pairs single positions: its steps stay within (len(p) + 1) x (len(q) + 1) x the
    words tried (covers() gives up at its budget: the next test)."""
    amqp = make_dialect("amqp")
    hostile = "#.a." + ".".join(["*"] * 30)
    other = "#.b.*.*"
    steps: list[int] = []
    real = _algebra._step

    def counted(*args: object) -> frozenset[int]:
        steps.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_algebra, "_step", counted)
    for q_text, expected in ((other, True), ("#.b." + ".".join(["*"] * 30), False)):
        # True: an 'a' 31 words from the end, a 'b' 3 from it; False: the same word, a and b
        steps.clear()
        assert amqp.overlaps(hostile, q_text) is expected
        p, q = amqp.parse_pattern(hostile), amqp.parse_pattern(q_text)
        assert steps  # the counter was called
        assert len(steps) <= 2 * (len(p) + 1) * (len(q) + 1) * 3  # words: a, b, one other


def test_covers_gives_up_on_hostile_patterns_at_its_budget() -> None:
    """covers() on '#.a.*.*...' against itself: true, but only after every set of positions, of
    which there are 2**30; it raises the typed error at its budget instead."""
    amqp = make_dialect("amqp")
    hostile = "#.a." + ".".join(["*"] * 30)
    rules = amqp.topic_rules()
    with pytest.raises(ComplexityError, match="gave up after 5,000 steps"):
        # true, but only after every set of positions
        _algebra.covers(amqp.parse_pattern(hostile), amqp.parse_pattern(hostile), rules, budget=5_000)
    with pytest.raises(ComplexityError, match=f"gave up after {_algebra.COVERS_BUDGET:,} steps"):
        amqp.covers(hostile, hostile)  # the same through the public method, at the shipped budget
