"""Hypothesis strategies: valid patterns and topics of each dialect, over small alphabets.

The alphabets are tiny on purpose (a few words, the empty word, ``$`` words, words that look like
wildcards) so that random patterns and topics actually match each other often.
"""

from __future__ import annotations

from hypothesis import strategies as st

_WORDS = ["a", "b", "cd"]


def _join(sep: str, words: list[str]) -> str:
    return sep.join(words)


def amqp_patterns() -> st.SearchStrategy[str]:
    word = st.sampled_from([*_WORDS, "", "*", "#", "a*", "$x"])
    return st.lists(word, max_size=6).map(lambda ws: _join(".", ws))


def amqp_topics() -> st.SearchStrategy[str]:
    word = st.sampled_from([*_WORDS, "", "*", "#", "$x"])
    return st.lists(word, max_size=6).map(lambda ws: _join(".", ws))


@st.composite
def mqtt_patterns(draw: st.DrawFn) -> str:
    levels = draw(st.lists(st.sampled_from([*_WORDS, "", "+", "$x", "*"]), max_size=5))
    if draw(st.booleans()):
        levels.append("#")
    if not levels or levels == [""]:
        levels = ["#"] if draw(st.booleans()) else ["a"]
    filter_ = "/".join(levels)
    if draw(st.integers(0, 5)) == 0:
        return f"$share/g{draw(st.integers(1, 2))}/{filter_}"
    return filter_


def mqtt_topics() -> st.SearchStrategy[str]:
    level = st.sampled_from([*_WORDS, "", "$x", "$SYS", "*"])
    return st.lists(level, min_size=1, max_size=6).map("/".join).filter(bool)


@st.composite
def nats_patterns(draw: st.DrawFn) -> str:
    tokens = draw(st.lists(st.sampled_from([*_WORDS, "*", "a*", "$x", "b>"]), max_size=5))
    if draw(st.booleans()) or not tokens:
        tokens.append(">")
    return ".".join(tokens)


def nats_topics() -> st.SearchStrategy[str]:
    token = st.sampled_from([*_WORDS, "", "*", ">", "a*", "$x"])
    return st.lists(token, min_size=1, max_size=6).map(".".join).filter(bool)


PATTERNS = {"amqp": amqp_patterns, "mqtt": mqtt_patterns, "nats": nats_patterns}
TOPICS = {"amqp": amqp_topics, "mqtt": mqtt_topics, "nats": nats_topics}
