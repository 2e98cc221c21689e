"""``topicmatch.bench.alone``: a contender built and called in a process of its own."""

from __future__ import annotations

import os
from typing import Any

import pytest

from topicmatch import Matcher
from topicmatch.bench.alone import Alone, AloneError


def _matcher() -> tuple[Matcher[str], dict[str, Any]]:
    m: Matcher[str] = Matcher("trie", "amqp")
    m.subscribe("a.*", "x")
    return m, {"pid": os.getpid()}


def _lookup(m: Matcher[str], topic: str) -> tuple[list[str], int, int]:
    return sorted(m.lookup(topic)), len(m), os.getpid()


def _subscribe(m: Matcher[str], pattern: str, subscriber: str) -> None:
    m.subscribe(pattern, subscriber)


def _exit(m: Matcher[str]) -> None:
    os._exit(3)


def test_the_contender_lives_and_answers_in_another_process() -> None:
    with Alone(_matcher) as alone:
        child = alone.built["pid"]
        assert child != os.getpid()
        alone.call(_subscribe, "a.b", "y")  # the child's matcher keeps its state between calls
        assert alone.call(_lookup, "a.b") == (["x", "y"], 2, child)
        process = alone._process
    assert not process.is_alive()
    assert process.exitcode == 0


def test_an_error_in_the_child_is_raised_in_the_parent_with_its_traceback() -> None:
    with Alone(_matcher) as alone, pytest.raises(AloneError, match="InvalidPatternError"):
        alone.call(_subscribe, "a" * 300, "y")  # over AMQP's 255 bytes


def test_a_child_that_dies_is_a_clear_error() -> None:
    alone = Alone(_matcher)
    with pytest.raises(AloneError, match="died \\(exit code 3\\)"):
        alone.call(_exit)
    alone.close()


def test_a_build_that_fails_is_raised_at_construction() -> None:
    def broken() -> tuple[Any, Any]:  # a closure: with fork it is inherited, never pickled
        raise ValueError("no such table")

    with pytest.raises(AloneError, match="ValueError: no such table"):
        Alone(broken)
