"""The two builds of the core (docs/compiled.md): which one runs, how it is chosen, and that both
refuse every wrong argument of every public method with the same typed error.

``make test`` runs this file on both builds; on the compiled one, the comparison runs the pure
build in a child process (``TOPICMATCH_PURE=1``) and compares what every call did, error class
and message included.
"""

from __future__ import annotations

import atexit
import functools
import importlib.machinery
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import topicmatch
from topicmatch import (
    ALGORITHMS,
    BUILD,
    DIALECTS,
    AccessRules,
    BatchWalk,
    ClientRules,
    Dialect,
    Matcher,
    MatcherSnapshot,
    SharedGroups,
    ShareGroup,
    TopicIndex,
    TopicMatchError,
    capture,
    make_dialect,
)
from topicmatch._build import COMPILED_MODULES
from topicmatch.cli import main

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(topicmatch.__file__).resolve().parent
#: The build installed here: what a process runs unless TOPICMATCH_PURE is set.
INSTALLED = "compiled" if (PACKAGE / "_compiled.json").is_file() else "pure"

#: Values of the wrong type for any argument (a list and a dict are right for some: an iterable of
#: topics, a subscriber that must be hashable is not).
BAD = [None, 5, 1.5, b"a.b", ["a", "b"], {"a": 1}, object()]


def _is_extension(module: str) -> bool:
    origin = sys.modules[f"topicmatch.{module}"].__spec__.origin  # type: ignore[union-attr]
    return str(origin).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def test_the_build_that_runs_is_the_one_reported() -> None:
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["topicmatch"]["compiled"]
    assert all(f"topicmatch.{module}" in sys.modules for module in listed)  # the core imports them all
    if BUILD == "compiled":
        assert sorted(COMPILED_MODULES) == sorted(listed)
        assert all(_is_extension(module) for module in listed)
    else:
        assert BUILD == "pure"
        assert COMPILED_MODULES == ()
        assert not any(_is_extension(module) for module in listed)
    assert not _is_extension("_build")  # it chooses how the others are imported: never compiled


def test_version_says_which_build_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    core = "compiled core (mypyc)" if BUILD == "compiled" else "pure-Python core"
    assert capsys.readouterr().out.strip() == f"topicmatch {topicmatch.__version__} ({core})"


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )


def test_the_variable_runs_the_source_as_it_is() -> None:
    code = (
        "import topicmatch, topicmatch._engine.walk as w; "
        "print(topicmatch.BUILD, w.__spec__.origin.endswith('.py'))"
    )
    run = _python(code, TOPICMATCH_PURE="1")
    assert run.stdout.split() == ["pure", "True"], run.stderr
    run = _python(code, TOPICMATCH_PURE="0")  # 0, like unset, asks for nothing
    assert run.stdout.split() == [INSTALLED, str(INSTALLED == "pure")], run.stderr


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """The package's Python source in a directory of its own (no extension, no record)."""
    ignore = shutil.ignore_patterns("*.so", "*.pyd", "_compiled.json", "__pycache__")
    shutil.copytree(PACKAGE, tmp_path / "topicmatch", ignore=ignore)
    return tmp_path


def test_a_compiled_build_older_than_its_source_is_refused(package_copy: Path) -> None:
    record = {"modules": {"_words": "0" * 64}}  # not the hash of _words.py
    (package_copy / "topicmatch" / "_compiled.json").write_text(json.dumps(record))
    run = _python("import topicmatch", PYTHONPATH=str(package_copy), TOPICMATCH_PURE="")
    assert "ImportError: topicmatch's compiled core is older than its source (_words.py changed" in run.stderr
    assert "TOPICMATCH_PURE=1" in run.stderr
    run = _python(
        "import topicmatch; print(topicmatch.BUILD)", PYTHONPATH=str(package_copy), TOPICMATCH_PURE="1"
    )
    assert run.stdout.strip() == "pure", run.stderr  # the variable runs the source anyway


def test_a_compiled_module_its_build_did_not_record_is_refused(package_copy: Path) -> None:
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (package_copy / "topicmatch" / f"_words{suffix}").write_bytes(b"")  # left by an earlier build
    run = _python("import topicmatch", PYTHONPATH=str(package_copy), TOPICMATCH_PURE="")
    assert "compiled modules its build did not record (_words: left by an earlier build)" in run.stderr


# -- every public method, given the wrong type -------------------------------------------------
class _Value:
    """Where a case puts the wrong value."""


V = _Value()
#: One call: its name, what makes its object (None: the callable is the attribute itself), the
#: method (or the callable), and the arguments, with :data:`V` where the wrong value goes.
Case = tuple[str, Callable[[], object] | None, Any, tuple[Any, ...], dict[str, Any]]


