"""The one progress reporter: steps, counts and polled status, on a terminal and elsewhere."""

from __future__ import annotations

import io
import itertools
import types

import pytest

from topicmatch.support import progress as _progress
from topicmatch.support.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_counts_without_a_terminal_print_a_line_per_tenth() -> None:
    out = io.StringIO()
    progress = Progress("generate", out)
    for done in range(0, 101, 5):
        progress.count(done, 100, "messages")
    lines = out.getvalue().splitlines()
    assert len(lines) == 11  # one line per tenth
    assert lines[-1].startswith("generate [##############################] 100% 100/100 messages")


def test_on_a_terminal_counts_and_status_rewrite_one_line_and_steps_keep_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The reporter's clock, stepped: from 1,000 s, 2 s more at each reading (on a real clock
    # this machine's load would decide what is printed).
    ticks = itertools.count(1_000.0, 2.0)
    monkeypatch.setattr(_progress, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
    out = _Terminal()
    progress = Progress("job", out, width=10)
    progress.count(5, 10, "rows")
    progress.count(10, 10, "rows")  # the end of a count ends its line
    progress.status("tasks 1/2")
    progress("a step")  # ends the status line first
    text = out.getvalue()
    assert text.count("\r\033[K") == 3
    assert "job [#####.....]  50% 5/10 rows, 2.0 s" in text
    lines = text.split("\n")
    assert lines[0].endswith("100% 10/10 rows, 4.0 s")
    assert lines[1] == "\r\033[Kjob: tasks 1/2, 6 s"
    assert lines[2] == "[job    8.0s] a step"
    progress.done()  # nothing open: no-op
    assert out.getvalue() == text
