"""Shared fixtures and hypothesis profiles.

The ``ci`` profile (selected when ``CI`` is set) runs more examples and prints the seed to
reproduce a failure; locally the default profile keeps the suite quick.

The real brokers of the conformance suite are its own session fixtures (tests/brokers/conftest.py),
started by the latency harness, which nothing else here needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings

from topicmatch import ALGORITHMS, BUILD, Matcher

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile(
    "ci", max_examples=200, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pure_only(reason: str) -> None:
    """Skip the calling test on the compiled build: it hooks what only the pure one lets a test
    hook (``reason``: what, compiled, it cannot reach). ``make test`` runs it on the pure build."""
    if BUILD == "compiled":
        pytest.skip(f"pure build only: {reason}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``@pytest.mark.pure(reason)``: :func:`pure_only` for a whole test."""
    for item in items:
        marker = item.get_closest_marker("pure")
        if marker is not None and BUILD == "compiled":
            item.add_marker(pytest.mark.skip(reason=f"pure build only: {marker.args[0]}"))


def make_matcher(
    algorithm: str, dialect: str = "amqp", topics: list[str] | None = None, **options: object
) -> Matcher:
    """A Matcher of any algorithm; the inverted bitmap gets ``topics`` as its topic space."""
    if algorithm == "inverted_bitmap":
        return Matcher(algorithm, dialect, topics=topics or [], **options)  # type: ignore[type-var]
    return Matcher(algorithm, dialect, **options)  # type: ignore[arg-type, type-var]


@pytest.fixture(params=ALGORITHMS)
def algorithm(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def matcher_factory(algorithm: str) -> Callable[..., Matcher]:
    def factory(dialect: str = "amqp", topics: list[str] | None = None, **options: object) -> Matcher:
        return make_matcher(algorithm, dialect, topics, **options)

    return factory