def _put(value: object, template: Any) -> Any:
    """``template`` with ``value`` in place of :data:`V` (inside lists and tuples too)."""
    if template is V:
        return value
    if type(template) in (list, tuple):  # not a NamedTuple such as ShareGroup
        return type(template)(_put(value, item) for item in template)
    return template


@functools.cache
def _saved_file() -> str:
    """A file Matcher.save wrote, for the calls of Matcher.load (one per process)."""
    directory = tempfile.mkdtemp(prefix="topicmatch-builds-")
    atexit.register(shutil.rmtree, directory, True)
    path = os.path.join(directory, "subscriptions")
    saved = Matcher()
    saved.subscribe("a.*", 1)
    saved.save(path)
    return path


def _cases(algorithm: str) -> Iterator[Case]:
    """Every argument of every public method reachable from a matcher of ``algorithm``; the other
    arguments are right."""
    space: dict[str, Any] = {"topics": ["a.b"]} if algorithm == "inverted_bitmap" else {}

    def matcher() -> Matcher:
        m = Matcher(algorithm, **space)
        m.subscribe("a.*", 1)
        return m

    def snapshot() -> MatcherSnapshot:
        return matcher().snapshot()

    yield "Matcher(algorithm)", None, Matcher, (V,), space
    yield "Matcher(dialect)", None, Matcher, (algorithm, V), space
    for option in ("pedantic", "max_bytes", "max_words", "max_hashes", "cache_size", "cache_bytes"):
        yield f"Matcher({option}=)", None, Matcher, (algorithm,), {**space, option: V}
    yield "Matcher(topics=)", None, Matcher, (algorithm,), {"topics": V}
    for name, reader in (("Matcher", matcher), ("MatcherSnapshot", snapshot)):
        yield f"{name}.lookup", reader, "lookup", (V,), {}
        yield f"{name}.lookup_many", reader, "lookup_many", (V,), {}
        yield f"{name}.lookup_many element", reader, "lookup_many", (["a.b", V],), {}
        yield f"{name}.overlapping", reader, "overlapping", (V,), {}
        for query in ("has_interest", "iter_matches", "count", "covered", "covering"):
            yield f"{name}.{query}", reader, query, (V,), {}
    yield "Matcher.subscribe pattern", matcher, "subscribe", (V, 2), {}
    yield "Matcher.subscribe subscriber", matcher, "subscribe", ("a.b", V), {}
    yield "Matcher.unsubscribe pattern", matcher, "unsubscribe", (V, 1), {}
    yield "Matcher.unsubscribe subscriber", matcher, "unsubscribe", ("a.*", V), {}
    for bulk in ("subscribe_many", "unsubscribe_many"):
        yield f"Matcher.{bulk}", matcher, bulk, (V,), {}
        yield f"Matcher.{bulk} element", matcher, bulk, ([("a.b", 3), V],), {}
        yield f"Matcher.{bulk} pattern", matcher, bulk, ([(V, 3)],), {}
        yield f"Matcher.{bulk} subscriber", matcher, bulk, ([("a.b", V)],), {}
    yield "Matcher.unsubscribe_all", matcher, "unsubscribe_all", (V,), {}
    yield "Matcher.patterns_of", matcher, "patterns_of", (V,), {}
    yield "Matcher.extend_topic_space", matcher, "extend_topic_space", (V,), {}
    yield "Matcher.extend_topic_space element", matcher, "extend_topic_space", (["a.c", V],), {}
    yield "Matcher.captures", matcher, "captures", (V,), {}
    yield "Matcher.save", matcher, "save", (V,), {}
    yield "Matcher.load path", None, Matcher.load, (V,), {}
    yield "Matcher.load algorithm", None, Matcher.load, (_saved_file(), V), {}
    for option in ("cache_size", "cache_bytes"):
        yield f"Matcher.load {option}=", None, Matcher.load, (_saved_file(), algorithm), {option: V}
    if algorithm == "default":

        def walk() -> BatchWalk:
            made = matcher().batch_walk()
            assert made is not None
            return made

        root = walk().root
        yield "BatchWalk.advance states", walk, "advance", (V, ["a"]), {}
        yield "BatchWalk.advance state", walk, "advance", ([V], ["a"]), {}
        yield "BatchWalk.advance words", walk, "advance", ([root], V), {}
        yield "BatchWalk.advance word", walk, "advance", ([root], [V]), {}
        yield "BatchWalk.subscribers", walk, "subscribers", (V,), {}
    for dialect in DIALECTS:
        yield f"make_dialect({dialect}) name", None, make_dialect, (V,), {}
        for option in ("max_bytes", "max_words", "pedantic"):
            yield f"make_dialect({dialect}, {option}=)", None, make_dialect, (dialect,), {option: V}
            yield f"TopicIndex({dialect}, {option}=)", None, TopicIndex, (dialect,), {option: V}
        yield f"TopicIndex({dialect}) dialect", None, TopicIndex, (V,), {}
        yield f"make_dialect({dialect}, max_hashes=)", None, make_dialect, (dialect,), {"max_hashes": V}

        def dialect_of(name: str = dialect) -> Dialect:
            return make_dialect(name)

        def parser_of(name: str = dialect) -> Callable[[str], object]:
            return make_dialect(name).topic_parser()

        def index_of(name: str = dialect) -> TopicIndex[str]:
            return TopicIndex(name)

        for method in ("parse_pattern", "parse_topic", "topic_list"):
            yield f"Dialect({dialect}).{method}", dialect_of, method, (V,), {}
        yield f"Dialect({dialect}).topic_parser()", parser_of, "__call__", (V,), {}
        for method in ("overlaps", "covers", "matches"):
            yield f"Dialect({dialect}).{method} p", dialect_of, method, (V, "a"), {}
            yield f"Dialect({dialect}).{method} q", dialect_of, method, ("a", V), {}
        for method, args in (("set", (V, "x")), ("discard", (V,)), ("get", (V,)), ("match", (V,))):
            yield f"TopicIndex({dialect}).{method}", index_of, method, args, {}
        yield f"capture({dialect}) pattern", None, capture, (V, "a", dialect), {}
        yield f"capture({dialect}) topic", None, capture, ("a", V, dialect), {}
    yield "capture dialect", None, capture, ("a", "a", V), {}
    if algorithm == "default":
        yield from _mqtt_cases()


