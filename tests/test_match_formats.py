"""``topicmatch match`` reads a subscription file as ``route`` does: its format from its name.

It read TSV only, whatever the name: a CSV file's header became a subscription, and the
subscriptions.parquet that ``generate`` writes was refused as "not UTF-8 text". The text formats
need nothing beyond the standard library; Parquet needs the spark extra (pyarrow), and Spark
itself is not started.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from topicmatch.cli import main

PAIRS = [("forex.*", "alice"), ("*.usd", "bob"), ("forex.usd", "carol"), ("#", "eve")]
EXPECTED = ["forex.usd\talice bob carol eve", "stock\teve"]


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(""), stdout=out)
    return code, out.getvalue()


def _err(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    code, out = _run(argv)
    err = capsys.readouterr().err
    assert (code, out) == (2, ""), err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err.strip()


def _text_files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "s.tsv": "".join(f"{p}\t{s}\n" for p, s in PAIRS),
        "s.csv": "pattern,subscriber\n" + "".join(f"{p},{s}\n" for p, s in PAIRS),
        "s.jsonl": "".join(json.dumps({"pattern": p, "subscriber": s}) + "\n" for p, s in PAIRS),
        "subs": "".join(f"{p}\t{s}\n" for p, s in PAIRS),  # no ending: TSV
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return {name: tmp_path / name for name in files}


def test_match_reads_every_text_format_without_the_spark_extra(tmp_path: Path) -> None:
    """Each format in a fresh interpreter where pyarrow, numpy and pyspark cannot be imported."""
    for name, path in _text_files(tmp_path).items():
        script = (
            "import sys\n"
            "for name in ('pyarrow', 'numpy', 'pyspark', 'pandas'):\n"
            "    sys.modules[name] = None  # importing it raises ImportError\n"
            "from topicmatch.cli import main\n"
            f"sys.exit(main(['match', {str(path)!r}, 'forex.usd', 'stock']))\n"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
        assert (done.returncode, done.stdout.splitlines(), done.stderr) == (0, EXPECTED, ""), name


def test_match_reads_generates_parquet(tmp_path: Path) -> None:
    """The file ``generate`` writes: columns pattern and subscriber (refused before: not UTF-8)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "subscriptions.parquet"
    pq.write_table(pa.table({"pattern": [p for p, _ in PAIRS], "subscriber": [s for _, s in PAIRS]}), path)
    assert _run(["match", str(path), "forex.usd", "stock"]) == (0, "\n".join(EXPECTED) + "\n")


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ({"pattern": ["a/#/b"], "subscriber": ["x"]}, "s.parquet: row 1: invalid mqtt pattern 'a/#/b'"),
        ({"pattern": ["a/b", None], "subscriber": ["x", "y"]}, "s.parquet: row 2: the pattern is null"),
        (
            {"pattern": ["a/b"], "client": ["x"]},
            "s.parquet has no column 'subscriber' (columns: pattern, client)",
        ),
    ],
)
def test_bad_parquet_subscriptions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: dict[str, list[str | None]], message: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table(rows), path)
    line = _err(capsys, ["match", "--dialect", "mqtt", str(path), "a/b"])
    assert line.startswith("topicmatch: ")
    assert message in line, line


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("s.xml", "<subs/>", "cannot tell the format of {path}: name it with one of .csv, .json"),
        ("s.csv", "a/b,x\n", "{path}:1: expected a header naming the columns pattern and subscriber"),
        ("s.jsonl", '{"pattern": "a/b"}\n', "{path}:1: expected an object with 'pattern' and 'subscriber'"),
        (
            "s.jsonl",
            '{"pattern": null, "subscriber": "x"}\n',
            "{path}:1: the pattern must be a string, not null",
        ),
        ("s.jsonl", '{"pattern": "a", "subscriber": true}\n', "{path}:1: the subscriber must be a string or"),
        ("s.jsonl", '{"pattern": "a", "subscriber": " x"}\n', "{path}:1: the subscriber ' x' starts or ends"),
        (
            "s.jsonl",
            '{"pattern": "a", "subscriber": 1}\n\n{"pattern": "b", "subscriber": "x"}\n',
            "{path}:3: the subscriber 'x' is a string where line 1's is an integer",
        ),
        ("s.jsonl", '{"pattern": "a/#/b", "subscriber": "x"}\n', "{path}:1: invalid mqtt pattern 'a/#/b'"),
        ("missing.tsv", None, "cannot read {path}: no such file or directory"),
    ],
)
def test_bad_text_subscriptions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    line = _err(capsys, ["match", "--dialect", "mqtt", str(path), "a/b"])
    assert message.format(path=path) in line, line


def test_a_carriage_return_does_not_end_a_json_line(tmp_path: Path) -> None:
    """A JSON line ends at \\n only, as route reads a JSON log: a \\r between tokens is white space."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"pattern": "a.*",\r"subscriber": "x"}\r\n{"pattern": "#", "subscriber": "y"}\n')
    assert _run(["match", str(path), "a.b"]) == (0, "a.b\tx y\n")
