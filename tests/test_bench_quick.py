"""``bench EXPERIMENT --quick``: its help says what it costs as measured (no time is asserted
here) and it runs each measurement once unless --repeat says otherwise."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from topicmatch.bench import throughput
from topicmatch.cli import _bench, main
from topicmatch.cli._bench import EXPERIMENTS


@pytest.mark.parametrize("name", [*EXPERIMENTS, "all"])
def test_the_quick_help_says_what_a_quick_run_costs(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", name, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "under a minute" not in text
    assert "--quick small sizes and one run per measurement (unless --repeat)" in text
    cpu = _bench.QUICK_CPU_S[name] if name != "all" else sum(_bench.QUICK_CPU_S.values())
    assert f"about {cpu} s of CPU time (pure build, 2-core Xeon), and longer in wall time on a busy" in text
    assert "(default: 5, with --quick 1)" in text


def test_every_experiment_has_its_measured_quick_cost() -> None:
    assert set(_bench.QUICK_CPU_S) == set(EXPERIMENTS)


@pytest.mark.parametrize(
    ("argv", "repeat"), [(["--quick"], 1), (["--quick", "--repeat", "3"], 3), ([], 5), (["--repeat", "2"], 2)]
)
def test_quick_runs_each_measurement_once_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], repeat: int
) -> None:
    seen: list[tuple[int, bool]] = []

    def run(out: Path, repeat: int, quick: bool, progress: Any) -> Path:
        seen.append((repeat, quick))
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text("# title\n\nbody\n", encoding="utf-8")
        return out / "report.md"

    monkeypatch.setattr(throughput, "run", run)
    assert main(["bench", "throughput", *argv, "--out", str(tmp_path)], stdout=io.StringIO()) == 0
    assert seen == [(repeat, "--quick" in argv)]
