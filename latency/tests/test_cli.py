"""The command line: cheap to start, writes every output, fails with one clear line."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from topicmatch.cli import main
from topicmatch_latency import servers

pytestmark = pytest.mark.latency

HEAVY = ("numpy", "hdrh", "matplotlib", "nats", "redis", "pika", "paho")


def test_the_installed_harness_adds_its_experiments_through_its_entry_point(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Without the harness, `bench latency` is a stub that only says how to install it.
    with pytest.raises(SystemExit) as exited:
        main(["bench", "latency", "--help"])
    assert exited.value.code == 0
    assert "--sweep" in capsys.readouterr().out


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from topicmatch.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.splitlines()[-1] == "[]"


def _run(argv: list[str]) -> tuple[int, str]:
    stdout = io.StringIO()
    return main(argv, stdout=stdout), stdout.getvalue()


def test_latency_run_writes_json_hgrm_chart_and_report(tmp_path: Path) -> None:
    argv = [
        "bench",
        "latency",
        "--system",
        "matcher",
        "--rate",
        "500",
        "--duration",
        "0.4",
        "--warmup",
        "0.2",
    ]
    code, out = _run([*argv, "--out", str(tmp_path)])
    assert code == 0
    assert "| matcher 256B@500 | corrected |" in out
    for name in ("matcher-256B@500.json", "256B@500.png", "report.md"):
        assert (tmp_path / name).exists(), name
    for view in ("corrected", "uncorrected", "lateness"):
        assert (tmp_path / f"matcher-256B@500.{view}.hgrm").read_text().startswith("       Value")
    saved = json.loads((tmp_path / "matcher-256B@500.json").read_text())
    assert saved["command"].startswith("topicmatch bench latency --system matcher --rate 500")
    assert saved["machine"]["cores"]
    assert saved["completed"] == 200
    # Several saved runs overlaid in one chart.
    overlay = tmp_path / "overlay"
    files = [str(tmp_path / "matcher-256B@500.json")] * 2
    code, _ = _run(["bench", "latency", "--overlay", *files, "--out", str(overlay)])
    assert code == 0
    assert (overlay / "256B@500.png").stat().st_size < 100_000


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--size", "2MB"], "over the limit of 1048576 B"),
        (["--rate", "0"], "rate must be between 1 and 100,000"),
        (["--rate", "1000000"], "rate must be between"),
        (["--duration", "7200"], "over the limit of 3600 s"),
        (["--connections", "500"], "connections must be between 1 and 100"),
        (["--connections", "2", "--processes", "3"], "processes must be between 1 and 2"),
    ],
)
def test_limits_give_one_clear_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _run(["bench", "latency", "--system", "matcher", *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_commitlog_limits(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(["bench", "commitlog", "--sizes", "1MB", "--messages", "100000", "--skip-latency"])
    assert code == 2
    assert "over the limit of 2.0 GiB" in capsys.readouterr().err


def test_missing_broker_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(servers, "NATS_SERVER", "/nonexistent/nats-server")
    code, _ = _run(["bench", "latency", "--system", "nats", "--duration", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "nats is not installed" in err
    assert "install-brokers.sh" in err
    assert "apt-get install" in err
    assert len(err.strip().splitlines()) == 1


def test_unknown_system_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "latency", "--system", "kafka"])
    assert exit_info.value.code == 2
    assert "choose from nats, redis, rabbitmq, mqtt, matcher" in capsys.readouterr().err
