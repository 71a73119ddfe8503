"""The host drills, shortened: a `rewake sweep` process against a slow-but-healthy host, a
host that drips its answers, and a slow lookup route, on a SQLite file and on PostgreSQL
(bench/host_drills.py runs them with the audit's figures)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.host_drills import drip_drill, slow_host_drill, slow_lookup_drill
from tests.support.sweeper import fresh_database_url


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_database_url(request.param, tmp_path) as url:
        yield url


def test_slow_healthy_host_drill(database_url: str, tmp_path: Path) -> None:
    """Eight marks due at once, two workers, a host taking 2.5 s a resume, a 3 s timeout, an
    8 s lease and the lookup on: every resume delivered once, none lost, none uncertain."""
    result = slow_host_drill(
        database_url, tmp_path, marks=8, workers=2, host_s=2.5, timeout_s=3, lease_s=8
    )
    print(result.report())
    assert (result.delivered, result.lost, result.double_deliveries) == (8, 0, 0)
    assert result.uncertain_ever == 0
    assert result.states == {"done": 8}


def test_dripping_host_drill(database_url: str, tmp_path: Path) -> None:
    """Four sends whose host drips a byte every 0.5 s for 20 s hold both workers only until
    the 1 s deadline: the two marks due next go out within the deadlines ahead of them."""
    result = drip_drill(
        database_url, tmp_path, drips=4, others=2, workers=2, drip_every_s=0.5,
        drip_for_s=20, timeout_s=1,
    )  # fmt: skip
    print(result.report())
    assert result.others_on_time
    assert result.states == {"done": 6}


def test_slow_lookup_drill(database_url: str, tmp_path: Path) -> None:
    """Six uncertain marks and a lookup route taking 1.5 s each: a mark left claimed by a dead
    sweeper is re-armed within a sweep interval of its lease's end, and sent."""
    result = slow_lookup_drill(database_url, tmp_path, uncertain=6, lookup_s=1.5, interval_s=1)
    print(result.report())
    assert result.on_time
    assert result.sent_on_time
