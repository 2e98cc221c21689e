"""AccessRules without a broker: the rules of Mosquitto's default ACL check, one at a time
(tests/brokers/test_access_mosquitto.py compares them with a real Mosquitto)."""

from __future__ import annotations

import tracemalloc

import pytest

from topicmatch import (
    AccessRules,
    ClientRules,
    ConfigurationError,
    InvalidPatternError,
    InvalidRuleError,
    InvalidTopicError,
)

from .steps import steps_run

RULES = AccessRules(
    """
# anonymous clients
topic read public/#
user alice
topic readwrite alice/#
topic deny alice/secret/#
user bob
topic write +/in
pattern read users/%u/#
pattern readwrite devices/%c/#
"""
)


def test_user_rules_with_deny_first() -> None:
    assert RULES.may_publish("alice/x", username="alice", client_id="c")
    assert not RULES.may_receive("alice/secret/k", username="alice", client_id="c")
    assert not RULES.may_receive("public/x", username="alice", client_id="c")  # anonymous only
    assert RULES.may_receive("public/x", username=None, client_id="c")
    assert RULES.may_publish("x/in", username="bob", client_id="c")
    assert not RULES.may_receive("x/in", username="bob", client_id="c")  # write, not read


def test_patterns_substitute_the_names() -> None:
    assert RULES.may_receive("users/bob/inbox", username="bob", client_id="c")
    assert not RULES.may_receive("users/bob/inbox", username="alice", client_id="c")
    assert not RULES.may_receive("users//inbox", username=None, client_id="c")  # %u: not anonymous
    assert RULES.may_publish("devices/d7/state", username=None, client_id="d7")


def test_a_name_with_a_wildcard_gets_no_pattern_rule() -> None:
    assert not RULES.may_receive("devices/x/state", username=None, client_id="+")
    assert not RULES.may_publish("devices/x/state", username="a#", client_id="x")
    assert RULES.may_publish("alice/x", username="alice", client_id="#")  # its own rules still apply


def test_subscribe_needs_one_covering_rule_and_no_overlapping_deny() -> None:
    assert RULES.may_subscribe("alice/x/+", username="alice", client_id="c")
    assert not RULES.may_subscribe("alice/+/x", username="alice", client_id="c")  # alice/secret/x
    assert not RULES.may_subscribe("alice/#", username="alice", client_id="c")  # alice/secret is denied
    assert not RULES.may_subscribe("#", username="alice", client_id="c")
    assert RULES.may_subscribe("$share/g/devices/c/#", username=None, client_id="c")
    assert not RULES.may_subscribe("devices/+/#", username=None, client_id="c")


def test_dollar_topics_need_a_dollar_rule() -> None:
    rules = AccessRules("topic read #\ntopic read $SYS/broker/#\n")
    assert not rules.may_receive("$SYS/load", username=None, client_id="c")
    assert rules.may_receive("$SYS/broker/uptime", username=None, client_id="c")
    assert not rules.may_subscribe("$SYS/#", username=None, client_id="c")


def test_bad_questions_are_the_dialects_errors() -> None:
    with pytest.raises(InvalidTopicError):
        RULES.may_publish("a/+", username=None, client_id="c")
    with pytest.raises(InvalidPatternError):
        RULES.may_subscribe("a/#/b", username=None, client_id="c")


# -- a hostile client: names chosen to widen a rule --------------------------------------------
def test_a_share_prefixed_client_id_grants_nothing_more() -> None:
    """A rule is text: '%c/#' with the id '$share/x' is the levels '$share', 'x', '#', which
    match only topics under '$share/x/', and no client reads or writes those."""
    rules = AccessRules("pattern readwrite %c/#\n")
    attacker = rules.client(username=None, client_id="$share/x")
    assert not attacker.may_subscribe("#")
    assert not attacker.may_receive("a/b")
    assert not attacker.may_publish("a/b")
    assert not rules.may_receive("$share/x/a", username=None, client_id="$share/x")
    assert not rules.may_subscribe("$share/g/#", username=None, client_id="$share/x")
    assert rules.may_receive("c1/a", username=None, client_id="c1")


def test_rules_are_never_read_as_shared_filters() -> None:
    rules = AccessRules("topic read $share/g/#\ntopic readwrite $share/g/a\n")
    assert not rules.may_receive("a/b", username=None, client_id="c")
    assert not rules.may_subscribe("#", username=None, client_id="c")
    assert not rules.may_receive("$share/g/a", username=None, client_id="c")  # Mosquitto's own rule


def test_lines_end_at_newline_only() -> None:
    """Mosquitto reads lines with fgets: a \\r, \\x85 or U+2028 inside a line does not end it, so
    a name cannot smuggle a rule into the file's text."""
    for separator in ("\r", "\x85", "\u2028", "\x0b", "\x1c"):
        rules = AccessRules(f"user bob{separator}topic readwrite #\ntopic read a\n")
        assert not rules.may_receive("a", username="bob", client_id="c"), repr(separator)
        assert rules.may_receive("a", username=f"bob{separator}topic readwrite #", client_id="c")
        assert not rules.may_receive("b", username=f"bob{separator}topic readwrite #", client_id="c")
    crlf = AccessRules("user bob\r\ntopic read a\r\n")  # a CR before the newline is trailing space
    assert crlf.may_receive("a", username="bob", client_id="c")


