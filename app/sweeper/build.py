"""Assemble a sweeper from the settings: executor, watcher, notifier and metrics."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from rewake.db import Database
from rewake.executors.factory import build_executor
from rewake.settings import Settings
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.notify import Notifier
from rewake.sweeper.runtime import Sweeper
from rewake.sweeper.watch import watcher_for


def build_sweeper(
    settings: Settings,
    database: Database,
    *,
    metrics: SweeperMetrics | None = None,
    registry: CollectorRegistry | None = None,
) -> Sweeper:
    """A sweeper over `database` as the settings describe it (not started). Raises
    ExecutorConfigError when the executor cannot work (a webhook without a secret)."""
    executor = build_executor(settings)
    if metrics is None:
        metrics = SweeperMetrics(registry or CollectorRegistry())
    notifier = (
        Notifier(settings.notify_url, settings.webhook_secret) if settings.notify_url else None
    )
    return Sweeper(
        database,
        executor,
        SweeperConfig.from_settings(settings),
        metrics,
        watcher=watcher_for(settings.sqlalchemy_url),
        notifier=notifier,
    )
