"""Private, loopback-only instances of the real brokers: conformance oracles and latency targets.

Why: the conformance tests compare the library with what RabbitMQ,
Mosquitto and nats-server actually do, and the latency harness
(:mod:`topicmatch_latency`) measures them and Redis; both need
running brokers, but must never touch (or depend on) a system-wide
instance. It ships in the package because ``topicmatch bench latency``
starts its brokers itself. Each class here starts one broker process:

* listening on 127.0.0.1 only, on a free port chosen at start;
* with its config, data and log files in a private temporary directory;
* stopped by PID (SIGTERM, bounded wait, then SIGKILL), never by name.

Start-up waits (bounded) until the broker really speaks its protocol, and
fails with :class:`BrokerStartError` carrying the tail of the broker's log.

Usage::

    with MosquittoServer() as mqtt:
        ... connect to mqtt.host, mqtt.port ...

Options for the harness: :class:`NatsServer` with ``jetstream=True`` (file
storage in the private dir), :class:`RabbitMQServer` with ``streams=True``
(the ``rabbitmq_stream`` plugin, its port on loopback too) and
:class:`RedisServer` with an ``appendfsync`` policy for Redis Streams.

The binaries come from Debian's packages (``bash scripts/install-brokers.sh``);
:func:`missing_binaries` tells which ones are absent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import IO, Self

HOST = "127.0.0.1"

#: Where Debian installs each broker's start program. RabbitMQ's wrapper in
#: /usr/sbin insists on running as the ``rabbitmq`` user with system
#: directories, so the real start script under /usr/lib is used instead.
RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
MOSQUITTO = "mosquitto"
NATS_SERVER = "nats-server"
REDIS_SERVER = "redis-server"
EPMD = "epmd"
#: ActiveMQ's launcher in Debian's package (run with ``java -jar``, not executable itself).
ACTIVEMQ_JAR = "/usr/share/activemq/bin/activemq.jar"
JAVA = "java"

INSTALL_HINT = (
    "install the brokers with `bash scripts/install-brokers.sh` (as root, from a checkout), or "
    "`apt-get install rabbitmq-server mosquitto nats-server redis-server activemq` on Debian"
)


class BrokerStartError(RuntimeError):
    """A broker did not start, or did not accept connections in time."""

    def __init__(self, message: str, *, exited: bool = False) -> None:
        super().__init__(message)
        #: The broker process died during start-up (e.g. its port was taken
        #: between choosing and binding it): worth another try on new ports.
        self.exited = exited


def _which(program: str) -> str | None:
    """Resolve ``program`` on PATH (plus the sbin dirs) or as a path."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) else None
    path = os.environ.get("PATH", os.defpath) + os.pathsep + "/usr/sbin:/sbin"
    return shutil.which(program, path=path)


def _resolve(program: str) -> str:
    """Full path of ``program`` (Debian puts mosquitto and nats-server in /usr/sbin)."""
    path = _which(program)
    if path is None:
        raise BrokerStartError(f"{program} not found; {INSTALL_HINT}")
    return path


