"""The Spark workers run the build of the core the driver runs (docs/compiled.md): the compiled
one wherever the package was installed compiled, as by ``make venv`` for ``make demo``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import topicmatch
from topicmatch._build import PURE_VARIABLE

pytestmark = pytest.mark.spark


def test_the_workers_run_the_drivers_build(spark: SparkSession) -> None:
    def build_of_this_process(_: int) -> tuple[str, str, int]:
        import topicmatch as core  # noqa: PLC0415 - runs in the worker
        import topicmatch.spark._worker  # noqa: PLC0415 - what the pipeline's workers import

        return core.BUILD, core._build.BUILD_NOTE, os.getpid()

    seen = spark.sparkContext.parallelize(range(8), 2).map(build_of_this_process).collect()
    assert {pid for _, _, pid in seen} != {os.getpid()}  # other processes: Spark's Python workers
    assert {(build, note) for build, note, _ in seen} == {(topicmatch.BUILD, topicmatch._build.BUILD_NOTE)}
    installed = Path(topicmatch.__file__).with_name("_compiled.json").is_file()
    if installed and os.environ.get(PURE_VARIABLE, "") in ("", "0"):
        assert {build for build, _, _ in seen} == {"compiled"}