def test_names_are_trimmed_of_ascii_space_only() -> None:
    rules = AccessRules("user \u3000bob\ntopic read a\nuser  carol \t\ntopic read b\n")
    assert not rules.may_receive("a", username="bob", client_id="c")
    assert rules.may_receive("a", username="\u3000bob", client_id="c")
    assert rules.may_receive("b", username="carol", client_id="c")


def test_an_empty_username_is_anonymous() -> None:
    rules = AccessRules("topic read public/#\npattern read users/%u/#\n")
    assert rules.may_receive("public/x", username="", client_id="c")
    assert not rules.may_receive("users//x", username="", client_id="c")  # %u: not anonymous


def test_mosquittos_own_rules() -> None:
    client = AccessRules(
        "topic readwrite #\ntopic readwrite $SYS/#\ntopic readwrite $SYSTEM/#\ntopic readwrite $share/#\n"
    ).client(username=None, client_id="c")
    assert not client.may_publish("$SYS/broker/load")
    assert not client.may_publish("$SYSTEM/x")  # Mosquitto compares the first 4 characters
    assert client.may_publish("$SYS/broker/connection/b1/state")  # a bridge's state topic
    assert client.may_receive("$SYS/broker/load")
    for topic in ("$share/g/a", "$share", "$shared/x"):
        assert not client.may_receive(topic)
        assert not client.may_publish(topic)
    assert not client.may_subscribe("$shared/#")
    assert client.may_subscribe("$share/g/a/#")


def test_a_deny_pattern_holds_whatever_the_name_makes_it() -> None:
    """A denial is never dropped because the name made the rule long or deep."""
    long_id = "x" * 40_000
    rules = AccessRules("pattern deny %c/%c/#\npattern read %c/#\n")
    assert not rules.may_subscribe(f"{long_id}/+/#", username=None, client_id=long_id)
    assert rules.may_subscribe(f"{long_id}/a", username=None, client_id=long_id)
    deep_id = "/".join("d" * 150)  # 150 levels: 'deep/<id>/+' has 152
    rules_deep = AccessRules("pattern read deep/#\npattern deny deep/%c/+\n")
    assert not rules_deep.may_subscribe("deep/d/#", username=None, client_id=deep_id)
    assert rules_deep.may_subscribe("deep/d/#", username=None, client_id="short")
    assert not rules_deep.may_receive(f"deep/{deep_id}/k", username=None, client_id=deep_id)


def test_names_no_mqtt_client_can_send_get_no_pattern() -> None:
    rules = AccessRules("pattern read %c/#\n")
    assert not rules.may_receive("a/x", username=None, client_id="a\x00b")  # C would read 'a'

    huge = "é" * 40_000  # 80,000 bytes of UTF-8
    assert not rules.may_receive("x", username=None, client_id=huge)
    assert rules.may_receive("ok/x", username=None, client_id="ok")


# -- the versions' substitution --------------------------------------------------------------
def test_mosquitto_2_0_substitutes_anywhere_and_2_1_only_whole_levels() -> None:
    text = "pattern read dev-%c/#\npattern read %c/in\npattern read rooms/%u/#\n"
    v20, v21 = AccessRules(text), AccessRules(text, version="2.1")
    ask = {"username": "u1", "client_id": "c1"}
    assert v20.may_receive("dev-c1/x", **ask)
    assert not v21.may_receive("dev-c1/x", **ask)
    assert v21.may_receive("dev-%c/x", **ask)  # 2.1 leaves it as text
    for topic in ("c1/in", "rooms/u1/t"):
        assert v20.may_receive(topic, **ask)
        assert v21.may_receive(topic, **ask)
    # A name with '/' adds levels in 2.0, and matches nothing in 2.1.
    slash = {"username": "u1", "client_id": "a/b"}
    assert v20.may_receive("a/b/in", **slash)
    assert not v21.may_receive("a/b/in", **slash)
    # An empty name: 2.0 puts nothing in its place, 2.1 matches nothing.
    empty = {"username": "u1", "client_id": ""}
    assert v20.may_receive("/in", **empty)
    assert not v21.may_receive("/in", **empty)
    # A '$' name: 2.0 compares the rule's text after substitution, 2.1 the text as written.
    dollar = {"username": "u1", "client_id": "$x"}
    assert v20.may_receive("$x/in", **dollar)
    assert not v21.may_receive("$x/in", **dollar)


def test_an_unknown_version_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"2\.0, 2\.1"):
        AccessRules("", version="3")


