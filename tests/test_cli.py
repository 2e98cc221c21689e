"""The command line, in-process through main() and once as a real subprocess."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from topicmatch.cli import _bench, main
from topicmatch.support.commandline import UsageError
from topicmatch.support.extras import EXTRAS


def _run(argv: list[str], stdin: str = "") -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(stdin), stdout=out)
    return code, out.getvalue()


@pytest.fixture
def subs_file(tmp_path: Path) -> Path:
    path = tmp_path / "subs.tsv"
    path.write_text("forex.*\talice\n*.usd\tbob\n\nforex.usd\tcarol\n#\teve\n", encoding="utf-8")
    return path


def test_match_topics_from_arguments(subs_file: Path) -> None:
    code, out = _run(["match", str(subs_file), "forex.usd", "stock", ""])
    assert code == 0
    assert out.splitlines() == ["forex.usd\talice bob carol eve", "stock\teve", "\teve"]


def test_match_topics_from_stdin_as_json(subs_file: Path) -> None:
    code, out = _run(["match", str(subs_file), "--json", "--algorithm", "cstrie"], stdin="forex.eur\nx.usd\n")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        {"topic": "forex.eur", "subscribers": ["alice", "eve"]},
        {"topic": "x.usd", "subscribers": ["bob", "eve"]},
    ]


def test_invalid_topic_is_reported_and_the_rest_continue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subs = tmp_path / "mqtt.tsv"
    subs.write_text("a/+\tx\n", encoding="utf-8")
    code, out = _run(["match", "--dialect", "mqtt", str(subs)], stdin="a/b\na/+\na/c\n")
    assert code == 1
    assert out.splitlines() == ["a/b\tx", "a/c\tx"]
    assert "invalid mqtt topic 'a/+'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a/#/b\tx\n", "subs.tsv:1: invalid mqtt pattern 'a/#/b'"),
        ("a/b\tx\nno-tab-here\n", "subs.tsv:2: expected 2 fields (pattern<TAB>subscriber), found 1"),
        ("a/b\t\n", "subs.tsv:1: the subscriber is empty"),
        ("a/b\tx\ty\n", "subs.tsv:1: expected 2 fields (pattern<TAB>subscriber), found 3"),
        ("a/b \tx\n", "subs.tsv:1: the pattern 'a/b ' starts or ends with whitespace"),
        ("a/b\t x\n", "subs.tsv:1: the subscriber ' x' starts or ends with whitespace"),
    ],
)
def test_bad_subscription_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text(content, encoding="utf-8")
    code, out = _run(["match", "--dialect", "mqtt", str(subs), "a/b"])
    assert code == 2
    assert out == ""
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(["match", "/nonexistent/subs.tsv", "a"])
    assert code == 2
    assert "cannot read /nonexistent/subs.tsv" in capsys.readouterr().err


def test_demo_runs_and_checks_agreement() -> None:
    code, out = _run(["demo", "--messages", "2000", "--seconds", "0.2"])
    assert code == 0
    assert "all algorithms agree" in out
    assert out.count(" ok") == 6


def test_help_on_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["match", "--help"], ["demo", "--help"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
        assert "usage: topicmatch" in capsys.readouterr().out


def test_python_dash_m_entry_point(subs_file: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "topicmatch", "match", str(subs_file), "forex.usd"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "forex.usd\talice bob carol eve\n"


def test_options_anywhere_on_the_line(subs_file: Path) -> None:
    code, out = _run(["match", str(subs_file), "--json", "stock", "--algorithm", "trie", "x.usd"])
    assert code == 0
    assert [json.loads(line)["topic"] for line in out.splitlines()] == ["stock", "x.usd"]
    with pytest.raises(SystemExit) as exited:
        _run(["match", str(subs_file), "stock", "--no-such-option"])
    assert exited.value.code == 2


def test_no_topic_can_forge_a_line_of_output(tmp_path: Path) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("#\tbob\n", encoding="utf-8")
    forged = "a\nforged\tmallory"
    code, out = _run(["match", str(subs), forged, "back\\slash\rcr"])
    assert code == 0
    assert out.splitlines() == ["a\\nforged\\tmallory\tbob", "back\\\\slash\\rcr\tbob"]


def test_match_does_not_offer_inverted_bitmap_and_says_why(
    subs_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["match", "--help"])
    assert exited.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "{naive,optimized_bitmap,trie,cstrie,default}" in help_text
    assert "not inverted_bitmap, which needs every topic before the first lookup" in help_text
    with pytest.raises(SystemExit) as exited:
        _run(["match", "--algorithm", "inverted_bitmap", str(subs_file), "a"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        "topicmatch match: error: argument --algorithm: inverted_bitmap needs every topic before the "
        "first lookup, and match looks them up as they come: use another algorithm (the library's "
        "Matcher takes inverted_bitmap with topics=)"
    )
    assert "Traceback" not in err
    # Every algorithm match offers answers as the default does.
    for algorithm in ("naive", "optimized_bitmap", "trie", "cstrie", "default"):
        assert _run(["match", "--algorithm", algorithm, str(subs_file), "forex.usd", "stock"]) == (
            0,
            "forex.usd\talice bob carol eve\nstock\teve\n",
        )


def test_a_header_line_is_not_a_subscription(tmp_path: Path) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("pattern\tsubscriber\nforex.*\talice\n", encoding="utf-8")
    code, out = _run(["match", str(subs), "pattern", "forex.x"])
    assert code == 0
    assert out.splitlines() == ["pattern\t", "forex.x\talice"]


def test_extras_table_mirrors_pyproject() -> None:
    """topicmatch.support.extras names each extra's import names; pyproject.toml its distributions."""
    import_name = {
        "hdrhistogram": "hdrh",
        "paho-mqtt": "paho",
        "nats-py": "nats",
        "pyzmq": "zmq",
        "stomp-py": "stomp",
        "grpcio": "grpc",
        "grpcio-status": "grpc_status",
        "googleapis-common-protos": "google",
    }
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    for extra, modules in EXTRAS.items():
        requirements = project["project"]["optional-dependencies"][extra]
        names = {req.split(">")[0].split("<")[0].split("=")[0].strip() for req in requirements}
        assert set(modules) == {import_name.get(name, name) for name in names}, extra


