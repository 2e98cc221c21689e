"""AccessRules against a real Mosquitto 2.0 with the same acl_file, on clients chosen by an
attacker: client ids and usernames holding ``/ + # $ %``, ``$share/`` and ``$SYS`` prefixes,
spaces, non-ASCII, an empty username, a 60,000-character client id; topics built from those names;
rules with ``%c`` and ``%u`` whole or inside a level, ``$`` rules, denials.

For each generated rule set, every client publishes every topic with QoS 1 (Mosquitto answers
0x87 where it refuses) and subscribes to everything while an administrator publishes every topic
it may: what Mosquitto accepts and delivers must be exactly what ``AccessRules(version="2.0")``
says, and every filter ``may_subscribe`` allows must lose nothing at Mosquitto. Then acl files
with hostile lines (tabs, ``\\r``, U+2028, leading spaces, one-word rules) must be loaded or
refused as Mosquitto loads or refuses them. The number of checks is asserted (>= 10,000 over the
rule sets), so the comparison cannot shrink unnoticed.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from topicmatch import AccessRules, InvalidPatternError, InvalidRuleError, InvalidTopicError, make_dialect

from .mqtt_clients import V5Client, mosquitto

pytestmark = pytest.mark.brokers

MQTT = make_dialect("mqtt")
LONG_ID = "L" * 60_000
USERNAMES = [None, "", "alice", "bob", "$SYS", "a/b", "u+", "u#", "sp ace", "ü", "%c", "$share/x"]
CLIENT_IDS = [
    "c1", "$share/x", "$share/g/a", "$SYS", "$x", "a/b", "a", "%u", "+", "c#", "sp ace", LONG_ID,
    "ü/é", "/lead", "trail/", "in", "dev", "%c",
]  # fmt: skip
TEMPLATES = [
    "%c/#", "%c/in", "a/%c", "dev-%c/+", "%u/%c", "%u/#", "$share/%c/#", "%c", "+/%c", "%%c/a",
    "%c/%u/#", "$x/%c", "%c-%u/#", "in/%u",
]  # fmt: skip
ACCESS = ["read", "write", "readwrite", "deny", ""]
ADMIN = ("admin", "admin-publisher")
SEEDS = [11, 12, 13, 14, 15]
MIN_CHECKS = 10_000  # over SEEDS: publish and receive checks compared with Mosquitto


def _valid_topic(topic: str) -> bool:
    try:
        MQTT.parse_topic(topic)
    except InvalidTopicError:
        return False
    return True


def _clients(rng: random.Random) -> list[tuple[str | None, str]]:
    ids = rng.sample(CLIENT_IDS, 12)
    if LONG_ID not in ids:
        ids[0] = LONG_ID
    return [(rng.choice(USERNAMES), client_id) for client_id in ids]


def _topics(clients: list[tuple[str | None, str]]) -> list[str]:
    topics = [
        "a", "a/b", "b/a/in", "/a", "a//b", "in", "$x", "$x/a", "$x/in", "$SYS/a",
        "$SYS/broker/connection/b/state", "$share/x/a", "$share", "$sharex/a", "$SYSTEM/a",
    ]  # fmt: skip
    for username, client_id in clients:
        for name in (client_id, username or "anon"):
            topics += [name, f"{name}/a", f"{name}/in", f"a/{name}", f"dev-{name}/a", f"in/{name}"]
        topics += [f"{username}/{client_id}", f"{client_id}-{username}/a", f"$x/{client_id}"]
        topics += [f"{client_id}/{username}/z"]
    return list(dict.fromkeys(t for t in topics if _valid_topic(t)))


def _filter(rng: random.Random) -> str:
    first = rng.choice(["a", "b", "+", "in", "", "$x", "$SYS", "$share", "dev-a"])
    levels = [first] + [rng.choice(["a", "b", "+", "in", ""]) for _ in range(rng.randint(0, 2))]
    if rng.random() < 0.4:
        levels.append("#")
    return "/".join(levels)


def _rule(rng: random.Random, keyword: str, filter_: str) -> str:
    access = rng.choice(ACCESS)
    return f"{keyword} {access} {filter_}" if access else f"{keyword} {filter_}"


def _acl(rng: random.Random, clients: list[tuple[str | None, str]]) -> str:
    # Every client reads '$sync/#' through its own section: the sentinel that tells a receiver
    # everything before it has arrived. No generated rule starts with '$sync'.
    lines = ["topic read $sync/#"] + [_rule(rng, "topic", _filter(rng)) for _ in range(2)]
    users = {u for u, _c in clients if u} | {"alice"}
    for user in sorted(users):
        lines += [f"user {user}", "topic read $sync/#"]
        lines += [_rule(rng, "topic", _filter(rng)) for _ in range(rng.randint(1, 3))]
    lines += [_rule(rng, "pattern", template) for template in rng.sample(TEMPLATES, 6)]
    lines += [f"user {ADMIN[0]}", "topic readwrite #", "topic readwrite $x/#", "topic readwrite $sync/#"]
    return "\n".join(lines) + "\n"


def _filters(rng: random.Random, client_id: str, username: str | None) -> list[str]:
    filters = {_filter(rng) for _ in range(30)} | {"#", "+", "+/#", "$x/#", "$SYS/#", "$sync/#"}
    for name in (client_id, username or ""):
        filters |= {f"{name}/#", f"{name}/in", f"a/{name}", f"$share/g/{name}/#", f"dev-{name}/+"}
    out = []
    for filter_ in sorted(filters):
        try:
            MQTT.parse_pattern(filter_)
        except InvalidPatternError:
            continue
        out.append(filter_)
    return out


def _received_at_mosquitto(
    port: int, clients: list[tuple[str | None, str]], topics: list[str]
) -> tuple[dict[int, set[str]], dict[int, set[str]], list[str]]:
    """What each client may publish, what it receives, and the topics the administrator
    published (the ones a receive check can ask about)."""
    published: dict[int, set[str]] = {}
    for i, (username, client_id) in enumerate(clients):
        client = V5Client(port, client_id, username)
        published[i] = {t for t in topics if client.publish(t) < 0x80}
        client.close()
    receivers = {i: V5Client(port, client_id, username) for i, (username, client_id) in enumerate(clients)}
    for receiver in receivers.values():
        for filter_ in ("#", "$x/#", "$sync/#"):
            assert receiver.subscribe(filter_) < 0x80  # Mosquitto refuses no subscription
    admin = V5Client(port, ADMIN[1], ADMIN[0])
    sent = [t for t in topics if admin.publish(t) < 0x80]
    for i in receivers:
        assert admin.publish(f"$sync/{i}") < 0x80
    received = {}
    for i, receiver in receivers.items():
        receiver.wait_for(f"$sync/{i}")
        received[i] = {t for t in receiver.received if not t.startswith("$sync/")}
        receiver.close()
    admin.close()
    return published, received, sent


@pytest.fixture(scope="module")
def checks() -> list[int]:
    """The number of checks each seed compared (the module's last test adds them up)."""
    return []


@pytest.mark.parametrize("seed", SEEDS)
def test_hostile_clients_get_what_mosquitto_gives(tmp_path: Path, seed: int, checks: list[int]) -> None:
    rng = random.Random(seed)
    clients = _clients(rng)
    topics = _topics(clients)
    text = _acl(rng, clients)
    (tmp_path / "acl").write_text(text, encoding="utf-8")
    rules = AccessRules.from_file(tmp_path / "acl")
    with mosquitto(tmp_path, [f"acl_file {tmp_path / 'acl'}"]) as port:
        published, received, sent = _received_at_mosquitto(port, clients, topics)
    admin_ours = {t for t in topics if rules.may_publish(t, username=ADMIN[0], client_id=ADMIN[1])}
    assert admin_ours == set(sent)
    problems, count = [], 0
    for i, (username, client_id) in enumerate(clients):
        client = rules.client(username=username, client_id=client_id)
        ours_write = {t for t in topics if client.may_publish(t)}
        ours_read = {t for t in sent if client.may_receive(t)}
        count += len(topics) + len(sent)
        who = (username, client_id[:20])
        compared = (("publish", ours_write, published[i]), ("receive", ours_read, received[i]))
        for what, ours, theirs in compared:
            if ours != theirs:
                problems.append(f"{who} {what}: ours only {ours - theirs}, Mosquitto's only {theirs - ours}")
    assert not problems, text[:2000] + "\n" + "\n".join(problems)
    # Subscribe: each filter we allow receives, at Mosquitto, every published topic it matches.
    allowed = 0
    for i, (username, client_id) in enumerate(clients):
        client = rules.client(username=username, client_id=client_id)
        for filter_ in _filters(rng, client_id, username):
            if client.may_subscribe(filter_):
                allowed += 1
                inner = filter_.split("/", 2)[2] if filter_.startswith("$share/") else filter_
                matching = {t for t in sent if MQTT.matches(inner, t)}
                assert matching <= received[i], (username, client_id[:20], filter_, matching - received[i])
    assert allowed > 0
    checks.append(count)


def test_enough_checks_ran(checks: list[int]) -> None:
    assert len(checks) == len(SEEDS)  # every seed ran (a failed one fails above)
    assert sum(checks) >= MIN_CHECKS, checks


# -- files: loaded or refused as Mosquitto loads or refuses them ----------------------------
HOSTILE_LINES = [
    "topic read", "topic deny", "topic read\ta", "topic\tread a", "\ttopic read a", "  topic read a",
    "topic  read   a  ", "topic read a\rtopic readwrite #", "topic read a\u2028topic readwrite #",
    "topic read a\x85b", "  # indented comment", "#comment", "topic foo a", "topic READ a",
    "Topic read a", "user", "user  \t", "user bob\rtopic readwrite #", "user \u3000bob",
    "pattern read %c+", "pattern read a/#/b", "topic read a/#/b", "topic read +a", "topic read a/+",
    "topic read " + "a/" * 200 + "a", "topic read " + "a/" * 201 + "a", "pattern deny", "topic",
    "pattern readwrite %c/%u", "topic readwrite $share/g/#", "topic read\v", "topic read a\f",
]  # fmt: skip
PROBE_TOPICS = ["a", "read", "a/b", "deny", "b", "x"]


def _mosquitto_loads(directory: Path, text: str) -> bool:
    (directory / "acl").write_text(text, encoding="utf-8")
    try:
        with mosquitto(directory, [f"acl_file {directory / 'acl'}"]):
            return True
    except RuntimeError as error:  # the broker exited: it refused the file
        reason = str(error)
    assert "error" in reason.lower(), reason
    return False


@pytest.mark.parametrize("line", HOSTILE_LINES, ids=[repr(line)[:30] for line in HOSTILE_LINES])
def test_acl_files_load_as_mosquitto_loads_them(tmp_path: Path, line: str) -> None:
    text = f"user bob\ntopic read b\n{line}\nuser {ADMIN[0]}\ntopic readwrite #\n"
    try:
        rules: AccessRules | None = AccessRules(text)
    except InvalidRuleError:
        rules = None
    loads = _mosquitto_loads(tmp_path, text)
    assert (rules is not None) == loads, (line, loads)
    if rules is None:
        return
    with mosquitto(tmp_path, [f"acl_file {tmp_path / 'acl'}"]) as port:
        for username, client_id in ((None, "anon"), ("bob", "bob-1")):
            client = V5Client(port, client_id, username)
            theirs = {t for t in PROBE_TOPICS if client.publish(t) < 0x80}
            client.close()
            ours = {t for t in PROBE_TOPICS if rules.may_publish(t, username=username, client_id=client_id)}
            assert ours == theirs, (line, username)


# A last line without its "\n" whose bytes exactly fill Mosquitto's read buffer (256 bytes, then
# 1,000 more each time a line does not fit) is lost; an earlier long line grows the buffer.
# (bytes of an earlier line with its "\n", bytes of the last line, the word it grants)
LAST_LINES = [
    (0, 254, "secret"), (0, 255, "secret"), (0, 256, "secret"), (0, 1255, "secret"),
    (255, 255, "secret"), (256, 255, "secret"), (300, 1255, "secret"), (300, 1256, "secret"),
    (0, 255, "secrét"), (0, 254, "secrét"),
]  # fmt: skip


@pytest.mark.parametrize(("earlier", "last", "word"), LAST_LINES)
def test_a_last_line_is_read_as_mosquitto_reads_it(
    tmp_path: Path, earlier: int, last: int, word: str
) -> None:
    rule = f"topic readwrite {word}"
    text = ("#" * (earlier - 1) + "\n" if earlier else "") + "topic readwrite public\n"
    text += rule + " " * (last - len(rule.encode()))
    rules = AccessRules(text)
    (tmp_path / "acl").write_text(text, encoding="utf-8")
    with mosquitto(tmp_path, [f"acl_file {tmp_path / 'acl'}"]) as port:
        client = V5Client(port, "anon", None)
        theirs = {t for t in ("public", word) if client.publish(t) < 0x80}
        client.close()
    ours = {t for t in ("public", word) if rules.may_publish(t, username=None, client_id="anon")}
    assert ours == theirs, (earlier, last, word, theirs)
