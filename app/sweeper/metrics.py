"""The sweeper's Prometheus metrics, registered on the registry the service's /metrics serves
(the in-process sweeper of `rewake serve`), or on the one `rewake sweep --metrics-port` serves."""

from __future__ import annotations

import platform

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    Info,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.platform_collector import PlatformCollector

from rewake import __version__

#: Lateness buckets, in seconds: the precise timer aims under 1 s, the sweep at one interval.
LATENESS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 600)


def register_process_metrics(registry: CollectorRegistry) -> None:
    """What every rewake process exposes: `rewake_build_info` (version, Python), the process's
    CPU, memory and file descriptors, and no `_created` series (a timestamp per counter that
    dashboards never use and that doubles the series to store)."""
    disable_created_metrics()  # type: ignore[no-untyped-call]  # the library leaves it untyped
    Info("rewake_build", "The running rewake", registry=registry).info(
        {"version": __version__, "python": platform.python_version()}
    )
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)


class SweeperMetrics:
    """Sweep duration, claims, fire lateness, outcomes by executor, and the one sign of
    resuming too early: a resumed attempt reporting a provider limit within 10 minutes."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.sweep_duration = Histogram(
            "rewake_sweep_duration_seconds",
            "Time one sweep took (reap, expire, claim and start; lookups run beside it)",
            registry=registry,
        )
        self.claims = Counter(
            "rewake_sweep_claims", "Marks claimed by sweepers of this process", registry=registry
        )
        self.lateness = Histogram(
            "rewake_resume_lateness_seconds",
            "How long after its due_at each resume started (fired - due)",
            buckets=LATENESS_BUCKETS,
            registry=registry,
        )
        self.outcomes = Counter(
            "rewake_resume_outcomes",
            "Resumes by executor and the state they ended in",
            ["executor", "state"],
            registry=registry,
        )
        self.reaped = Counter(
            "rewake_sweep_reaped",
            "Marks whose lease ran out, by the state they went to",
            ["state"],
            registry=registry,
        )
        self.expired = Counter(
            "rewake_marks_expired", "Marks expired still armed past their due", registry=registry
        )
        self.held = Counter(
            "rewake_marks_held",
            "Marks whose due_at moved later because their account hit a new limit",
            registry=registry,
        )
        self.resume_into_live_limit = Counter(
            "rewake_resume_into_live_limit",
            "Resumed attempts that reported a provider limit within 10 minutes of the resume",
            registry=registry,
        )
