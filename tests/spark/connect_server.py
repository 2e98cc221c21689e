"""A real Spark Connect server on 127.0.0.1, from the installed PySpark distribution.

Started in the foreground with ``bin/spark-submit`` and the server's own class: spark-submit
and spark-class ``exec`` into the JVM, so the PID we hold is the server's, and it runs in its
own process group with its Python workers. No daemon script (``sbin/start-connect-server.sh``
goes through ``spark-daemon.sh`` and its pid files), no shared directory: everything it writes
is under the test's own ``workdir``. The port is chosen free and the server may not move to
another one (``maxRetries=0``). Every wait is bounded; :meth:`ConnectServer.stop` TERMs the
group, KILLs what is left after 20 s and checks that nothing remains.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from pyspark.find_spark_home import _find_spark_home

from .standalone import Launched, _free_port, stop_groups

__all__ = ["ConnectServer"]


class ConnectServer(Launched):
    """``with ConnectServer(workdir) as server:`` ... ``server.url`` is ``sc://127.0.0.1:PORT``."""

    def __init__(self, workdir: Path, timeout: float = 300.0) -> None:
        self.workdir = workdir
        self.timeout = timeout
        self.port = _free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = workdir / "connect-server.log"

    def start(self) -> ConnectServer:
        home = _find_spark_home()
        (self.workdir / "conf").mkdir(parents=True, exist_ok=True)  # empty: no spark-defaults from elsewhere
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE")},
            "SPARK_HOME": home,
            "SPARK_CONF_DIR": str(self.workdir / "conf"),
            "SPARK_LOCAL_IP": "127.0.0.1",
            # The server's Python workers run route's function: they need topicmatch.
            "PYSPARK_PYTHON": sys.executable,
        }
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.connect.grpc.port.maxRetries": "0",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.local.dir": str(self.workdir / "local"),
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
        }
        command = [str(Path(home) / "bin" / "spark-submit"), "--master", "local[2]"]
        command += ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: its Python workers go with it
            )
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5),
            ):
                return self
            time.sleep(0.2)
        raise RuntimeError(
            f"the Spark Connect server did not listen on {self.port} within {self.timeout:.0f} s:\n"
            f"{self.log.read_text(errors='replace')[-3000:]}"
        )

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_groups([process])