# -- parsing: what Mosquitto loads, loaded; what it refuses, refused ---------------------------
@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("  # a comment after spaces\n", 1),  # only a '#' in the first column starts a comment
        ("\ttopic read a\n", 1),  # a tab is no separator: the keyword is '\ttopic'
        ("topic\tread a\n", 1),
        ("topic foo a\n", 1),  # an unknown access type before a filter
        ("topic\n", 1),
        ("user\n", 1),
        ("user \t \n", 1),
        ("topic read a\x00b\n", 1),
        ("topic read " + "a/" * 201 + "a\n", 1),  # 201 '/'
        ("topic read " + "a" * 65_536 + "\n", 1),
        ("pattern read %c+\n", 1),
        ("a\nuser x\nTopic read a\n", 1),
    ],
)
def test_lines_mosquitto_refuses_are_refused(text: str, line: int) -> None:
    with pytest.raises(InvalidRuleError) as info:
        AccessRules(text)
    assert info.value.line == line


def test_lines_mosquitto_loads_are_loaded() -> None:
    rules = AccessRules(
        "topic read\n"  # one word: the filter 'read', readwrite
        "  topic   write   spaced/a  \n"  # spaces before and between words
        "topic read\ttabbed\n"  # the filter 'read\ttabbed', readwrite
        "topic read " + "b/" * 200 + "b\n"  # 200 '/': the deepest filter Mosquitto takes
        "#comment\n\n   \n"
    )
    client = rules.client(username=None, client_id="c")
    assert client.may_publish("read")
    assert client.may_receive("read")
    assert client.may_publish("spaced/a")
    assert not client.may_receive("spaced/a")
    assert client.may_receive("b/" * 200 + "b")
    assert not client.may_receive("tabbed")


# -- cost: a name's length adds nothing to a check -------------------------------------------
def _hundred_patterns() -> AccessRules:
    lines = [f"pattern {'deny' if i % 5 == 0 else 'read'} site{i}/%c/+/dev-%c/#" for i in range(100)]
    return AccessRules("\n".join(lines) + "\n")


def _one_of_each(client: ClientRules) -> None:
    client.may_receive("site7/c/x/dev-c/y")
    client.may_publish("site7/other/x")
    client.may_subscribe("site3/+/x/#")


@pytest.mark.pure("counts the lines of the core's Python code, which the compiled build has not")
def test_a_check_takes_the_same_steps_for_a_64_kb_name() -> None:
    rules = _hundred_patterns()
    short, long = "c" * 10, "c" * 65_000

    def client_checks(name: str) -> None:
        _one_of_each(rules.client(username="u", client_id=name))

    def named_check(name: str) -> None:
        rules.may_subscribe("site3/+/x/#", username=name, client_id=name)

    for question in (client_checks, named_check):
        small = steps_run(lambda q=question: q(short))  # type: ignore[misc]
        assert small > 300  # the hundred rules are looked at
        assert steps_run(lambda q=question: q(long)) == small  # type: ignore[misc]


def test_a_check_allocates_nothing_for_a_long_name() -> None:
    """No pattern is substituted into a string: with a 64 KB client id and 100 patterns, a
    check's allocations stay far below one copy of the name (a topic that holds the name costs
    its own split, one copy, not one per rule)."""
    rules = _hundred_patterns()
    name = "c" * 65_000
    client = rules.client(username="u", client_id=name)
    topic = f"site7/{name}/x/dev-c/y"
    _one_of_each(client)  # warm
    tracemalloc.start()
    try:
        _one_of_each(client)
        _size, short_topics = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        client.may_receive(topic)
        _size, long_topic = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert short_topics < 32_000, short_topics
    assert long_topic < 100_000, long_topic


#: (bytes of an earlier line with its "\n", bytes of the last line, the word it grants, read?)
LAST_LINES = [
    (0, 254, "secret", True), (0, 255, "secret", False), (0, 256, "secret", True),
    (0, 1255, "secret", False), (255, 255, "secret", False), (256, 255, "secret", True),
    (300, 1255, "secret", False), (300, 1256, "secret", True), (0, 255, "secrét", False),
]  # fmt: skip


@pytest.mark.parametrize(("earlier", "last", "word", "read"), LAST_LINES)
def test_a_last_line_that_fills_mosquittos_buffer_is_lost_as_there(
    earlier: int, last: int, word: str, read: bool
) -> None:
    # Mosquitto's reader (fgets into 256 bytes, 1,000 more per line that does not fit, counted
    # in bytes) loses a last line without "\n" that exactly fills it;
    # tests/brokers/test_access_hostile.py checks these cases against a real Mosquitto.
    rule = f"topic readwrite {word}"
    text = ("#" * (earlier - 1) + "\n" if earlier else "") + "topic readwrite public\n"
    rules = AccessRules(text + rule + " " * (last - len(rule.encode())))
    assert rules.may_publish("public", username=None, client_id="c")
    assert rules.may_publish(word, username=None, client_id="c") is read


def test_a_lone_surrogate_in_a_rule_is_measured_not_refused() -> None:
    # A str may hold a surrogate that no UTF-8 file does: it is measured as UTF-8 would write
    # it (3 bytes), not an encoding error.
    rules = AccessRules("topic readwrite public\ntopic read a\ud800")
    assert rules.may_publish("public", username=None, client_id="c")