def _mqtt_cases() -> Iterator[Case]:
    """The MQTT broker's helpers: access rules and shared subscriptions."""
    names = {"username": "alice", "client_id": "phone"}

    def rules() -> AccessRules:
        return AccessRules("user alice\ntopic readwrite home/#\npattern read devices/%c/#\n")

    def client() -> ClientRules:
        return rules().client(username="alice", client_id="phone")

    def groups() -> SharedGroups[str]:
        made = SharedGroups[str]()
        made.join("$share/g/jobs/+", "w1")
        return made

    key = ShareGroup("g", "jobs/+")
    yield "AccessRules(text)", None, AccessRules, (V,), {}
    yield "AccessRules(version=)", None, AccessRules, ("",), {"version": V}
    yield "AccessRules.client username", rules, "client", (), {**names, "username": V}
    yield "AccessRules.client client_id", rules, "client", (), {**names, "client_id": V}
    yield "AccessRules.from_file", None, AccessRules.from_file, (V,), {}
    for method in ("may_publish", "may_receive", "may_subscribe"):
        yield f"AccessRules.{method} topic", rules, method, (V,), names
        yield f"AccessRules.{method} username", rules, method, ("home/x",), {**names, "username": V}
        yield f"AccessRules.{method} client_id", rules, method, ("home/x",), {**names, "client_id": V}
        yield f"ClientRules.{method} topic", client, method, (V,), {}
    yield "ShareGroup.of", None, ShareGroup.of, (V,), {}
    yield "SharedGroups(policy)", None, SharedGroups, (V,), {}
    yield "SharedGroups(seed=)", None, SharedGroups, (), {"seed": V}
    yield "SharedGroups.join filter", groups, "join", (V, "w2"), {}
    yield "SharedGroups.join member", groups, "join", ("$share/g/jobs/+", V), {}
    yield "SharedGroups.leave filter", groups, "leave", (V, "w1"), {}
    yield "SharedGroups.leave member", groups, "leave", ("$share/g/jobs/+", V), {}
    yield "SharedGroups.members", groups, "members", (V,), {}
    yield "SharedGroups.choose key", groups, "choose", (V, "jobs/1"), {}
    yield "SharedGroups.choose topic", groups, "choose", (key, V), {}
    yield "SharedGroups.choose publisher", groups, "choose", (key, "jobs/1", V), {}
    yield "SharedGroups.choose away", groups, "choose", (key, "jobs/1", None, V), {}
    yield "SharedGroups.deliver publisher", groups, "deliver", ("jobs/1", [key], V), {}
    yield "SharedGroups.deliver topic", groups, "deliver", (V, [key]), {}
    yield "SharedGroups.deliver subscribers", groups, "deliver", ("jobs/1", V), {}


