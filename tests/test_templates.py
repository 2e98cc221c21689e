"""Named templates and the router: the same verdicts and values as ``capture`` and
``Matcher.captures``, the most specific template first, typed errors that change nothing."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import (
    ConfigurationError,
    InvalidPatternError,
    InvalidTopicError,
    Matcher,
    Router,
    Template,
    capture,
)

from .strategies import PATTERNS, TOPICS

ONE = {"amqp": "*", "mqtt": "+", "nats": "*"}
MANY = {"amqp": "#", "mqtt": "#", "nats": ">"}
SEP = {"amqp": ".", "mqtt": "/", "nats": "."}


def _named(dialect: str, pattern: str, data: st.DataObject) -> tuple[str, list[bool]]:
    """``pattern`` with some of its wildcards written as names (``{w0}``, ``{w1+}``), and per
    wildcard, left to right, whether it got one."""
    levels = pattern.split(SEP[dialect])
    named: list[bool] = []
    for i, level in enumerate(levels):
        if level in (ONE[dialect], MANY[dialect]):
            named.append(data.draw(st.booleans()))
            if named[-1]:
                levels[i] = f"{{w{i}{'+' if level == MANY[dialect] else ''}}}"
    return SEP[dialect].join(levels), named


def _rank(dialect: str, level: str) -> int:
    return 2 if level == MANY[dialect] else 1 if level == ONE[dialect] else 0


def _before(dialect: str, a: str, b: str) -> bool:
    """The reference order, as the docs say it: level by level from the left, literal before a
    one-level wildcard before a many-level one; one that ends before one that goes on; then
    the text."""
    x, y = a.split(SEP[dialect]), b.split(SEP[dialect])
    for p, q in zip(x, y, strict=False):
        if _rank(dialect, p) != _rank(dialect, q):
            return _rank(dialect, p) < _rank(dialect, q)
    if len(x) != len(y):
        return len(x) < len(y)
    return a < b


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@given(data=st.data())
def test_a_template_is_its_pattern_and_binds_what_capture_binds(dialect: str, data: st.DataObject) -> None:
    pattern = data.draw(PATTERNS[dialect]())
    text, named = _named(dialect, pattern, data)
    template = Template(text, dialect)
    assert template.pattern == pattern
    topic = data.draw(TOPICS[dialect]())
    values = capture(pattern, topic, dialect)
    got = template.match(topic)
    assert (got is None) is (values is None)
    if values is not None and got is not None:
        wanted = [value for value, has_name in zip(values, named, strict=False) if has_name]
        assert list(got.values()) == wanted
        assert list(got) == list(template.names)


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@given(data=st.data())
def test_the_router_finds_what_captures_finds_most_specific_first(dialect: str, data: st.DataObject) -> None:
    patterns = data.draw(st.lists(PATTERNS[dialect](), min_size=1, max_size=8, unique=True))
    router: Router[int] = Router(dialect)
    matcher: Matcher[int] = Matcher(dialect=dialect)
    named: dict[str, list[bool]] = {}
    for n, pattern in enumerate(patterns):
        text, named[pattern] = _named(dialect, pattern, data)
        router.add(text, n)
        matcher.subscribe(pattern, n)
    for topic in data.draw(st.lists(TOPICS[dialect](), min_size=1, max_size=5)):
        expected = {c.pattern: c for c in matcher.captures(topic)}
        routes = router.routes(topic)
        assert {r.template.pattern for r in routes} == set(expected)
        for route in routes:
            assert patterns[route.handler] == route.template.pattern
            values = zip(expected[route.template.pattern].values, named[route.template.pattern], strict=True)
            assert list(route.captures.values()) == [value for value, has_name in values if has_name]
        for first, second in itertools.pairwise(routes):
            assert _before(dialect, first.template.pattern, second.template.pattern)
        best = router.route(topic)
        assert (best is None) if not routes else (best == routes[0])


@pytest.mark.parametrize(
    ("dialect", "templates", "topic", "winner"),
    [
        ("mqtt", ["a/#", "a/+", "a/b"], "a/b", "a/b"),
        ("mqtt", ["a/#", "a/+"], "a/x", "a/+"),
        ("mqtt", ["a/#", "a"], "a", "a"),
        ("mqtt", ["a/#", "a/+/#"], "a/x/y", "a/+/#"),
        ("amqp", ["#.b", "a.#"], "a.b", "a.#"),
        ("amqp", ["#.b.#", "#.a.#"], "a.b", "#.a.#"),
        ("nats", ["orders.>", "orders.*.paid"], "orders.eu.paid", "orders.*.paid"),
    ],
)
def test_the_most_specific_template_wins(dialect: str, templates: list[str], topic: str, winner: str) -> None:
    router: Router[str] = Router(dialect)
    for template in templates:
        router.add(template, template)
    found = router.route(topic)
    assert found is not None
    assert found.handler == winner


def test_values_are_a_word_for_a_name_and_words_for_a_name_plus() -> None:
    assert Template("logs/{rest+}", "mqtt").match("logs") == {"rest": ()}  # '#' matches its parent
    assert Template("logs.{rest+}", "nats").match("logs") is None  # '>' needs one token
    assert Template("#.{x}.{tail+}", "amqp").match("a.b.c") == {"x": "a", "tail": ("b", "c")}
    assert Template("+/{id}/{rest+}", "mqtt").match("s/7/t/u") == {"id": "7", "rest": ("t", "u")}
    assert Template("a/{b}c/d", "mqtt").match("a/{b}c/d") == {}  # braces inside a level: literal


@pytest.mark.parametrize(
    ("text", "dialect", "reason"),
    [
        ("a/{b c}", "mqtt", "is not a name"),
        ("a/{}", "mqtt", "is not a name"),
        ("a/{1x}", "mqtt", "is not a name"),
        ("a/{x}/{x}", "mqtt", "used twice"),
        ("{rest+}/a", "mqtt", "#"),
        ("{rest+}.a", "nats", ">"),
        ("a/b+/{x}", "mqtt", "+"),
    ],
)
def test_a_bad_template_is_one_typed_line(text: str, dialect: str, reason: str) -> None:
    with pytest.raises(InvalidPatternError) as caught:
        Template(text, dialect)
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("bad", [None, b"a/{x}", 7, ["a"]])
def test_a_template_that_is_not_a_str_is_the_typed_error(bad: object) -> None:
    with pytest.raises(InvalidPatternError, match="a template is a str"):
        Template(bad)  # type: ignore[type-var]
    router: Router[str] = Router("mqtt")
    with pytest.raises(InvalidPatternError):
        router.add(bad, "h")  # type: ignore[type-var]
    with pytest.raises(InvalidPatternError):
        router.remove(bad)  # type: ignore[type-var]
    assert len(router) == 0


def test_a_template_is_immutable_and_its_errors_quote_it() -> None:
    template = Template("a/{x}", "mqtt")
    with pytest.raises(AttributeError, match="immutable"):
        template.pattern = "b/+"
    assert template.match("a/b") == {"x": "b"}
    with pytest.raises(InvalidPatternError, match=r"'\{rest\+\}/a'"):
        Template("{rest+}/a", "mqtt")  # the template the user wrote, not '#/a'


def test_errors_leave_the_router_as_it_was() -> None:
    router: Router[str] = Router("mqtt")
    router.add("a/{x}", "first")
    with pytest.raises(ConfigurationError, match="routed already"):
        router.add("a/{y}", "second")  # the same pattern, a/+
    with pytest.raises(InvalidPatternError):
        router.add("a/{y}/{y}", "third")
    with pytest.raises(InvalidTopicError):
        router.route("a/+")
    assert len(router) == 1
    found = router.route("a/b")
    assert found is not None
    assert (found.handler, found.captures) == ("first", {"x": "b"})
    assert router.remove("a/{other}")
    assert not router.remove("a/{x}")
    assert router.route("a/b") is None
    assert len(router) == 0
    with pytest.raises(ConfigurationError):
        Router("kafka")
