"""The real brokers for test suites: each started once per pytest run, on first use, on
127.0.0.1, and stopped by PID when the run ends.

Two suites ask for them, each from session fixtures of its own ``conftest.py``: the harness's
tests (``latency/tests``) and topicmatch's conformance tests (``tests/brokers``). The brokers
started are kept on the run's :class:`pytest.Config`, which both suites share, so a run of both
(``make test``) starts each broker once. A broker that is not installed or does not start fails
the test with the install command: a skipped conformance test proves nothing.

Only a test run imports this module (it needs pytest, which the harness does not depend on).
"""

from __future__ import annotations

import pytest

from . import servers
from ._systems import SERVERS, SystemUnavailable, start_server

__all__ = ["broker"]

#: Per system, its running broker, or why it could not start (tried once per run).
_STARTED = pytest.StashKey[dict[str, servers._Server | str]]()


def broker(config: pytest.Config, system: str) -> servers._Server:
    """The broker of ``system`` (nats, redis, rabbitmq, mqtt or activemq) for this pytest run:
    started on the first call, stopped when the run ends; fails the calling test, with the
    install command, when it could not start."""
    started = config.stash.setdefault(_STARTED, {})
    if system not in started:
        server = SERVERS[system]()
        try:
            start_server(server)
        except SystemUnavailable as exc:
            started[system] = str(exc)
        else:
            config.add_cleanup(server.stop)
            started[system] = server
    found = started[system]
    if isinstance(found, str):
        pytest.fail(found)
    return found