def test_an_empty_amqp_pattern_is_the_empty_routing_key(tmp_path: Path) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("\tempty-key\n", encoding="utf-8")
    code, out = _run(["match", str(subs), ""])
    assert code == 0
    assert out.splitlines() == ["\tempty-key"]


def test_the_harness_experiments_name_their_install_command_when_it_is_absent() -> None:
    """Without the latency harness's entry point, ``bench latency`` (and ``commitlog``, ``brokers``)
    still parses and says where the harness is, instead of argparse's 'invalid choice'."""
    parser = argparse.ArgumentParser(prog="topicmatch")
    _bench.add_commands(parser.add_subparsers(dest="command"), plugins=())
    for name in _bench.HARNESS:
        options = parser.parse_args(["bench", name])
        with pytest.raises(UsageError, match=r"pip install \./latency"):
            options.run(options, io.StringIO(), io.StringIO(), io.StringIO())
    options = parser.parse_args(["bench", "throughput", "--quick"])  # this package's own are there
    assert options.quick


def test_a_header_that_lost_a_name_is_refused_naming_the_headers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("pattern\tclient\nforex.*\talice\n", encoding="utf-8")
    code, _ = _run(["match", str(subs), "forex.x"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"topicmatch: {subs}:1: expected a header naming the columns pattern and subscriber"
    )
    assert "pattern,subscriber for CSV, pattern<TAB>subscriber for TSV" in err


def test_every_invalid_pattern_of_a_file_is_listed_up_to_a_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("ok/+\ta\n" + "".join(f"a/#/{i}\tb\n" for i in range(25)), encoding="utf-8")
    code, _ = _run(["match", "--dialect", "mqtt", str(subs), "a/b"])
    assert code == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (
        f"topicmatch: {subs}:2: invalid mqtt pattern 'a/#/0': '#' must be the last level; "
        "25 invalid patterns in all:"
    )
    assert lines[1] == f"  {subs}:3: invalid mqtt pattern 'a/#/1': '#' must be the last level"
    assert len(lines) == 1 + 19 + 1  # the first, 19 more (20 listed), then the count of the rest
    assert lines[-1] == "  ... and 5 more"


def test_patterns_that_look_like_another_dialect_get_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("sensors/+/temp\ta\nsensors/#\tb\n", encoding="utf-8")
    code, out = _run(["match", str(subs), "sensors/x/temp"])
    assert code == 0
    assert out == "sensors/x/temp\t\n"  # under AMQP's rules: '+' and 'sensors/#' are plain words
    assert capsys.readouterr().err == (
        "topicmatch: warning: 2 of 2 patterns look like mqtt patterns, not amqp ones (1 with the word "
        "'+', a wildcard in mqtt and a plain word in amqp, e.g. 'sensors/+/temp'; 1 with separator "
        "'/' and no '.', e.g. 'sensors/#'): pass --dialect mqtt if they are\n"
    )
    code, out = _run(["match", "--dialect", "mqtt", str(subs), "sensors/x/temp"])
    assert out == "sensors/x/temp\ta b\n"
    assert capsys.readouterr().err == ""


def test_a_few_patterns_of_another_dialect_are_enough_for_the_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A NATS file where 2 of 5 patterns end in '>', read as AMQP: the warning names them, and
    every pattern is still subscribed and every topic answered, by AMQP's rules."""
    subs = tmp_path / "subs.tsv"
    subs.write_text("orders.>\ta\nstock.*\tb\nfx.eur\tc\nfx.#\td\nnews.>\te\n", encoding="utf-8")
    code, out = _run(["match", str(subs), "orders.new", "orders.>", "stock.ibm", "fx.eur", "news.>"])
    assert code == 0
    assert out.splitlines() == ["orders.new\t", "orders.>\ta", "stock.ibm\tb", "fx.eur\tc d", "news.>\te"]
    assert capsys.readouterr().err == (
        "topicmatch: warning: 2 of 5 patterns look like nats patterns, not amqp ones (2 with the word "
        "'>', a wildcard in nats and a plain word in amqp, e.g. 'orders.>'): pass --dialect nats "
        "if they are\n"
    )
    # One is enough; MQTT's '+' in an AMQP file as well.
    subs.write_text("orders.*\ta\nstock.#\tb\nsensors.+.temp\tc\n", encoding="utf-8")
    assert _run(["match", str(subs), "stock.x"]) == (0, "stock.x\tb\n")
    assert capsys.readouterr().err == (
        "topicmatch: warning: 1 of 3 patterns looks like an mqtt pattern, not an amqp one (1 with "
        "the word '+', a wildcard in mqtt and a plain word in amqp, e.g. 'sensors.+.temp'): pass "
        "--dialect mqtt if it is\n"
    )
    # Read with the dialect they were written for: no warning, the wildcards work.
    subs.write_text("orders.>\ta\nnews.>\te\n", encoding="utf-8")
    assert _run(["match", "--dialect", "nats", str(subs), "orders.new"]) == (0, "orders.new\ta\n")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("header", ["filter\tclient", "Pattern\tSubscriber", "topic_filter\tclient-id"])
def test_a_tsv_header_of_other_column_names_is_refused_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str
) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text(f"{header}\norders.#\talice\n", encoding="utf-8")
    code, out = _run(["match", str(subs), "orders.new", "filter"])
    assert (code, out) == (2, "")  # nothing answered from a half-read file
    err = capsys.readouterr().err
    assert err == (
        f"topicmatch: {subs}:1: {header.split(chr(9))!r} looks like a header, not a subscription: "
        "name the columns with the first line pattern<TAB>subscriber (other columns are ignored); "
        "to keep this line as a subscription, put that header before it\n"
    )
    # Done as it says, every line is a subscription, the first one too.
    subs.write_text(f"pattern\tsubscriber\n{header}\norders.#\talice\n", encoding="utf-8")
    first = header.split("\t")
    assert _run(["match", str(subs), "orders.new", first[0]]) == (
        0,
        f"orders.new\talice\n{first[0]}\t{first[1]}\n",
    )


def test_match_help_says_how_a_header_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["match", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert (
        "a first line of other column names, such as 'filter<TAB>client' or 'Topic<TAB>Queue', "
        "is refused, as it would be read as a subscription: name the columns pattern<TAB>subscriber"
    ) in help_text
