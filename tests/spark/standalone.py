"""A real Spark standalone cluster on 127.0.0.1, from the installed PySpark distribution.

One master and N workers, each started with ``bin/spark-class`` in its own process group, so
that stopping one (by its PID) also stops the executors and Python workers it launched. Every
wait is bounded; :meth:`Cluster.stop` checks that nothing is left running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from pyspark.find_spark_home import _find_spark_home

__all__ = ["Cluster", "Launched", "stop_groups"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _alive_in_group(pgid: int) -> list[int]:
    """PIDs of the processes of a process group that still run (zombies excluded)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, process_group = fields[0], int(fields[2])
        if process_group == pgid and state != "Z":
            alive.append(int(entry.name))
    return alive


def stop_groups(processes: list[subprocess.Popen[bytes]], grace: float = 20.0) -> None:
    """TERM each process's group (in the order given), KILL what is left of a group after
    ``grace`` seconds, and check that nothing of any group remains."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        while _alive_in_group(process.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive_in_group(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    time.sleep(0.5)
    left = {process.pid: _alive_in_group(process.pid) for process in processes}
    assert not any(left.values()), f"processes left running: {left}"


class Launched:
    """A context manager of processes started by ``start()`` and stopped by ``stop()``, which
    runs also when ``start()`` fails half-way."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class Cluster(Launched):
    """``with Cluster(workdir, workers=2) as cluster:`` ... ``cluster.url`` is ``spark://127.0.0.1:PORT``."""

    def __init__(self, workdir: Path, workers: int = 2, timeout: float = 300.0) -> None:
        self.workdir = workdir
        self.workers = workers
        self.timeout = timeout
        self.port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[tuple[subprocess.Popen[bytes], Path]] = []
        home = _find_spark_home()
        self.spark_class = str(Path(home) / "bin" / "spark-class")
        self.env = {
            **os.environ,
            "SPARK_HOME": home,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "512m",
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }

    def _launch(self, name: str, *args: str) -> Path:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [self.spark_class, *args],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: its children go with it
            )
        self.processes.append((process, log))
        return log

    def _wait_for(self, log: Path, text: str) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if text in log.read_text(errors="replace"):
                return
            if any(process.poll() is not None for process, _ in self.processes):
                break
            time.sleep(0.3)
        raise RuntimeError(f"{log.name}: no {text!r} within {self.timeout:.0f} s:\n{log.read_text()[-3000:]}")

    def start(self) -> Cluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        master = self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            "0",
        )
        self._wait_for(master, "I have been elected leader")
        logs = [
            self._launch(
                f"worker{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--webui-port",
                "0",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--work-dir",
                str(self.workdir / f"work{i}"),
                self.url,
            )
            for i in range(self.workers)
        ]
        for log in logs:  # started together, waited for in turn: the waits overlap
            self._wait_for(log, "Successfully registered with master")
        return self

    def apps(self) -> dict[str, set[str]]:
        """Each application the workers ran executors for (its id), with the workers that ran
        them (their work dirs): a worker keeps ``work-dir/app-ID/EXECUTOR`` after the app."""
        found: dict[str, set[str]] = {}
        for executor in self.workdir.glob("work*/app-*/*"):
            found.setdefault(executor.parent.name, set()).add(executor.parent.parent.name)
        return found

    def stop(self) -> None:
        """TERM each process group (workers first), KILL what is left after 20 s, check none remains."""
        processes = [process for process, _ in reversed(self.processes)]
        self.processes.clear()
        stop_groups(processes)
