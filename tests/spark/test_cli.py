"""``topicmatch generate`` and ``topicmatch route`` (batch), in-process on the shared session."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from topicmatch.cli import main
from topicmatch.spark import Subscriptions, _session, commands
from topicmatch.spark._plan import SHARD_FROM, SHARD_PAIRS, SPLIT_FROM

from .helpers import expected_deliveries, pairs_of

pytestmark = pytest.mark.spark


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, stdout=out)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-data")
    code, out = run(
        [
            "generate",
            "--messages",
            "4000",
            "--subscriptions",
            "300",
            "--out",
            str(path),
            "--invalid-fraction",
            "0.01",
        ]
    )
    assert code == 0
    assert "wrote 4,000 messages in 1 file to" in out
    return path


def _route(data: Path, out: Path, *extra: str) -> tuple[int, str]:
    return run(
        [
            "route",
            "--messages",
            str(data / "messages"),
            "--subscriptions",
            str(data / "subscriptions.parquet"),
            "--out",
            str(out),
            "--quiet",
            *extra,
        ]
    )


def test_route_writes_deliveries_quarantine_and_summary(
    spark: SparkSession, data: Path, tmp_path: Path
) -> None:
    code, out = _route(data, tmp_path / "r")
    assert code == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert out.startswith(f"routed 4,000 messages -> {summary['deliveries']:,} deliveries")
    assert f"output: {tmp_path / 'r' / 'deliveries'} (parquet)" in out

    table = Subscriptions.read(data / "subscriptions.parquet")
    rows = [(r["offset"], r["topic"]) for r in spark.read.parquet(str(data / "messages")).collect()]
    expected, invalid = expected_deliveries(table, rows)
    deliveries = spark.read.parquet(str(tmp_path / "r" / "deliveries"))
    assert sorted(pairs_of(deliveries)) == sorted(expected)
    matched = {offset for offset, _ in expected}
    assert summary["messages"] == 4000
    assert summary["deliveries"] == len(expected)
    assert summary["invalid"] == len(invalid) > 0
    assert summary["quarantine_reasons"] == {"invalid_topic": len(invalid)}  # generate's invalid topics
    assert f"quarantined        {len(invalid):,} messages: {len(invalid):,} invalid topics -> " in out
    assert summary["unmatched"] == 4000 - len(matched) - len(invalid)
    quarantined = spark.read.parquet(summary["output"]["quarantine"])
    assert {r["offset"] for r in quarantined.collect()} == invalid
    volume = {r["subscriber"]: r["count"] for r in deliveries.groupBy("subscriber").count().collect()}
    top = summary["top_subscribers"]
    assert len(top) == 10
    assert all(volume[t["subscriber"]] == t["deliveries"] for t in top)
    assert top[0]["deliveries"] == max(volume.values())
    assert summary["subscriptions"]["version"] == table.version


def test_output_formats_partitions_and_filters(spark: SparkSession, data: Path, tmp_path: Path) -> None:
    assert _route(data, tmp_path / "p")[0] == 0
    full = json.loads((tmp_path / "p" / "summary.json").read_text())
    code, _ = _route(data, tmp_path / "j", "--format", "json", "--partition-by", "subscriber")
    assert code == 0
    assert any(p.name.startswith("subscriber=sub-") for p in (tmp_path / "j" / "deliveries").iterdir())
    assert spark.read.json(str(tmp_path / "j" / "deliveries")).count() == full["deliveries"]
    code, _ = _route(data, tmp_path / "c", "--format", "csv", "--from-offset", "3000")
    assert code == 0
    csv = spark.read.option("header", "true").csv(str(tmp_path / "c" / "deliveries"))
    assert csv.where("CAST(offset AS BIGINT) < 3000").count() == 0
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["messages"] == 1000
    code, out = _route(data, tmp_path / "s", "--since", "2024-01-01T00:00:30Z")  # one message per 10 ms
    assert code == 0
    assert out.startswith("routed 1,000 messages")


def test_the_nested_layout(spark: SparkSession, data: Path, tmp_path: Path) -> None:
    code, out = _route(data, tmp_path / "n", "--layout", "nested", "--format", "json")
    assert code == 0
    summary = json.loads((tmp_path / "n" / "summary.json").read_text())
    table = Subscriptions.read(data / "subscriptions.parquet")
    rows = [(r["offset"], r["topic"]) for r in spark.read.parquet(str(data / "messages")).collect()]
    expected, _ = expected_deliveries(table, rows)
    nested = spark.read.json(str(tmp_path / "n" / "deliveries"))
    got = {r["offset"]: r["subscribers"] for r in nested.collect()}
    assert nested.count() == len(got) == len({offset for offset, _ in expected})
    said = f"output: {tmp_path / 'n' / 'deliveries'} (json, nested: {len(got):,} rows, one per message"
    assert said in out  # the summary's row count is the output's
    assert sum(map(len, got.values())) == summary["deliveries"] == len(expected)
    assert {(offset, s) for offset, subscribers in got.items() for s in subscribers} == expected
    assert all(subscribers == sorted(subscribers) for subscribers in got.values())
    assert summary["output"]["layout"] == "nested"


def test_the_split_plan_has_the_matchers_summary(spark: SparkSession, data: Path, tmp_path: Path) -> None:
    """``--plan split``: the same figures and top subscribers as ``--plan matcher`` (the join's
    deliveries counted in the summary too), in both layouts, and the plan said."""
    base = pq.read_table(data / "subscriptions.parquet")
    topics = pq.read_table(data / "messages").column("topic").to_pylist()[:600]
    devices = [(t, f"device-{i % 40}") for i, t in enumerate(topics) if t and len(t) < 60 and " " not in t]
    subs = pa.table(
        {
            "pattern": base.column("pattern").to_pylist() + [p for p, _ in devices],
            "subscriber": base.column("subscriber").to_pylist() + [s for _, s in devices],
        }
    )
    pq.write_table(subs, tmp_path / "subs.parquet")
    summaries = {}
    runs = (("matcher", "exploded"), ("split", "exploded"), ("split", "nested"), ("shard", "exploded"))
    for plan, layout in runs:
        out = tmp_path / f"{plan}-{layout}"
        argv = [
            "route",
            "--messages",
            str(data / "messages"),
            "--subscriptions",
            str(tmp_path / "subs.parquet"),
        ]
        code, text = run(
            [*argv, "--out", str(out), "--quiet", "--plan", plan, "--layout", layout, "--top", "50"]
        )
        assert code == 0
        summaries[plan, layout] = json.loads((out / "summary.json").read_text())
        if plan == "split":
            joined = summaries[plan, layout]["subscriptions"]["joined_literal"]
            assert joined > 300
            assert f"plan               split: {joined:,} literal subscriptions joined on the topic" in text
        if plan == "shard":
            facts = summaries[plan, layout]["subscriptions"]
            assert facts["shards"] == 2
            assert 0 < facts["in_every_shard"] < facts["largest_shard"] < facts["matched_in_workers"]
            assert (
                f"plan shard: {facts['joined_literal']:,} literal subscriptions joined on the "
                f"topic, {facts['matched_in_workers']:,} matched in the workers in 2 shards by first word "
                f"(largest shard {facts['largest_shard']:,}, including {facts['in_every_shard']:,} in every "
                "shard: those starting with a wildcard)"
            ) in " ".join(text.split())
    figures = ("messages", "deliveries", "unmatched", "invalid", "top_subscribers")
    expected = {k: summaries["matcher", "exploded"][k] for k in figures}
    assert any(t["subscriber"].startswith("device-") for t in expected["top_subscribers"])
    for key in runs[1:]:
        assert {k: summaries[key][k] for k in figures} == expected, key


def test_messages_as_json_and_csv(spark: SparkSession, tmp_path: Path) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("a.*\tx\n#\ty\n", encoding="utf-8")
    (tmp_path / "m.jsonl").write_text('{"offset": 1, "topic": "a.b"}\n{"offset": 2, "topic": "c"}\n')
    (tmp_path / "m.csv").write_text("offset,topic\n1,a.b\n2,c\n")
    for name in ("m.jsonl", "m.csv"):
        code, out = run(
            [
                "route",
                "--messages",
                str(tmp_path / name),
                "--subscriptions",
                str(subs),
                "--out",
                str(tmp_path / f"o-{name}"),
                "--quiet",
            ]
        )
        assert code == 0, name
        assert out.startswith("routed 2 messages -> 3 deliveries")


def test_one_log_in_every_format_gives_the_same_columns(
    spark: SparkSession, data: Path, tmp_path: Path
) -> None:
    """JSON came out with its columns sorted by name and its timestamps as strings, CSV with
    ``int`` offsets: the same log now gives the deliveries and the quarantine of its Parquet
    form, the columns in the file's order and of the same types, and the same rows."""
    log = pq.read_table(data / "messages").slice(0, 600)
    assert log.column_names == ["offset", "timestamp", "topic", "payload"]  # not sorted by name
    rows = log.to_pylist()
    stamp = "%Y-%m-%dT%H:%M:%S.%fZ"
    lines = [{**r, "timestamp": r["timestamp"].strftime(stamp)} for r in rows]
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    csv = ["offset,timestamp,topic,payload", *(",".join(str(v) for v in r.values()) for r in lines)]
    (tmp_path / "m.csv").write_text("\n".join(csv) + "\n", encoding="utf-8")
    pq.write_table(log, tmp_path / "m.parquet")
    shapes = {}
    for name in ("m.parquet", "m.jsonl", "m.csv"):
        out = tmp_path / f"o-{name}"
        argv = [
            "route",
            "--messages",
            str(tmp_path / name),
            "--subscriptions",
            str(data / "subscriptions.parquet"),
        ]
        code, _ = run([*argv, "--out", str(out), "--quiet"])
        assert code == 0, name
        deliveries = spark.read.parquet(str(out / "deliveries"))
        quarantined = spark.read.parquet(str(out / "quarantine"))
        shapes[name] = (
            pq.read_table(out / "deliveries").schema,  # as written: nullable flags included
            quarantined.dtypes,
            sorted(tuple(r) for r in deliveries.collect()),
            sorted(tuple(r) for r in quarantined.collect()),
        )
    written = shapes["m.parquet"][0]
    assert written.names == ["offset", "timestamp", "topic", "payload", "subscriber"]
    assert [str(written.field(n).type) for n in ("offset", "topic", "subscriber")] == [
        "int64",
        "string",
        "string",
    ]
    assert pa.types.is_timestamp(written.field("timestamp").type)
    assert len(shapes["m.parquet"][2]) > 600
    assert shapes["m.parquet"][3]  # some quarantined
    assert shapes["m.jsonl"] == shapes["m.parquet"]
    assert shapes["m.csv"] == shapes["m.parquet"]


