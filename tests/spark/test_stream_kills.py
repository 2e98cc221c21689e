"""``route --stream`` after SIGKILL: the states a kill can leave, each built exactly, then a restart.

A kill lands anywhere; these are the points where it leaves something a restart must cope with,
built here without timing: the restart finishes with every delivery written once, or stops with
one line that says what to do.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from topicmatch.spark import Subscriptions
from topicmatch.spark._generate import generate
from topicmatch.spark._io import FileSystem
from topicmatch.spark._pipeline import RouteJob
from topicmatch.spark._stream import StreamRouter

from .helpers import expected_deliveries, pairs_of
from .test_stream import FILE_ROWS, V1, drop, rows_of, stream, write_subs

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    """test_stream's messages: 5 files' worth (a few invalid), as one table."""
    path = tmp_path_factory.mktemp("kill-log")
    generate(path, 5 * FILE_ROWS, 300, seed=5, invalid_fraction=0.01)
    return pq.read_table(path / "messages")


def _paths(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    return tmp_path / "s.tsv", tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"


def _exactly_once(spark: SparkSession, log: pa.Table, out: Path, files: range) -> None:
    got = pairs_of(spark.read.parquet(str(out / "deliveries")))
    expected, invalid = expected_deliveries(Subscriptions.from_pairs(V1), rows_of(log, files))
    assert len(got) == len(set(got)), "a delivery was written twice"
    assert set(got) == expected, "a delivery was lost"
    bad = [r["offset"] for r in spark.read.parquet(str(out / "quarantine")).select("offset").collect()]
    assert sorted(bad) == sorted(invalid)


#: What a kill as the stream starts leaves (Spark's file sink makes its log when the query is
#: created, before the query writes its checkpoint): an empty sink log and no checkpoint for
#: both queries, or for the deliveries once the quarantine's query (started first) is running;
#: or the checkpoint's ``metadata`` still under its temporary name (and its checksum) beside
#: the sink log.
KILLED_AS_IT_STARTED = ["both sink logs", "the deliveries' sink log", "a temporary metadata"]


@pytest.mark.parametrize("extra", [(), ("--overwrite",)])
@pytest.mark.parametrize("left", KILLED_AS_IT_STARTED)
def test_a_kill_as_a_query_starts_is_started_again(
    spark: SparkSession, log: pa.Table, tmp_path: Path, left: str, extra: tuple[str, ...]
) -> None:
    """The empty sink log without a checkpoint made every restart stop with exit 2 ("exists but
    ... holds no checkpoint for it"), writing nothing: a sink log without a committed batch
    holds nothing to lose, so the restart starts the query afresh. ``--overwrite`` refused the
    temporary metadata as not written by topicmatch; it replaces it."""
    subs, inbox, out, ckpt = _paths(tmp_path)
    write_subs(subs, V1)
    for i in range(3):
        drop(inbox, log, i)
    if left == "both sink logs":
        (out / "quarantine" / "_spark_metadata").mkdir(parents=True)
    else:  # the quarantine's query had started, and committed what there was
        assert stream(subs, inbox, out, ckpt)[0] == 0
        shutil.rmtree(out / "deliveries")
        shutil.rmtree(ckpt / "deliveries")
    (out / "deliveries" / "_spark_metadata").mkdir(parents=True)
    if left == "a temporary metadata":
        temporary = ckpt / "deliveries" / ".metadata.0b8e7a52-3f4e-4d7a-9b1c-5a6d2e8f9c01.tmp"
        temporary.parent.mkdir(parents=True)
        temporary.write_text('{"id":"0b8e')
        (temporary.parent / f".{temporary.name}.crc").write_bytes(b"crc\x00")
    code, text = stream(subs, inbox, out, ckpt, *extra)
    assert code == 0, text
    _exactly_once(spark, log, out, range(3))


@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("query", ["deliveries", "quarantine"])
def test_a_kill_as_the_first_batch_is_planned_is_recovered(
    spark: SparkSession,
    log: pa.Table,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    query: str,
    checksum: bool,
) -> None:
    """A query plans batch 0 by logging its files (``sources/0/0``), then writing
    ``offsets/0`` to ``offsets/.0.<uuid>.tmp`` and renaming it. A kill before the rename
    left the temporary file, and Spark, starting a query with no batch in its offsets log,
    refuses an ``offsets`` directory that is not empty: every restart failed with exit 2
    (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY), writing nothing more. Found by a
    loop of SIGKILLs under load (a kill 12 ms after the deliveries' sink log appeared); here
    the state is built from a real run's checkpoint, for either query, with and without the
    temporary file's checksum."""
    subs, inbox, out, ckpt = _paths(tmp_path)
    write_subs(subs, V1)
    for i in range(3):
        drop(inbox, log, i)
    scratch_out, scratch = tmp_path / "scratch-out", tmp_path / "scratch-ckpt"
    assert stream(subs, inbox, scratch_out, scratch)[0] == 0
    # The other query, killed as it was created: a sink log, no checkpoint.
    (out / "deliveries" / "_spark_metadata").mkdir(parents=True)
    (out / "quarantine" / "_spark_metadata").mkdir(parents=True)
    planned = ckpt / query
    planned.mkdir(parents=True)
    shutil.copy(scratch / query / "metadata", planned / "metadata")
    shutil.copytree(scratch / query / "sources", planned / "sources")  # batch 0's files
    (planned / "offsets").mkdir()
    temporary = planned / "offsets" / ".0.5f0c2a8e-7d1b-4c3e-9a6f-2b8d4e1c7a90.tmp"
    temporary.write_bytes(b"")
    crc = planned / "offsets" / f".{temporary.name}.crc"
    if checksum:
        crc.write_bytes(b"crc\x00")
    capsys.readouterr()
    code, _ = stream(subs, inbox, out, ckpt)
    errors = capsys.readouterr().err
    assert code == 0, errors
    assert "stream: removed 1 temporary file(s)" in errors
    assert not temporary.exists()
    assert not crc.exists()
    _exactly_once(spark, log, out, range(3))


def test_a_kill_between_logging_a_batchs_files_and_the_batch_keeps_the_audit_right(
    spark: SparkSession, log: pa.Table, tmp_path: Path
) -> None:
    """The file source logs the files of the next batch (``sources/0/1``) before the query
    logs the batch (``offsets/1``). After a kill between the two, the restart's batch 1 reads
    that entry and a new one, and the source's ids stay one ahead of the batches': the audit
    trail, which read the source entry of the batch's own id, named only the first entry's
    files for batch 1 and the previous batch's files for every batch after it. The deliveries
    were right all along."""
    subs, inbox, out, ckpt = _paths(tmp_path)
    write_subs(subs, V1)
    for i in range(2):
        drop(inbox, log, i)
    assert stream(subs, inbox, out, ckpt)[0] == 0
    drop(inbox, log, 2)
    logged = inbox / "m02.parquet"  # what the source wrote before the kill, as Spark writes it
    entry = {"path": logged.as_uri(), "timestamp": logged.stat().st_mtime_ns // 1_000_000, "batchId": 1}
    text = "v1\n" + json.dumps(entry, separators=(",", ":"))
    (ckpt / "deliveries" / "sources" / "0" / "1").write_text(text)
    drop(inbox, log, 3)
    assert stream(subs, inbox, out, ckpt)[0] == 0
    drop(inbox, log, 4)
    assert stream(subs, inbox, out, ckpt)[0] == 0
    audit = [json.loads(line) for line in (ckpt / "batches.jsonl").read_text().splitlines()]
    assert [(b["batch"], b["files"]) for b in audit] == [
        (0, ["m00.parquet", "m01.parquet"]),
        (1, ["m02.parquet", "m03.parquet"]),
        (2, ["m04.parquet"]),
    ]
    assert sum(b["messages"] for b in audit) == 5 * FILE_ROWS
    _exactly_once(spark, log, out, range(5))


def test_an_output_with_committed_batches_and_no_checkpoint_is_refused(
    log: pa.Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the check is for: output the stream committed, whose checkpoint is gone (or another
    was given). Starting afresh would skip the new batches the sink thinks it has: refused, in
    one line, for the quarantine as for the deliveries."""
    subs, inbox, out, ckpt = _paths(tmp_path)
    write_subs(subs, V1)
    drop(inbox, log, 0)
    assert stream(subs, inbox, out, ckpt)[0] == 0
    for name in ("quarantine", "deliveries"):
        moved = tmp_path / f"ckpt-{name}"
        (ckpt / name).rename(moved)
        capsys.readouterr()
        code, _ = stream(subs, inbox, out, ckpt)
        assert code == 2
        error = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"{out / name} exists but {ckpt} holds no checkpoint for it" in error
        assert "--overwrite" in error
        moved.rename(ckpt / name)
    assert stream(subs, inbox, out, ckpt)[0] == 0
    assert json.loads((out / "summary.json").read_text())["messages"] == 0


class _Killed(BaseException):
    """What SIGKILL is to the code it stops: nothing after it runs (not even a ``finally``'s
    Java calls, see :class:`_Dying`)."""


class _Plan:
    """Where to die: before the ``at``-th step (counting from 0); ``dead`` once it happened."""

    def __init__(self, at: int) -> None:
        self.at, self.step, self.dead = at, 0, False


class _Dying:
    """A Java object whose changing calls are steps: at ``plan.at`` the process dies there (a
    write gets half of its bytes through), and no call after it happens. The objects it gets
    from ``create`` and ``getRawFileSystem`` die along."""

    STEPS = frozenset({"create", "write", "close", "delete", "rename", "mkdirs"})

    def __init__(self, target: Any, plan: _Plan) -> None:
        self._target, self._plan = target, plan

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)
        plan = self._plan

        def call(*args: Any) -> Any:
            if plan.dead:
                raise _Killed
            if name in self.STEPS:
                if plan.step == plan.at:
                    plan.dead = True
                    if name == "write":
                        method(args[0][: len(args[0]) // 2])
                    raise _Killed
                plan.step += 1
            result = method(*args)
            return _Dying(result, plan) if name in ("create", "getRawFileSystem") else result

        return call


class _DyingFileSystem(FileSystem):
    def __init__(self, spark: SparkSession, plan: _Plan) -> None:
        super().__init__(spark)
        self._plan = plan

    def _fs(self, path: str) -> tuple[Any, Any]:
        fs, jpath = super()._fs(path)
        return _Dying(fs, self._plan), jpath


def test_a_kill_at_any_step_of_writing_a_state_file_leaves_it_whole(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``CHECKPOINT/batches.jsonl`` (the audit trail) and ``OUT/summary.json`` are rewritten
    whole after each batch. The write deleted the old file before renaming the new one in: a
    kill between the two left neither, and the restart began a new, empty audit trail. Killed
    before each step in turn, the file is the old one or the new one, whole; the next write and
    read work (the old version's checksum file beside it included), and ``--overwrite`` still
    takes the checkpoint for its own."""
    fs = FileSystem(spark)
    old, new, later = '{"batch": 0}\n', '{"batch": 0}\n{"batch": 1}\n', '{"batch": 2}\n'
    for at in range(50):
        directory = tmp_path / f"killed-at-{at}"
        directory.mkdir()
        path = str(directory / "batches.jsonl")
        hadoop, jpath = fs._fs(path)  # written as the previous version did: a checksum beside it
        stream = hadoop.create(jpath, True)
        stream.write(bytearray(old.encode()))
        stream.close()
        assert (directory / ".batches.jsonl.crc").exists()
        plan = _Plan(at)
        with contextlib.suppress(_Killed):
            _DyingFileSystem(spark, plan).write_text(path, new)
        assert fs.read_text(path) in (old, new), f"killed at step {at}"
        assert fs.foreign(str(directory), "checkpoint") is None, f"killed at step {at}"
        fs.write_text(path, later)
        assert fs.read_text(path) == later
        if not plan.dead:  # it ran to its end: every step before has been a kill point
            assert at > 2
            break
    else:
        raise AssertionError("write_text took more than 50 steps")


def test_a_kill_while_overwrite_deletes_never_loses_silently(
    spark: SparkSession, log: pa.Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--overwrite`` deletes the outputs and the checkpoint, one after the other. It deleted
    the outputs first: killed before the checkpoint went, a restart without ``--overwrite``
    went on from the old checkpoint, took every batch for done and left the deliveries
    deleted. Killed before each deletion in turn, the restart now routes everything once or
    stops with one line naming ``--overwrite``, and ``--overwrite`` then routes everything once."""
    subs, inbox, out, ckpt = _paths(tmp_path)
    write_subs(subs, V1)
    for i in range(2):
        drop(inbox, log, i)
    for at in range(1, 5):  # the checkpoint, the deliveries, the quarantine, the summary
        assert stream(subs, inbox, out, ckpt, "--overwrite")[0] == 0
        job = RouteJob(messages=str(inbox), subscriptions=str(subs), out=str(out), overwrite=True)
        router = StreamRouter(spark, job, str(ckpt), once=True)
        router._fs = _DyingFileSystem(spark, _Plan(at))
        with contextlib.suppress(_Killed):
            router.run(timeout=300)
        capsys.readouterr()
        code, _ = stream(subs, inbox, out, ckpt)
        if code == 0:
            _exactly_once(spark, log, out, range(2))
        else:
            assert code == 2
            assert "--overwrite" in capsys.readouterr().err.strip().splitlines()[-1]
        assert stream(subs, inbox, out, ckpt, "--overwrite")[0] == 0
        _exactly_once(spark, log, out, range(2))
