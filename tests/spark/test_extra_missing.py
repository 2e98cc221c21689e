"""Without PySpark: importing topicmatch.spark names the install command; the CLI still works."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

# Make 'pyspark' unimportable in a fresh interpreter, as if the extra were not installed.
HIDE = "import sys; sys.modules['pyspark'] = None; "


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE + code], capture_output=True, text=True, timeout=60, check=False
    )


def test_import_says_what_to_install() -> None:
    done = _python("import topicmatch.spark")
    assert done.returncode == 1
    assert "ImportError: topicmatch.spark needs pyspark: pip install 'topicmatch[spark]'" in done.stderr


def test_the_command_line_still_starts_and_explains() -> None:
    done = _python("from topicmatch.cli import main; sys.exit(main(['--help']))")
    assert done.returncode == 0, done.stderr
    assert "route" in done.stdout
    assert "generate" in done.stdout
    argv = ["route", "--messages", "m", "--subscriptions", "s", "--out", "o"]
    done = _python(f"from topicmatch.cli import main; sys.exit(main({argv!r}))")
    assert done.returncode == 2
    assert (
        done.stderr.strip() == "topicmatch: this needs the 'pyspark' package: pip install 'topicmatch[spark]'"
    )
    done = _python("from topicmatch.spark import route")
    assert "pip install 'topicmatch[spark]'" in done.stderr


def test_the_import_fails_whatever_was_imported_before() -> None:
    done = _python("import topicmatch.cli; import topicmatch.spark")
    assert done.returncode == 1
    assert "ImportError: topicmatch.spark needs pyspark: pip install 'topicmatch[spark]'" in done.stderr