def test_a_malformed_json_line_is_quarantined_as_such(spark: SparkSession, tmp_path: Path) -> None:
    """Spark reads a JSON line it cannot parse as a row of nulls plus its internal
    `_corrupt_record` column: it was quarantined as "the topic is null" and the deliveries grew
    an all-null `_corrupt_record` column. The reason says what is wrong; no internal column."""
    subs = tmp_path / "subs.tsv"
    subs.write_text("a.*\tx\n", encoding="utf-8")
    clean, broken = tmp_path / "clean.jsonl", tmp_path / "broken.jsonl"
    clean.write_text('{"offset": 1, "topic": "a.b"}\n{"offset": 2, "topic": "a.c"}\n')
    broken.write_text('{"offset": 1, "topic": "a.b"}\n{"offset": 2, "topic": "a.c"\n{"offset": 3}\n')
    columns = {}
    for log in (clean, broken):
        out = tmp_path / f"o-{log.stem}"
        code, text = run(
            ["route", "--messages", str(log), "--subscriptions", str(subs), "--out", str(out), "--quiet"]
        )
        assert code == 0
        deliveries = spark.read.parquet(str(out / "deliveries"))
        columns[log.stem] = deliveries.columns
        assert "_corrupt_record" not in deliveries.columns
    assert columns["broken"] == columns["clean"]
    quarantined = spark.read.parquet(str(tmp_path / "o-broken" / "quarantine"))
    assert "_corrupt_record" not in quarantined.columns
    assert sorted(row["reason"] for row in quarantined.collect()) == [
        'not valid JSON: {"offset": 2, "topic": "a.c"',
        "the topic is null",
    ]
    # The summary names each reason with its count (not "invalid or null topic, too big").
    assert "quarantined        2 messages: 1 null topic, 1 not valid JSON -> " in text
    summary = json.loads((tmp_path / "o-broken" / "summary.json").read_text())
    assert summary["quarantine_reasons"] == {"null_topic": 1, "not_json": 1}


