"""A brute-force reference matcher, written straight from the dialect rules.

It shares no code with the library: it works on the raw strings, recursing word by word with
memoisation, so that it is obviously right rather than fast. Inputs must be valid for the dialect.
"""

from __future__ import annotations

from functools import cache


def _match_words(
    pattern: tuple[str, ...], topic: tuple[str, ...], one: str, many: str, many_min: int
) -> bool:
    @cache
    def m(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(topic)
        word = pattern[i]
        if word == many:
            # zero (or, for NATS '>', one) or more words
            return any(m(i + 1, k) for k in range(j + many_min, len(topic) + 1))
        if j == len(topic):
            return False
        return (word == one or word == topic[j]) and m(i + 1, j + 1)

    return m(0, 0)


def amqp_matches(pattern: str, topic: str) -> bool:
    p = tuple(pattern.split(".")) if pattern else ()
    t = tuple(topic.split(".")) if topic else ()
    return _match_words(p, t, "*", "#", 0)


def mqtt_matches(pattern: str, topic: str) -> bool:
    t = tuple(topic.split("/"))
    if pattern.startswith("$share/"):
        if t[0].startswith("$"):
            return False  # Mosquitto never delivers a '$' topic to a shared subscription
        pattern = pattern.split("/", 2)[2]
    p = tuple(pattern.split("/"))
    if t[0].startswith("$") and p[0] in ("+", "#"):
        return False
    return _match_words(p, t, "+", "#", 0)


def nats_matches(pattern: str, topic: str) -> bool:
    t = tuple(topic.split("."))
    if "" in t:
        return False  # the server accepts such a subject and delivers it to nobody
    return _match_words(tuple(pattern.split(".")), t, "*", ">", 1)


MATCHES = {"amqp": amqp_matches, "mqtt": mqtt_matches, "nats": nats_matches}
