"""Prometheus metrics: failures by provider and kind, refusals by code, problems by code
(counted in this process), request durations by route and status, marks by state (read from
the database at each scrape), the process's own, and the sweeper's (rewake.sweeper.metrics)
on the same registry."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewake.db.engine import Database
from rewake.logs import log_event
from rewake.marks import lifecycle
from rewake.marks.states import MarkState
from rewake.sweeper.metrics import SweeperMetrics, register_process_metrics

#: The access log: one `request` event per HTTP answer (RequestTimer).
access_logger = logging.getLogger("rewake.access")

#: The route label of an answer no route gave.
UNROUTED = "unrouted"

MARK_STATES = tuple(str(state) for state in MarkState)


class MarksByState(Collector):
    """rewake_marks{state}: how many marks are in each state now."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily("rewake_marks", "Auto-resume marks by state", labels=["state"])
        with self.database.reader() as db:
            counts = lifecycle.count_by_state(db)
        for state in sorted(set(MARK_STATES) | set(counts)):
            gauge.add_metric([state], counts.get(state, 0))
        yield gauge


class Metrics:
    """One registry per app, so that several apps (tests) never share counters."""

    def __init__(self, database: Database) -> None:
        self.registry = CollectorRegistry()
        self.failures = Counter(
            "rewake_failures",
            "Failure reports stored, by provider and failure kind",
            ["provider", "kind"],
            registry=self.registry,
        )
        self.refusals = Counter(
            "rewake_refusals",
            "Failure reports whose verdict refused a reset time, by refusal code",
            ["code"],
            registry=self.registry,
        )
        self.problems = Counter(
            "rewake_problems", "Error answers, by problem code", ["code"], registry=self.registry
        )
        self.requests = Histogram(
            "rewake_http_request_duration_seconds",
            "Time from a request's arrival to its last byte sent, by route template, method and "
            f"status (route `{UNROUTED}` for answers given before routing: the auth's refusals "
            "and paths no route serves)",
            ["route", "method", "status"],
            registry=self.registry,
        )
        register_process_metrics(self.registry)
        self.registry.register(MarksByState(database))
        # The sweeper's metrics share this registry: the sweeper `rewake serve` runs uses them,
        # and the failure route counts resumes into a live limit.
        self.sweeper = SweeperMetrics(self.registry)

    def failure_stored(self, answer: dict[str, Any]) -> None:
        verdict = answer.get("verdict") or {}
        self.failures.labels(verdict.get("provider") or "unknown", answer["failure_kind"]).inc()
        refusal = verdict.get("refusal")
        if refusal:
            self.refusals.labels(refusal["code"]).inc()
        if answer.get("resumed_into_live_limit"):
            self.sweeper.resume_into_live_limit.inc()
        self.sweeper.held.inc(len(answer.get("held_marks") or ()))

    def problem(self, code: str) -> None:
        self.problems.labels(code).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class RequestTimer:
    """Times every HTTP answer, refusals included (it wraps even the auth), into
    `Metrics.requests`, and writes the access log: one `request` event per answer on the
    `rewake.access` logger, at INFO. The route is the matched route's template, never the raw
    path, so the series stay as few as the routes.

    The access line names the method, the path (never the query string, where a caller may
    put a secret; never a body), the status, the time taken in ms and who acted (`-` when no
    one was authenticated: a refusal, /healthz). Being outermost, it sees the answers given
    before routing too (401, 413). The path is the caller's text: the log formatters keep its
    control characters out of the line (rewake.logs)."""

    def __init__(self, app: ASGIApp, *, histogram: Histogram) -> None:
        self.app = app
        self.histogram = histogram

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers when the app fails before it starts a response

        async def send_timed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_timed)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or UNROUTED
            method = scope.get("method", "")
            self.histogram.labels(route, method, str(status)).observe(elapsed)
            if access_logger.isEnabledFor(logging.INFO):
                log_event(
                    access_logger, "request", method=method, path=scope.get("path", ""),
                    status=status, ms=round(elapsed * 1000, 1),
                    actor=(scope.get("state") or {}).get("actor") or "-",
                )  # fmt: skip