def _err(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    code, out = run(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("topicmatch:")]
    assert len(lines) == 1, err
    return lines[0]


def test_bad_input_gets_one_clear_line(
    spark: SparkSession, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subs, msgs = str(data / "subscriptions.parquet"), str(data / "messages")
    base = ["route", "--quiet", "--subscriptions", subs]
    line = _err(capsys, [*base, "--messages", str(tmp_path / "nope"), "--out", str(tmp_path / "o1")])
    assert line == f"topicmatch: cannot read messages {tmp_path / 'nope'}: no such file or directory"
    line = _err(
        capsys, [*base, "--messages", msgs, "--out", str(tmp_path / "o2"), "--topic-column", "subject"]
    )
    assert line.startswith(
        "topicmatch: the messages have no column 'subject' (columns: offset, timestamp, topic"
    )
    bad_subs = tmp_path / "bad.tsv"
    bad_subs.write_text("a.*\tx\nb.#\ty\n\n\tz\n", encoding="utf-8")
    line = _err(
        capsys,
        [
            "route",
            "--subscriptions",
            str(bad_subs),
            "--messages",
            msgs,
            "--out",
            str(tmp_path / "o3"),
            "--dialect",
            "nats",
        ],
    )
    assert line == f"topicmatch: {bad_subs}:4: invalid nats pattern '': a subject must not be empty"
    line = _err(capsys, [*base, "--messages", msgs, "--out", str(tmp_path / "o4"), "--stream"])
    assert "--stream needs --checkpoint" in line
    # A schema mismatch between files is only found when Spark reads them.
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pq.write_table(pa.table({"offset": [1], "topic": ["a.b"]}), mixed / "a.parquet")
    pq.write_table(pa.table({"offset": ["x"], "topic": ["a.c"]}), mixed / "b.parquet")
    line = _err(capsys, [*base, "--messages", str(mixed), "--out", str(tmp_path / "o5")])
    assert line.startswith("topicmatch: routing failed: ")
    binary = tmp_path / "binary"
    binary.mkdir()
    pq.write_table(
        pa.table({"topic": ["a"], "payload": pa.array([b"\x00"], pa.binary())}), binary / "a.parquet"
    )
    line = _err(capsys, [*base, "--messages", str(binary), "--out", str(tmp_path / "o6"), "--format", "csv"])
    assert line == "topicmatch: CSV cannot hold the column 'payload' (binary); use --format parquet or json"
    assert _route(data, tmp_path / "o7")[0] == 0
    line = _err(capsys, [*base, "--messages", msgs, "--out", str(tmp_path / "o7")])
    assert line.endswith("already exists; pass --overwrite to replace it")
    assert _route(data, tmp_path / "o7", "--overwrite")[0] == 0


def test_skip_invalid_patterns(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subs = tmp_path / "subs.tsv"
    subs.write_text("orders/#\tx\nsensors/#/temp\ty\n", encoding="utf-8")
    argv = [
        "route",
        "--dialect",
        "mqtt",
        "--messages",
        str(data / "messages"),
        "--subscriptions",
        str(subs),
        "--quiet",
    ]
    code, _ = run([*argv, "--out", str(tmp_path / "o"), "--skip-invalid-patterns"])
    assert code == 0
    assert f"skipped {subs}:2: 'sensors/#/temp': '#' must be the last level" in capsys.readouterr().err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["subscriptions"]["skipped"][0]["where"] == f"{subs}:2"


def test_help_on_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["generate", "--help"], ["route", "--help"], ["bench", "pipeline", "--help"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith("usage: topicmatch")
    route_help = " ".join(run_help(capsys, "route").split())
    assert "--checkpoint DIR" in route_help
    # the help says the real thresholds
    assert f"split from {SPLIT_FROM:,} such subscriptions on" in route_help
    assert f"shard from {SHARD_FROM:,} left for the workers, in shards of about {SHARD_PAIRS:,}" in route_help


def run_help(capsys: pytest.CaptureFixture[str], command: str) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return capsys.readouterr().out


def test_generator_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _err(
        capsys,
        [
            "generate",
            "--messages",
            "10",
            "--subscriptions",
            "1",
            "--out",
            str(tmp_path),
            "--payload-bytes",
            "100000000",
        ],
    )
    assert line == "topicmatch: --payload-bytes must be between 0 and 65,536, not 100,000,000"


def test_only_what_topicmatch_wrote_is_replaced(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --overwrite no output is replaced (a summary or quarantine left alone counts); with
    it, a path holding something the tool did not write is refused, and nothing is deleted."""
    base = [
        "route",
        "--messages",
        str(data / "messages"),
        "--subscriptions",
        str(data / "subscriptions.parquet"),
    ]
    out = tmp_path / "o"
    out.mkdir()
    (out / "summary.json").write_text('{"mode": "batch"}\n')
    line = _err(capsys, [*base, "--out", str(out)])
    assert line == f"topicmatch: {out}/summary.json already exists; pass --overwrite to replace it"
    assert (out / "summary.json").exists()
    (out / "quarantine").mkdir()
    (out / "quarantine" / "notes.txt").write_text("mine")
    line = _err(capsys, [*base, "--out", str(out), "--overwrite"])
    assert line.startswith(f"topicmatch: {out}/quarantine/notes.txt was not written by topicmatch")
    assert (out / "quarantine" / "notes.txt").read_text() == "mine"
    assert (out / "summary.json").exists()  # checked before anything was deleted
    (out / "quarantine" / "notes.txt").unlink()
    assert _route(data, out, "--overwrite")[0] == 0
    assert _route(data, out, "--overwrite")[0] == 0  # its own output it replaces


def test_the_log_settings_file_is_private_and_never_a_planted_one(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    planted = Path(tempfile.gettempdir()) / f"topicmatch-log4j2-{os.getuid()}.properties"
    made = not planted.exists() and not planted.is_symlink()
    if made:  # the name the old code used: a link another user could have put there
        planted.symlink_to(victim)
    try:
        path = Path(_session._log_config())
        assert path != planted
        assert path == Path(_session._log_config())  # once per process
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text() == _session._LOG4J2
        assert victim.read_text() == "precious"
    finally:
        if made:
            planted.unlink()


class _Builder:
    """SparkSession.builder's chain, recording the settings instead of starting a JVM."""

    def __init__(self) -> None:
        self.settings: dict[str, str] = {}

    def appName(self, _name: str) -> _Builder:
        return self

    def master(self, master: str) -> _Builder:
        self.settings["master"] = master
        return self

    def config(self, key: str, value: str) -> _Builder:
        self.settings[key] = value
        return self

    def getOrCreate(self) -> dict[str, str]:
        return self.settings


@pytest.mark.parametrize(("master", "split"), [(None, True), ("local[2]", True), ("spark://h:7077", False)])
def test_local_jobs_get_several_tasks_per_core(
    monkeypatch: pytest.MonkeyPatch, master: str | None, split: bool
) -> None:
    """The progress line counts finished tasks: with one task per core it stood at 0 until the
    end of `make demo`. Local sessions ask for four file partitions per core, at least 16; a
    cluster's parallelism is left to Spark."""
    builder = _Builder()
    fake = type("FakeSession", (), {"builder": builder, "getActiveSession": staticmethod(lambda: None)})
    monkeypatch.setattr(_session, "SparkSession", fake)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    settings: dict[str, str] = _session.session(master)  # type: ignore[assignment]
    expected = str(max(16, 4 * (os.cpu_count() or 1))) if split else None
    assert settings.get("spark.sql.files.minPartitionNum") == expected
    assert (
        _session.session(master, {"spark.sql.files.minPartitionNum": "3"})[  # type: ignore[index]
            "spark.sql.files.minPartitionNum"
        ]
        == "3"
    )  # --conf wins


def test_what_can_fail_before_spark_starts_fails_at_once(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing message path, an existing output, no Java: one line, before any JVM (these
    took 19-34 s when Spark found them). Timed by counting: the session is never asked for."""

    def no_session(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(commands, "session", no_session)
    subs = str(data / "subscriptions.parquet")
    base = ["route", "--subscriptions", subs]
    line = _err(capsys, [*base, "--messages", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert line == f"topicmatch: cannot read messages {tmp_path / 'missing'}: no such file or directory"
    (tmp_path / "o" / "deliveries").mkdir(parents=True)
    line = _err(capsys, [*base, "--messages", str(data / "messages"), "--out", str(tmp_path / "o")])
    assert line == f"topicmatch: {tmp_path / 'o'}/deliveries already exists; pass --overwrite to replace it"
    line = _err(
        capsys,
        [
            *base,
            "--messages",
            str(data / "messages"),
            "--stream",
            "--checkpoint",
            str(tmp_path / "c"),
            "--out",
            str(tmp_path / "q"),
            "--plan",
            "split",
        ],
    )
    assert line == "topicmatch: --plan split applies to batch jobs only; a stream matches in the workers"
    refusals = {
        "--format csv": "--layout nested writes an array column, which CSV cannot hold: "
        "use --format parquet or json",
        "--partition-by subscriber": "--partition-by subscriber needs --layout exploded "
        "(nested rows hold many subscribers)",
    }
    for wrong, why in refusals.items():
        options = ["--messages", str(data / "messages"), "--out", str(tmp_path / "n"), "--layout", "nested"]
        assert _err(capsys, [*base, *options, *wrong.split()]) == f"topicmatch: {why}"
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    line = _err(capsys, [*base, "--messages", str(data / "messages"), "--out", str(tmp_path / "p")])
    assert line.startswith("topicmatch: Spark needs Java 17")


def test_csv_topics_are_text_and_an_empty_one_is_the_empty_key(spark: SparkSession, tmp_path: Path) -> None:
    """``1.5`` is a valid AMQP key, not a number; an empty CSV field is the empty routing key
    (zero words), which '#' matches: neither is quarantined."""
    subs = tmp_path / "subs.tsv"
    subs.write_text("1.*\tx\n#\tall\n", encoding="utf-8")
    (tmp_path / "m.csv").write_text("offset,topic\n1,1.5\n2,\n3,01.50\n")
    out = tmp_path / "o"
    code, text = run(
        [
            "route",
            "--messages",
            str(tmp_path / "m.csv"),
            "--subscriptions",
            str(subs),
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0, text
    got = sorted(pairs_of(spark.read.parquet(str(out / "deliveries"))))
    assert got == [(1, "all"), (1, "x"), (2, "all"), (3, "all")]
    assert not (out / "quarantine").exists()


def test_a_quiet_hour_routes_zero_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty log (an empty file, a directory of none, or generate --messages 0) routes no
    message and says so, instead of failing on a schema Spark cannot infer; a warning names the
    empty input, and the empty output has the columns of a message log, payload included."""
    subs = tmp_path / "subs.tsv"
    subs.write_text("#\tall\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    (tmp_path / "m.jsonl").write_text("")
    assert run(["generate", "--messages", "0", "--subscriptions", "5", "--out", str(tmp_path / "g")])[0] == 0
    for name, messages in (("dir", "empty"), ("json", "m.jsonl"), ("generated", "g/messages")):
        argv = ["route", "--messages", str(tmp_path / messages), "--subscriptions", str(subs)]
        capsys.readouterr()
        code, text = run([*argv, "--out", str(tmp_path / f"o-{name}"), "--quiet"])
        assert code == 0, (name, text)
        assert text.startswith("routed 0 messages -> 0 deliveries"), (name, text)
        assert "0 msg/s" not in text, text
        warning = f"topicmatch: warning: {tmp_path / messages} holds no message"
        assert warning in capsys.readouterr().err, name
        written = next((tmp_path / f"o-{name}" / "deliveries").glob("*.parquet"))
        assert pq.read_schema(written).names == ["offset", "timestamp", "topic", "payload", "subscriber"]
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    argv = ["route", "--messages", str(tmp_path / "empty"), "--subscriptions", str(empty)]
    assert run([*argv, "--out", str(tmp_path / "o-nosubs"), "--quiet"])[0] == 0
    assert f"{empty} holds no subscription: every message will be unmatched" in capsys.readouterr().err


def test_patterns_of_another_dialect_get_a_warning_naming_dialect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MQTT filters routed under the default AMQP rules would quietly match other topics."""
    subs = tmp_path / "subs.csv"
    subs.write_text("pattern,subscriber\nsensors/+/temp,a\nsensors/#,b\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    argv = ["route", "--messages", str(tmp_path / "empty"), "--subscriptions", str(subs), "--quiet"]
    capsys.readouterr()
    assert run([*argv, "--out", str(tmp_path / "o1")])[0] == 0
    assert "2 of 2 patterns look like mqtt patterns" in capsys.readouterr().err
    assert run([*argv, "--out", str(tmp_path / "o2"), "--dialect", "mqtt"])[0] == 0
    assert "look like" not in capsys.readouterr().err


def test_a_csv_file_without_the_header_is_refused_naming_the_headers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subs = tmp_path / "subs.csv"
    subs.write_text("filter,client\nsensors/+/temp,a\n", encoding="utf-8")
    argv = ["route", "--messages", str(tmp_path), "--subscriptions", str(subs), "--out", str(tmp_path / "o")]
    line = _err(capsys, argv)
    assert line.startswith(
        f"topicmatch: {subs}:1: expected a header naming the columns pattern and subscriber"
    )
    assert "pattern,subscriber for CSV, pattern<TAB>subscriber for TSV" in line


def test_the_one_line_error_is_the_last_thing_on_stderr(data: Path, tmp_path: Path) -> None:
    """A truncated Parquet file fails the job inside the JVM: its log lines must not follow the
    command's own one-line error (a real process, for the JVM's own stderr)."""
    broken = tmp_path / "broken"
    broken.mkdir()
    whole = sorted((data / "messages").glob("*.parquet"))[0].read_bytes()
    (broken / "part-00000.parquet").write_bytes(whole[: len(whole) // 2])
    argv = ["route", "--messages", str(broken), "--subscriptions", str(data / "subscriptions.parquet")]
    done = subprocess.run(
        [sys.executable, "-m", "topicmatch", *argv, "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("topicmatch: "), done.stderr
    assert not [line for line in lines if " ERROR " in line], done.stderr
    # Nor anything of Spark's start: the JDK's incubator-module line, Spark's log-level lines.
    assert not [line for line in lines if "incubator" in line or "log level" in line], done.stderr