#: The public methods the calls above cover, by class: a public method added later fails
#: test_every_public_method_is_given_wrong_types until it is given its calls.
COVERED = {
    Matcher: {
        "lookup", "lookup_many", "overlapping", "subscribe", "unsubscribe", "subscribe_many",
        "unsubscribe_many", "unsubscribe_all", "patterns_of", "extend_topic_space",
        "subscriptions", "patterns", "snapshot", "batch_walk", "captures",
        "has_interest", "iter_matches", "count", "covered", "covering", "save", "load",
    },
    MatcherSnapshot: {"lookup", "lookup_many", "overlapping", "subscriptions", "patterns", "batch_walk",
                      "has_interest", "iter_matches", "count", "covered", "covering"},
    Dialect: {"parse_pattern", "parse_topic", "topic_parser", "topic_list", "overlaps", "covers",
              "matches", "plain_topics", "topic_rules"},
    TopicIndex: {"set", "discard", "get", "match"},
    AccessRules: {"client", "from_file", "may_publish", "may_receive", "may_subscribe"},
    ClientRules: {"may_publish", "may_receive", "may_subscribe"},
    SharedGroups: {"join", "leave", "members", "choose", "deliver"},
    ShareGroup: {"of", "count", "index"},
}  # fmt: skip
#: Methods without arguments to get wrong, and Dialect's ``checked_pattern`` (parse_pattern's
#: sibling, which every Matcher call with a pattern goes through).
NO_ARGUMENTS = {
    "subscriptions",
    "patterns",
    "snapshot",
    "batch_walk",
    "plain_topics",
    "topic_rules",
    "checked_pattern",
    "count",  # ShareGroup's, a tuple's: any value is an answer
    "index",
}


def _outcome(case: Case, value: object) -> str:
    """What the call did with ``value``: ``ok``, or the error's class and message (addresses
    made alike, so that two processes compare)."""
    _name, make, method, args, kwargs = case
    call = method if make is None else getattr(make(), method)
    try:
        call(*_put(value, args), **{key: _put(value, item) for key, item in kwargs.items()})
    except Exception as error:
        return re.sub(r" at 0x[0-9a-f]+", " at 0x...", f"{type(error).__name__}: {error}")
    return "ok"


def outcomes() -> dict[str, str]:
    """Every case of :func:`_cases`, on every algorithm, with every value of :data:`BAD`."""
    return {
        f"{algorithm} {case[0]} {type(value).__name__}": _outcome(case, value)
        for algorithm in ALGORITHMS
        for case in _cases(algorithm)
        for value in BAD
    }


def test_every_public_method_is_given_wrong_types() -> None:
    named = " ".join(case[0] for algorithm in ALGORITHMS for case in _cases(algorithm))
    for cls, covered in COVERED.items():
        public = {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}
        methods = {name for name in public if callable(getattr(cls, name))}
        assert methods == covered, (cls.__name__, methods ^ covered)
        assert all(f".{method}" in named for method in covered - NO_ARGUMENTS), cls.__name__
    walk = Matcher().batch_walk()
    assert {name for name in dir(walk) if not name.startswith("_")} == {"advance", "root", "subscribers"}
    assert ".advance" in named
    assert ".subscribers" in named


def test_wrong_types_raise_typed_errors() -> None:
    """Every call either takes the value (a list of topics, a hashable subscriber) or raises a
    TopicMatchError subclass: never a bare Python error, in this build (the pure one too, in
    ``make test``'s second run)."""
    bare = {case: outcome for case, outcome in outcomes().items() if outcome != "ok" and "Error: " in outcome}
    typed_names = {cls.__name__ for cls in _subclasses(TopicMatchError)}
    bare = {case: outcome for case, outcome in bare.items() if outcome.split(":")[0] not in typed_names}
    assert not bare, list(bare.items())[:10]


def _subclasses(cls: type[BaseException]) -> Iterator[type[BaseException]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _subclasses(sub)


@pytest.mark.skipif(INSTALLED != "compiled", reason="no compiled build is installed here: one build only")
def test_both_builds_raise_the_same_errors() -> None:
    """The same calls on the other build, in a child process: the same outcome for every one,
    the class and the message of every error included."""
    code = "import json; from tests.test_builds import outcomes; print(json.dumps(outcomes()))"
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        cwd=ROOT,
        env={**os.environ, "TOPICMATCH_PURE": "" if BUILD == "pure" else "1"},
    )
    other = json.loads(run.stdout)
    here = outcomes()
    assert other.keys() == here.keys()
    differ = {case: (here[case], other[case]) for case in here if here[case] != other[case]}
    assert not differ, list(differ.items())[:10]
