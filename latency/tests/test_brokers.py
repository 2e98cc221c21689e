"""Quick round trips through the real brokers: every requester works, nothing is lost.

Tiny durations (0.5 s at 400/s); the study's runs are in latency/docs/measurements.md. The
brokers are private instances on 127.0.0.1, each started once per pytest run
(:mod:`topicmatch_latency.testing`).
"""

from __future__ import annotations

import pytest

from topicmatch_latency import LoadSpec, run_load, servers
from topicmatch_latency._systems import RoundTripFactory
from topicmatch_latency.testing import broker

# Also `brokers`: `make test-fast` (-m "not brokers") runs everything that needs no broker.
pytestmark = [pytest.mark.latency, pytest.mark.brokers]

SHORT = LoadSpec(rate=400, duration=0.5, warmup=0.2)


@pytest.fixture(params=["nats", "redis", "rabbitmq", "mqtt"])
def running(request: pytest.FixtureRequest) -> tuple[str, servers._Server]:
    """Each round-trip system with its running broker."""
    return str(request.param), broker(request.config, str(request.param))


def test_round_trips_complete_at_a_fixed_rate(running: tuple[str, servers._Server]) -> None:
    system, server = running
    factory = RoundTripFactory(system, server.host, server.port, size=256, timeout=5)
    result = run_load(factory, SHORT, system=system, size=256)
    assert result.errors == []
    assert result.completed == 200
    assert result.failed == result.unsent == 0
    assert (result.percentiles("uncorrected")[50.0] or 0) > 0
    assert result.max_ns("corrected") >= result.max_ns("uncorrected") > 0


@pytest.mark.parametrize("system", ["nats", "redis"])
def test_one_megabyte_messages_round_trip(system: str, pytestconfig: pytest.Config) -> None:
    server = broker(pytestconfig, system)
    factory = RoundTripFactory(system, server.host, server.port, size=1024 * 1024, timeout=5)
    result = run_load(factory, LoadSpec(rate=20, duration=0.5, warmup=0.1), size=1024 * 1024)
    assert result.completed == 10
    assert result.failed == 0


def test_connections_over_two_processes(pytestconfig: pytest.Config) -> None:
    """The 25-connection configuration's shape: connections split over processes, merged back."""
    server = broker(pytestconfig, "nats")
    factory = RoundTripFactory("nats", server.host, server.port, size=1024, timeout=5)
    spec = LoadSpec(rate=1_000, duration=0.5, warmup=0.2, connections=5, processes=2)
    result = run_load(factory, spec)
    assert result.completed == 500
    assert result.failed == 0


def test_a_broker_that_stops_answering_is_reported_not_hidden() -> None:
    """Requests to a closed port fail at once: counted and recorded, the run still ends."""
    factory = RoundTripFactory("redis", "127.0.0.1", servers.free_port(), size=256, timeout=1)
    with pytest.raises(Exception, match=r"(?i)connect|refused"):
        run_load(factory, SHORT)
