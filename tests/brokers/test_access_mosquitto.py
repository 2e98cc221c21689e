"""AccessRules against a real Mosquitto 2.0 given the same acl_file.

On a generated grid (users, client ids, topic and pattern rules with %u/%c, topics), each
client publishes every topic with QoS 1 (Mosquitto answers 0x87 where it refuses) and
subscribes to ``#`` while an administrator publishes every topic: what Mosquitto accepts and
what each client receives must be what :class:`~topicmatch.AccessRules` says. Mosquitto accepts
every subscription (it checks ``read`` per message), so for subscribe the test checks that each
filter AccessRules allows loses nothing at Mosquitto: every grid topic it matches arrives.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from topicmatch import AccessRules, InvalidRuleError, make_dialect
from topicmatch._words import pattern_matches

from .mqtt_clients import V5Client, mosquitto

pytestmark = pytest.mark.brokers

MQTT = make_dialect("mqtt")
LEVELS = ["a", "b", "alice", "c1"]
#: (username, client id) of the grid's clients; None is anonymous.
CLIENTS = [("alice", "c1"), ("alice", "alice"), ("bob", "c2"), ("bob", "a"), (None, "c3"), (None, "b")]
ADMIN = ("admin", "admin-publisher")
SYNC = "zz/sync"  # the sentinel topics, out of the grid's alphabet


def _filter(rng: random.Random, names: bool) -> str:
    levels = [
        rng.choice([*LEVELS, "+", "+", *(["%u", "%c"] if names else [])]) for _ in range(rng.randint(1, 3))
    ]
    if rng.random() < 0.35:
        levels.append("#")
    return "/".join(levels)


def _acl(rng: random.Random) -> str:
    access = ["read", "write", "readwrite", "deny", ""]
    lines = [f"topic {rng.choice(access)} {_filter(rng, False)}".replace("  ", " ") for _ in range(2)]
    for user in ("alice", "bob"):
        lines.append(f"user {user}")
        lines += [f"topic {rng.choice(access)} {_filter(rng, False)}".replace("  ", " ") for _ in range(3)]
    lines += [f"pattern {rng.choice(access)} {_filter(rng, True)}".replace("  ", " ") for _ in range(3)]
    lines += [f"pattern read {SYNC}/%c", f"user {ADMIN[0]}", "topic readwrite #"]
    return "\n".join(lines) + "\n"


def _topics() -> list[str]:
    one = LEVELS
    two = [f"{x}/{y}" for x in LEVELS for y in LEVELS]
    return one + two + [f"{x}/b/a" for x in LEVELS]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_access_rules_agree_with_mosquitto(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    text = _acl(rng)
    (tmp_path / "acl").write_text(text)
    rules = AccessRules(text)
    topics = _topics()
    with mosquitto(tmp_path, [f"acl_file {tmp_path / 'acl'}"]) as port:
        published: dict[tuple[str | None, str], set[str]] = {}
        for username, client_id in CLIENTS:
            client = V5Client(port, client_id, username)
            published[(username, client_id)] = {t for t in topics if client.publish(t) < 0x80}
            client.close()
        receivers = {pair: V5Client(port, pair[1], pair[0]) for pair in CLIENTS}
        for receiver in receivers.values():
            assert receiver.subscribe("#") < 0x80  # Mosquitto refuses no subscription
        admin = V5Client(port, ADMIN[1], ADMIN[0])
        for topic in topics:
            assert admin.publish(topic) < 0x80
        for _username, client_id in CLIENTS:
            assert admin.publish(f"{SYNC}/{client_id}") < 0x80
        received = {}
        for pair, receiver in receivers.items():
            receiver.wait_for(f"{SYNC}/{pair[1]}")
            received[pair] = {t for t in receiver.received if not t.startswith(f"{SYNC}/")}
            receiver.close()
        admin.close()
    problems = []
    for username, client_id in CLIENTS:
        pair = (username, client_id)
        ours_write = {t for t in topics if rules.may_publish(t, username=username, client_id=client_id)}
        ours_read = {t for t in topics if rules.may_receive(t, username=username, client_id=client_id)}
        if ours_write != published[pair]:
            problems.append(
                f"{pair} publish: ours-only {ours_write - published[pair]}, "
                f"mosquitto-only {published[pair] - ours_write}"
            )
        if ours_read != received[pair]:
            problems.append(
                f"{pair} receive: ours-only {ours_read - received[pair]}, "
                f"mosquitto-only {received[pair] - ours_read}"
            )
    assert not problems, text + "\n".join(problems)
    # Subscribe: every filter we allow receives, at Mosquitto, every grid topic it matches.
    filters = sorted({_filter(rng, False) for _ in range(60)} | {"#", "+", "a/#", "+/+"})
    allowed = 0
    for username, client_id in CLIENTS:
        for filter_ in filters:
            matching = {t for t in topics if pattern_matches(MQTT.parse_pattern(filter_), t.split("/"), True)}
            if rules.may_subscribe(filter_, username=username, client_id=client_id):
                allowed += 1
                assert matching <= received[(username, client_id)], (username, client_id, filter_)
    assert allowed > 0


def test_a_wildcard_cannot_escape_the_rules(tmp_path: Path) -> None:
    """amqtt's topic ACL lets a client allowed 'sensors/+' subscribe to 'sensors/#' (and '+' to
    '#'); Mosquitto accepts it and delivers only what 'read' allows; AccessRules refuses it."""
    text = "user u\ntopic read sensors/+\ntopic read +\n"
    rules = AccessRules(text)
    assert rules.may_subscribe("sensors/+", username="u", client_id="c")
    assert rules.may_subscribe("sensors/kitchen", username="u", client_id="c")
    assert not rules.may_subscribe("sensors/#", username="u", client_id="c")
    assert not rules.may_subscribe("#", username="u", client_id="c")
    (tmp_path / "acl").write_text(text + "user admin\ntopic readwrite #\n")
    with mosquitto(tmp_path, [f"acl_file {tmp_path / 'acl'}"]) as port:
        client = V5Client(port, "c", "u")
        assert client.subscribe("sensors/#") < 0x80  # accepted...
        admin = V5Client(port, "admin", "admin")
        for topic in ("sensors", "sensors/kitchen", "sensors/kitchen/temp", "sensors/x"):
            admin.publish(topic)
        client.wait_for("sensors/x")
        assert client.received == ["sensors", "sensors/kitchen", "sensors/x"]  # ...but partly served
        client.close()
        admin.close()


@pytest.mark.parametrize(
    ("text", "line"),
    [("topic read a/#/b\n", 1), ("\nuser\n", 2), ("user a\nfoo read a\n", 2), ("topic\n", 1)],
)
def test_lines_mosquitto_would_not_load_are_typed_errors(text: str, line: int) -> None:
    with pytest.raises(InvalidRuleError) as info:
        AccessRules(text)
    assert info.value.line == line
