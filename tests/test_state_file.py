"""Matcher.save and Matcher.load: a round trip gives back every subscription, lookup and
subscriber index on every algorithm and dialect; a file that is not one save wrote whole (another
kind, another version, cut at any byte, any byte changed, a body forged under a valid checksum)
raises StateFileError on one line and gives no matcher; reading a foreign file reads a bounded
number of bytes (counted through a pipe)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topicmatch import ALGORITHMS, ConfigurationError, Matcher, StateFileError

from .strategies import PATTERNS, TOPICS

ALGOS = [a for a in ALGORITHMS if a != "inverted_bitmap"]
#: Subscribers a file holds: JSON's scalars (floats that compare equal to themselves).
SUBSCRIBERS = st.one_of(
    st.text(max_size=4),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)


def _saved(tmp_path: Path, pairs: list[tuple[str, Any]], dialect: str = "mqtt", **options: Any) -> Path:
    matcher: Matcher[Any] = Matcher(dialect=dialect, **options)
    matcher.subscribe_many(pairs)
    path = tmp_path / "subscriptions"
    matcher.save(path)
    return path


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(data=st.data())
def test_a_round_trip_gives_back_every_subscription(
    tmp_path: Path, dialect: str, data: st.DataObject
) -> None:
    pairs = data.draw(st.lists(st.tuples(PATTERNS[dialect](), SUBSCRIBERS), max_size=12))
    saved_by = data.draw(st.sampled_from(ALGOS))
    original: Matcher[Any] = Matcher(saved_by, dialect)
    original.subscribe_many(pairs)
    path = tmp_path / "subscriptions"
    assert original.save(path) == len(original)
    topics = data.draw(st.lists(TOPICS[dialect](), max_size=6))
    for algorithm in ALGOS:
        loaded = Matcher.load(path, algorithm)
        assert (loaded.dialect, loaded.algorithm) == (dialect, algorithm)
        assert loaded.subscriptions() == original.subscriptions()
        assert len(loaded) == len(original)
        for _pattern, subscriber in pairs:
            assert loaded.patterns_of(subscriber) == original.patterns_of(subscriber)
        for topic in topics:
            assert loaded.lookup(topic) == original.lookup(topic)
        # The loaded matcher is a matcher like any: it writes, and unsubscribe_all finds each pair.
        for _pattern, subscriber in pairs:
            loaded.unsubscribe_all(subscriber)
        assert len(loaded) == 0
        assert loaded.subscriptions() == {}


def test_the_dialects_limits_come_back(tmp_path: Path) -> None:
    path = _saved(tmp_path, [("a.*", 1)], "nats", pedantic=True, max_words=7, max_bytes=300)
    loaded = Matcher.load(path, "trie")
    assert (loaded.dialect, dict(loaded.limits)) == ("nats", {"max_bytes": 300, "max_words": 7})
    with pytest.raises(Exception, match="empty tokens"):  # pedantic: refused, as it was
        loaded.lookup("a..b")
    amqp = Matcher.load(_saved(tmp_path, [("a.#", 1)], "amqp", max_hashes=1))
    with pytest.raises(Exception, match="'#' words; the limit is 1"):
        amqp.subscribe("#.a.#", 2)


def test_big_nodes_wildcards_and_long_patterns_come_back(tmp_path: Path) -> None:
    long = "x" * 65_000  # MQTT's patterns go up to 65,535 bytes
    pairs: list[tuple[str, Any]] = [("fleet/+/#", c) for c in range(500)]  # a big node
    pairs += [("$share/g/a/+", "s"), (f"{long}/#", "long"), ("a//b", 0), ("#", "all"), ("+", None)]
    path = _saved(tmp_path, pairs)
    loaded = Matcher.load(path)
    assert loaded.subscriptions() == Matcher(dialect="mqtt").__class__.load(path, "naive").subscriptions()
    assert len(loaded.lookup("fleet/7/gps")) == 500 + 1  # and '#'
    assert loaded.lookup(f"{long}/z") == {"long", "all"}
    assert loaded.lookup("a//b") == {0, "all"}


def test_save_refuses_subscribers_json_would_change_and_writes_nothing(tmp_path: Path) -> None:
    path = _saved(tmp_path, [("a/b", "kept")])
    before = path.read_bytes()
    for subscriber in [("t", 1), frozenset({1}), b"bytes", 1 + 2j]:
        matcher: Matcher[Any] = Matcher(dialect="mqtt")
        matcher.subscribe("a/+", subscriber)
        with pytest.raises(StateFileError, match=f"type {type(subscriber).__name__}") as error:
            matcher.save(path)
        assert "\n" not in str(error.value)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["subscriptions"]  # no temporary file left


def test_an_interrupted_save_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _saved(tmp_path, [("a/b", "kept")])
    before = path.read_bytes()

    def fail(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)  # the rename that makes the new file the file
    matcher: Matcher[str] = Matcher(dialect="mqtt")
    matcher.subscribe("c/#", "new")
    with pytest.raises(OSError, match="disk full"):
        matcher.save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["subscriptions"]


def _refused(path: Path, match: str | None = None) -> str:
    with pytest.raises(StateFileError, match=match) as error:
        Matcher.load(path)
    message = str(error.value)
    assert "\n" not in message, message
    assert message.endswith("nothing was loaded"), message
    return message


def test_a_file_cut_at_any_byte_is_refused(tmp_path: Path) -> None:
    whole = _saved(tmp_path, [("a/+", "c1"), ("a/#", 2), ("b", None)]).read_bytes()
    cut = tmp_path / "cut"
    for size in range(len(whole)):
        cut.write_bytes(whole[:size])
        _refused(cut)
    cut.write_bytes(whole + b" ")
    _refused(cut, "truncated or extended")


def test_a_file_with_any_byte_changed_is_refused(tmp_path: Path) -> None:
    whole = _saved(tmp_path, [("a/+", "c1"), ("a/#", 2), ("b", None)]).read_bytes()
    changed = tmp_path / "changed"
    for at in range(len(whole)):
        for new in {whole[at] ^ 1, ord("0") if whole[at] != ord("0") else ord("1")}:
            changed.write_bytes(whole[:at] + bytes([new]) + whole[at + 1 :])
            _refused(changed)


def test_foreign_files_and_other_versions_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    for content, match in [
        (b"", "does not start with"),
        (b"{}", "does not start with"),
        (b"\x80\x04\x95 pickle", "does not start with"),
        (b"topicmatch-subscriptions 2\n{}\n[0]", "its format version is 2; this topicmatch reads version 1"),
        (b"topicmatch-subscriptions 1\nnot json\n", "header is not JSON"),
        (b"topicmatch-subscriptions 1\n[]\n", "not a JSON object"),
        (b'topicmatch-subscriptions 1\n{"dialect": "mqtt"}\n', "'max_bytes' is missing"),
        # A header that claims a petabyte: refused by the file's size, nothing allocated.
        (
            b'topicmatch-subscriptions 1\n{"dialect":"mqtt","max_bytes":9,"max_words":9,"pedantic":false,'
            b'"max_hashes":null,"patterns":1,"pairs":1,"body_bytes":1000000000000000}\nsha256 '
            + b"0" * 64
            + b"\n[0]",
            "its body is 3 bytes, its header says 1,000,000,000,000,000",
        ),
    ]:
        other.write_bytes(content)
        _refused(other, match)
    _refused(tmp_path / "missing", "cannot be read")
    _refused(tmp_path, "cannot be read")  # a directory


def _forged(tmp_path: Path, body: list[object], dialect: str = "mqtt", **counts: int) -> Path:
    """A file whose checksum and sizes are right for a body save would never write."""
    data = json.dumps(body).encode()
    header = {
        "dialect": dialect,
        "max_bytes": 65535,
        "max_words": 201,
        "pedantic": False,
        "max_hashes": None,
        "patterns": counts.get("patterns", 1),
        "pairs": counts.get("pairs", 1),
        "body_bytes": len(data),
    }
    line = json.dumps(header).encode() + b"\n"
    checksum = b"sha256 " + hashlib.sha256(line + data).hexdigest().encode() + b"\n"
    path = tmp_path / "forged"
    path.write_bytes(b"topicmatch-subscriptions 1\n" + line + checksum + data)
    return path


def test_a_forged_body_is_refused(tmp_path: Path) -> None:
    good = [0, 1, "a", ["a", ["c"]]]
    assert Matcher.load(_forged(tmp_path, good)).subscriptions() == {"a": frozenset({"c"})}
    for body, match in [
        ({"a": 1}, "not the list"),
        ([0, 2, "a", ["a", ["c"]]], "depth 2 after depth 0"),
        ([0, 1, "a", 0, 1, "a", ["a", ["c"]]], "token 'a' twice under one node"),
        ([0, 1, 0, 0, 1, 0, ["+", ["c"]]], "token 0 twice"),
        ([0, 1, 2, ["a", ["c"]]], "token 2 is neither"),
        ([0, 1, True, ["a", ["c"]]], "token True is neither"),
        ([0, True, "a", ["a", ["c"]]], "depth True after depth 0"),
        ([False, 1, "a", ["a", ["c"]]], "patterns False are neither"),
        ([0, 1, "a", ["a", ["c"], "a", ["d"]]], "pattern 'a' twice"),
        ([0, 1, "a", ["a", ["c", "c"]]], "a subscriber twice"),
        ([0, 1, "a", ["a", [["unhashable"]]]], "unhashable"),
        ([0, 1, "a", ["a", []]], "not a pattern and its subscribers"),
        ([0, 1, "a", ["a"]], "neither 0 nor"),
        ([0, 1, "a"], "records of three"),
        ([{}, 1, "a", ["a", ["c"]]], "neither 0 nor"),
    ]:
        _refused(_forged(tmp_path, body), match)  # type: ignore[arg-type]
    _refused(_forged(tmp_path, good, pairs=2), "its header says 1 and 2")
    # A pattern its dialect refuses: the trie takes the file's word for it (load's docstring);
    # an algorithm that parses each pattern refuses the file.
    invalid = _forged(tmp_path, [0, 1, "a", 0, 2, 1, 0, 3, "b", ["a/#/b", ["c"]]])
    with pytest.raises(StateFileError, match="'#' must be the last level"):
        Matcher.load(invalid, "naive")
    _refused(_forged(tmp_path, good, "smtp"), "its dialect")


def test_load_refuses_algorithms_it_cannot_build(tmp_path: Path) -> None:
    path = _saved(tmp_path, [("a", 1)])
    for algorithm in ("inverted_bitmap", "fastest"):
        with pytest.raises(ConfigurationError, match="load builds one of"):
            Matcher.load(path, algorithm)


def test_a_foreign_file_is_read_no_further_than_its_first_lines(tmp_path: Path) -> None:
    """The signature line and the header line are read with bounds: a pipe that never ends
    gives up at most the bounds plus what the pipe buffers before the load refuses it."""
    for start, bound in [(b"", 64), (b"topicmatch-subscriptions 1\n", 64 + 4096)]:
        pipe = tmp_path / "pipe"
        os.mkfifo(pipe)
        written = [0]
        thread = threading.Thread(target=_write_endlessly, args=(pipe, start, written))
        thread.start()
        _refused(pipe)
        thread.join()
        pipe.unlink()
        assert written[0] <= bound + 65536 + 4096, written[0]  # 64 KiB: Linux's pipe buffer


def _write_endlessly(pipe: Path, start: bytes, written: list[int]) -> None:
    """Write ``start``, then 4 KiB chunks into ``pipe`` until its reader closes it (10,000 at
    most), counting the bytes in ``written[0]``."""
    with open(pipe, "wb", buffering=0) as out:
        try:
            written[0] += out.write(start) or 0
            for _ in range(10_000):
                written[0] += out.write(b"x" * 4096) or 0
        except BrokenPipeError:
            pass


@pytest.mark.pure("compiled, TrieIndex.records runs through without letting another thread in")
def test_a_save_while_a_writer_runs_holds_one_instant(tmp_path: Path) -> None:
    """The writer subscribes p0, p1, ... in this order, so the state of any instant holds a
    prefix of them, and so must every file saved meanwhile. After each thousand it waits until
    a save has begun, then writes on while that save walks. ``records`` walks an O(1) snapshot;
    a walk of the live trie misses a pattern written behind it while it takes a later one
    written ahead (this test then fails)."""
    m: Matcher[int] = Matcher(dialect="mqtt")
    patterns = [f"s{i % 61}/d{i}" for i in range(30_000)]
    wanted, started = threading.Event(), threading.Event()

    def writer() -> None:
        for start in range(0, len(patterns), 1_000):
            for pattern in patterns[start : start + 1_000]:
                m.subscribe(pattern, 1)
            wanted.set()
            started.wait(timeout=10)
            started.clear()

    thread = threading.Thread(target=writer)
    thread.start()
    files = []
    for n in range(len(patterns) // 1_000):  # one save per thousand written
        assert wanted.wait(timeout=10)
        wanted.clear()
        started.set()
        path = tmp_path / f"save{n}"
        m.save(path)
        files.append(path)
    thread.join()
    for path in files:
        held = set(Matcher.load(path).patterns())
        assert held == set(patterns[: len(held)]), path.name