def missing_binaries(broker: str) -> list[str]:
    """Programs (and ActiveMQ's jar) needed by ``broker`` ("rabbitmq", "mosquitto", "nats",
    "redis", "activemq") that are absent."""
    needed = {
        "rabbitmq": [RABBITMQ_SERVER, EPMD],
        "mosquitto": [MOSQUITTO],
        "nats": [NATS_SERVER],
        "redis": [REDIS_SERVER],
        "activemq": [JAVA, ACTIVEMQ_JAR],
    }[broker]
    return [
        program
        for program in needed
        if not (Path(program).is_file() if program.endswith(".jar") else _which(program))
    ]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _log_tail(path: Path, lines: int = 40) -> str:
    """Last ``lines`` lines of a log file, for error messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _stop_process(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Stop one process we started: SIGTERM, wait up to ``timeout``, then SIGKILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=10)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop_pid(pid: int, timeout: float) -> None:
    """Stop a process that is not our direct child (e.g. RabbitMQ's VM) by PID."""
    if not _pid_alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.05)
    if _pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class _Server:
    """Common life cycle: temp dir, processes started by us, bounded waits."""

    name = "broker"
    #: Key for :func:`missing_binaries`.
    binary_key = ""
    #: Seconds a start may take: a guard against a start that hangs, not a measure of speed (a
    #: process that exits fails at once). Generous, so that a loaded machine (a JVM or an Erlang
    #: VM booting beside a test suite and other work, load 20+ on 2 cores) does not fail a test.
    start_timeout = 120.0
    stop_timeout = 15.0
    start_attempts = 3

    def __init__(self) -> None:
        self.host = HOST
        self.port = 0
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._procs: list[subprocess.Popen[bytes]] = []
        self._log_files: list[IO[bytes]] = []

    @property
    def tmpdir(self) -> Path:
        assert self._tmp is not None, f"{self.name} is not started"
        return Path(self._tmp.name)

    @property
    def log_path(self) -> Path:
        return self.tmpdir / f"{self.name}.log"

    def _spawn(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start a process in its own session, output to the broker's log."""
        log = self.log_path.open("ab")
        self._log_files.append(log)
        proc = subprocess.Popen(  # fixed argv, no shell
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.tmpdir,
            env=env,
            start_new_session=True,
        )
        self._procs.append(proc)
        return proc

    def _log_paths(self) -> list[Path]:
        """Logs worth showing when start-up fails."""
        return [self.log_path]

    def _fail(self, why: str, *, exited: bool = False) -> BrokerStartError:
        tails = "\n".join(f"--- {path.name} (tail) ---\n{_log_tail(path)}" for path in self._log_paths())
        return BrokerStartError(f"{self.name} on {self.host}:{self.port} {why}\n{tails}", exited=exited)

    def _wait_ready(self, probe: str) -> None:
        """Poll :meth:`_ready` until it answers, a process dies, or time runs out."""
        deadline = time.monotonic() + self.start_timeout
        last_error = "not tried"
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise self._fail(f"exited with status {proc.returncode} during start-up", exited=True)
            try:
                if self._ready():
                    if any(proc.poll() is not None for proc in self._procs):
                        continue  # someone else answered on our port: report the exit
                    return
                last_error = f"{probe} not answered yet"
            except OSError as exc:
                last_error = f"{probe}: {exc}"
            time.sleep(0.1)
        raise self._fail(f"did not accept connections within {self.start_timeout:.0f}s ({last_error})")

    def _ready(self) -> bool:
        """Whether the broker answers its protocol's greeting on ``self.port``."""
        raise NotImplementedError

    def _answers(self, greeting: bytes, expected: bytes, port: int = 0, timeout: float = 2.0) -> bool:
        """Whether ``port`` (default ``self.port``) answers ``greeting`` (nothing: just connect)
        with a reply that starts with ``expected``: the readiness probe of most brokers."""
        with socket.create_connection((self.host, port or self.port), timeout=2) as sock:
            sock.settimeout(timeout)
            if greeting:
                sock.sendall(greeting)
            return sock.recv(len(expected)).startswith(expected)

    def _launch(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start the broker and wait until it accepts connections.

        Free ports are chosen before the broker binds them, so another
        process may take one in between; if the broker exits during start-up
        it is tried again on new ports (at most ``start_attempts`` times).
        """
        missing = missing_binaries(self.binary_key)
        if missing:
            raise BrokerStartError(f"{self.name}: missing {', '.join(missing)}; {INSTALL_HINT}")
        for attempt in range(1, self.start_attempts + 1):
            self._tmp = tempfile.TemporaryDirectory(prefix=f"topicmatch-{self.name}-")
            try:
                self._launch()
                return
            except BrokerStartError as exc:
                self.stop()
                if not exc.exited or attempt == self.start_attempts:
                    raise
            except BaseException:
                self.stop()
                raise

    def _before_stop(self) -> None:
        """Hook: extra processes to stop first (RabbitMQ's VM)."""

    def stop(self) -> None:
        """Stop every process we started, newest first, and remove the temp dir."""
        try:
            self._before_stop()
        finally:
            for proc in reversed(self._procs):
                _stop_process(proc, self.stop_timeout)
            self._procs.clear()
            for log in self._log_files:
                log.close()
            self._log_files.clear()
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class MosquittoServer(_Server):
    """Mosquitto 2.0 with a private config: one loopback listener, anonymous access.

    Persistence is off and ``$SYS`` publishing is disabled (``sys_interval 0``)
    so that nothing but the test's own messages is ever delivered; queue and
    in-flight limits are lifted so no QoS 1 message is dropped or held back.
    Nagle's algorithm is off on client sockets (``set_tcp_nodelay``), as the
    other brokers have it by default: with it on, the tail of a large message
    can wait for a delayed ACK (40 ms on Linux).
    """

    name = "mosquitto"
    binary_key = "mosquitto"

    def _launch(self) -> None:
        self.port = free_port()
        conf = self.tmpdir / "mosquitto.conf"
        conf.write_text(
            "\n".join(
                [
                    f"listener {self.port} {HOST}",
                    "allow_anonymous true",
                    "persistence false",
                    "sys_interval 0",
                    "max_queued_messages 0",
                    "max_inflight_messages 0",
                    "set_tcp_nodelay true",
                    "log_dest stderr",
                    "log_type error",
                    "log_type warning",
                    "log_type notice",
                    "log_type information",
                    "",
                ]
            )
        )
        self._spawn([_resolve(MOSQUITTO), "-c", str(conf)])
        self._wait_ready("MQTT CONNECT")

    def _ready(self) -> bool:
        """Ready once an MQTT 3.1.1 CONNECT gets a CONNACK."""
        with socket.create_connection((self.host, self.port), timeout=2) as sock:
            sock.settimeout(2)
            # CONNECT: "MQTT", level 4, clean session, keep-alive 10 s, client id "ready".
            body = b"\x00\x04MQTT\x04\x02\x00\x0a\x00\x05ready"
            sock.sendall(bytes([0x10, len(body)]) + body)
            answer = sock.recv(4)
            sock.sendall(b"\xe0\x00")  # DISCONNECT
            return answer[:1] == b"\x20"


class NatsServer(_Server):
    """nats-server 2.9 on loopback; no monitoring port, no cluster unless asked.

    JetStream is off unless ``jetstream=True``; then it stores in the private
    dir (``-sd``). nats-server 2.9 has no per-write fsync option: the file
    store writes to the OS and forces a sync every two minutes (the
    ``sync_interval`` setting arrived in 2.10).

    ``nodes=3``: a cluster of three servers, each with its own client and
    route port on 127.0.0.1 and its own store, routed to the other two (what
    a JetStream stream of three replicas needs); ``port`` is the first one's.
    JetStream elects its meta leader a few seconds after the routes form: a
    client retries its first stream creation until then.
    """

    name = "nats"
    binary_key = "nats"

    def __init__(
        self, *, jetstream: bool = False, nodes: int = 1, host: str = HOST, netns: str | None = None
    ) -> None:
        super().__init__()
        if nodes not in (1, 3):
            raise ValueError(f"nodes must be 1 or 3, not {nodes!r}")
        self.jetstream = jetstream
        self.nodes = nodes
        # ``netns``: run inside that network namespace (``ip netns exec``, which execs the server:
        # its PID is ours to stop), listening on ``host``, an address of that namespace. For
        # tests that put load and broker on two hosts; the port is then picked by the kernel of
        # this namespace, free there too unless the other namespace took it since.
        self.host = host
        self.netns = netns

    def _launch(self) -> None:
        ports = [free_port() for _ in range(self.nodes)]
        routes = [free_port() for _ in range(self.nodes)] if self.nodes > 1 else []
        self.port = ports[0]
        cluster = f"topicmatch-{uuid.uuid4().hex[:8]}"
        prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        for node, port in enumerate(ports):
            argv = [
                *prefix,
                _resolve(NATS_SERVER),
                "-a",
                self.host,
                "-p",
                str(port),
                "-n",
                f"{cluster}-{node}",
            ]
            if self.jetstream:
                store = self.tmpdir / f"jetstream-{node}"
                store.mkdir()
                argv += ["-js", "-sd", str(store)]
            if routes:
                others = ",".join(f"nats://{self.host}:{route}" for route in routes if route != routes[node])
                argv += [
                    "--cluster",
                    f"nats://{self.host}:{routes[node]}",
                    "--cluster_name",
                    cluster,
                    "--routes",
                    others,
                ]
            self._spawn(argv)
        self._wait_ready("NATS INFO")

    def _ready(self) -> bool:
        """Ready once the server greets a new client with its INFO line."""
        return self._answers(b"", b"INFO")


class RabbitMQServer(_Server):
    """RabbitMQ 3.10 node kept entirely on loopback and in a private directory.

    Erlang distribution needs epmd: a private epmd is started first on its own
    loopback port (so a system epmd, if any, is neither used nor disturbed),
    the node gets a unique short name, and its distribution port is a free
    loopback port. Config, enabled-plugins file, Mnesia data, logs and the
    Erlang cookie ($HOME) all live in the temp dir. The start script's own
    env file (/etc/rabbitmq/rabbitmq-env.conf) is bypassed.

    No plugins by default; ``streams=True`` enables ``rabbitmq_stream`` with
    its listener on loopback too (``stream_port``), for the commit-log runs.

    ``nodes=3``: a cluster of three nodes on the one private epmd, sharing the
    Erlang cookie, each with its own ports, Mnesia and logs; they find each
    other by ``classic_config`` peer discovery. The first node starts alone;
    the other two start once it answers, and join it during their boot, before
    their listeners open. ``port`` and ``stream_port`` are the first node's.
    """

    name = "rabbitmq"
    binary_key = "rabbitmq"
    start_timeout = 300.0
    stop_timeout = 30.0

    def __init__(self, *, streams: bool = False, nodes: int = 1) -> None:
        super().__init__()
        if nodes not in (1, 3):
            raise ValueError(f"nodes must be 1 or 3, not {nodes!r}")
        self.streams = streams
        self.nodes = nodes
        self.epmd_port = 0
        self.dist_port = 0
        self.stream_port = 0
        self.nodename = ""

    @property
    def pid_file(self) -> Path:
        return self.tmpdir / "rabbitmq.pid"

    def _pid_files(self) -> list[Path]:
        return [self.pid_file, *(self.tmpdir / f"rabbitmq-{node}.pid" for node in range(1, self.nodes))]

    def _launch(self) -> None:
        tmp = self.tmpdir
        self.epmd_port = free_port()
        stem = f"topicmatch-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        names = [f"{stem}@localhost", *(f"{stem}-{node}@localhost" for node in range(1, self.nodes))]
        (tmp / "home").mkdir()
        # One cookie for all nodes, written before any starts (each would make its own).
        (tmp / "home" / ".erlang.cookie").write_text(uuid.uuid4().hex.upper())
        (tmp / "home" / ".erlang.cookie").chmod(0o400)
        (tmp / "enabled_plugins").write_text("[rabbitmq_stream].\n" if self.streams else "[].\n")
        common = {
            "PATH": os.environ.get("PATH", os.defpath),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "HOME": str(tmp / "home"),
            "ERL_EPMD_ADDRESS": HOST,
            "ERL_EPMD_PORT": str(self.epmd_port),
            "RABBITMQ_NODE_IP_ADDRESS": HOST,
            "RABBITMQ_CONF_ENV_FILE": str(tmp / "rabbitmq-env.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(tmp / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(tmp / "enabled_plugins"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        }
        self._spawn([_resolve(EPMD), "-port", str(self.epmd_port), "-address", HOST], env=common)
        for node, name in enumerate(names):
            port, dist_port = free_port(), free_port()
            stream_port = free_port() if self.streams else 0
            suffix = f"-{node}" if node else ""
            for sub in (f"mnesia{suffix}", f"logs{suffix}"):
                (tmp / sub).mkdir()
            conf = [
                f"listeners.tcp.1 = {HOST}:{port}",
                "log.console = true",
                "log.console.level = warning",
                "log.file.level = info",
            ]
            if self.streams:
                conf += [
                    f"stream.listeners.tcp.1 = {HOST}:{stream_port}",
                    f"stream.advertised_host = {HOST}",
                    f"stream.advertised_port = {stream_port}",
                    # Room for a 1 MiB message plus its framing in one publish frame.
                    "stream.frame_max = 8388608",
                ]
            if self.nodes > 1:
                conf += ["cluster_formation.peer_discovery_backend = classic_config"]
                conf += [f"cluster_formation.classic_config.nodes.{i + 1} = {n}" for i, n in enumerate(names)]
            (tmp / f"rabbitmq{suffix}.conf").write_text("\n".join([*conf, ""]))
            env = {
                **common,
                "RABBITMQ_NODENAME": name,
                "RABBITMQ_NODE_PORT": str(port),
                "RABBITMQ_DIST_PORT": str(dist_port),
                "RABBITMQ_CONFIG_FILE": str(tmp / f"rabbitmq{suffix}.conf"),
                "RABBITMQ_MNESIA_BASE": str(tmp / f"mnesia{suffix}"),
                "RABBITMQ_LOG_BASE": str(tmp / f"logs{suffix}"),
                "RABBITMQ_PID_FILE": str(self._pid_files()[node]),
            }
            self._spawn([_resolve(RABBITMQ_SERVER)], env=env)
            self.port, self.stream_port = port, stream_port
            if node == 0:
                self.nodename, self.dist_port = name, dist_port
                first = (port, stream_port)
            # The first node alone, then each other one in turn: it joins during its boot.
            self._wait_ready("AMQP handshake")
        self.port, self.stream_port = first

    def _ready(self) -> bool:
        """Ready once the node answers the AMQP 0-9-1 header with Connection.Start.

        With streams, the stream listener must accept connections as well (the
        plugin starts its listener on its own schedule during boot).
        """
        # Connection.Start: a method frame (type 1) on channel 0.
        if not self._answers(b"AMQP\x00\x00\x09\x01", b"\x01\x00\x00", timeout=5):
            return False
        if self.streams:
            with socket.create_connection((self.host, self.stream_port), timeout=2):
                pass
        return True

    def _log_paths(self) -> list[Path]:
        """The start scripts' output and the nodes' own log files."""
        return [self.log_path, *sorted(self.tmpdir.glob("logs*/*.log"))]

    def _before_stop(self) -> None:
        """Stop each Erlang VM by its PID first (newest first): the start script only forwards
        SIGTERM."""
        if self._tmp is None:
            return
        for pid_file in reversed(self._pid_files()):
            try:
                pid = int(pid_file.read_text().strip())
                # Guard against a recycled PID: it must still be an Erlang VM.
                if b"beam" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                    continue
            except (OSError, ValueError):
                continue
            _stop_pid(pid, self.stop_timeout)


class ActiveMQServer(_Server):
    """ActiveMQ 5.17 (Debian's ``activemq``) as a private instance: a STOMP connector on
    127.0.0.1 (NIO, Nagle off) and an OpenWire one (``openwire_port``, for ActiveMQ's own producer
    and consumer tools), no persistence, no JMX, no advisory topics, its configuration, data and
    log in the private dir, a 512 MiB heap.

    Debian's service wrapper would run the system instance under /var/lib/activemq; the
    launcher jar is started directly instead (``java -jar activemq.jar start xbean:file:...``),
    a child of ours, stopped by PID. The JVM takes a few seconds to start.
    """

    name = "activemq"
    binary_key = "activemq"
    start_timeout = 300.0

    def __init__(self) -> None:
        super().__init__()
        self.openwire_port = 0  # OpenWire, for ActiveMQ's own producer and consumer tools

    def _launch(self) -> None:
        self.port = free_port()
        self.openwire_port = free_port()
        conf, data = self.tmpdir / "conf", self.tmpdir / "data"
        conf.mkdir()
        data.mkdir()
        (conf / "activemq.xml").write_text(
            '<beans xmlns="http://www.springframework.org/schema/beans"\n'
            '  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"\n'
            '  xsi:schemaLocation="http://www.springframework.org/schema/beans '
            "http://www.springframework.org/schema/beans/spring-beans.xsd "
            'http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">\n'
            '  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="topicmatch" '
            f'useJmx="false" persistent="false" advisorySupport="false" dataDirectory="{data}">\n'
            "    <transportConnectors>\n"
            f'      <transportConnector name="stomp" uri="stomp+nio://{HOST}:{self.port}'
            '?transport.tcpNoDelay=true"/>\n'
            f'      <transportConnector name="openwire" uri="tcp://{HOST}:{self.openwire_port}"/>\n'
            "    </transportConnectors>\n"
            "  </broker>\n"
            "</beans>\n"
        )
        (conf / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, out\n"
            "log4j.appender.out=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.out.layout.ConversionPattern=%d %-5p %c - %m%n\n"
        )
        self._spawn(
            [
                _resolve(JAVA),
                "-Xms128M",
                "-Xmx512M",
                "-Dactivemq.home=/usr/share/activemq",
                f"-Dactivemq.base={self.tmpdir}",
                f"-Dactivemq.conf={conf}",
                f"-Dactivemq.data={data}",
                f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}",
                "-jar",
                ACTIVEMQ_JAR,
                "start",
                f"xbean:file:{conf / 'activemq.xml'}",
            ]
        )
        self._wait_ready("STOMP CONNECTED")

    def _ready(self) -> bool:
        """Ready once a STOMP CONNECT is answered with CONNECTED."""
        return self._answers(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00", b"CONNECTED", timeout=5)


class RedisServer(_Server):
    """Redis 7 on loopback with a private config and data dir; no RDB snapshots.

    ``appendfsync`` chooses the durability of Redis Streams: ``None`` keeps the
    append-only file off (memory only), ``"always"`` fsyncs the AOF before
    every reply, ``"everysec"`` once a second, ``"no"`` leaves flushing to the
    OS. Pub/sub output buffers are unlimited so 1 MB messages at 100/s are
    not cut off by the default 32 MB limit.
    """

    name = "redis"
    binary_key = "redis"

    def __init__(self, *, appendfsync: str | None = None) -> None:
        super().__init__()
        if appendfsync not in (None, "always", "everysec", "no"):
            raise ValueError(f"appendfsync must be None, 'always', 'everysec' or 'no', not {appendfsync!r}")
        self.appendfsync = appendfsync

    def _launch(self) -> None:
        self.port = free_port()
        conf = self.tmpdir / "redis.conf"
        lines = [
            f"bind {HOST}",
            f"port {self.port}",
            "protected-mode yes",
            "daemonize no",
            f"dir {self.tmpdir}",
            'logfile ""',
            'save ""',
            "client-output-buffer-limit pubsub 0 0 0",
        ]
        if self.appendfsync is None:
            lines.append("appendonly no")
        else:
            lines += ["appendonly yes", f"appendfsync {self.appendfsync}"]
        conf.write_text("\n".join([*lines, ""]))
        self._spawn([_resolve(REDIS_SERVER), str(conf)])
        self._wait_ready("Redis PING")

    def _ready(self) -> bool:
        """Ready once PING is answered with PONG."""
        return self._answers(b"PING\r\n", b"+PONG")
