"""The composition root: the one place where settings become a database, the API with its
page, and a sweeper with its executor. Everything below takes what it needs as arguments.

The API's modules (FastAPI, Starlette, the routes, the page's templates) are imported by
`create_app`, not here: `rewake sweep` builds only a sweeper, and a sidecar that loaded the web
stack it never serves paid about 0.5 s of CPU at every start, nearly half of it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from prometheus_client import CollectorRegistry

from rewake.context import ParseFn
from rewake.db.engine import Database
from rewake.executors.command import MarkStore
from rewake.executors.factory import ExecutorConfigError, build_executor
from rewake.notifications.apprise_notices import Announcer
from rewake.notifications.webhook import Notifier
from rewake.security import resume_credential
from rewake.settings import Settings
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.metrics import SweeperMetrics, register_process_metrics
from rewake.sweeper.runtime import Sweeper
from rewake.sweeper.watch import watcher_for

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import ASGIApp, Scope

    from rewake.api.metrics import Metrics
    from rewake.errors import DomainError


def system_clock() -> datetime:
    return datetime.now(UTC)


def create_app(
    settings: Settings,
    *,
    database: Database | None = None,
    clock: Callable[[], datetime] = system_clock,
    parse: ParseFn | None = None,
) -> FastAPI:
    """The API over `settings.database_url` (or `database`); the schema must already exist."""
    from fastapi import FastAPI

    from rewake import __version__
    from rewake.api import ops, routes
    from rewake.api.deps import Services
    from rewake.api.metrics import Metrics, RequestTimer
    from rewake.api.openapi import install_openapi
    from rewake.api.problems import BodyLimit, install_problem_handlers
    from rewake.parsers import parse as parse_text
    from rewake.security.auth import Auth
    from rewake.web.site import install_web

    database = database or Database(settings.sqlalchemy_url)
    metrics = Metrics(database)
    app = FastAPI(
        title="rewake",
        summary="Exactly-once resumes of AI coding CLI runs stopped by usage limits",
        version=__version__,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.services = Services(
        settings=settings,
        database=database,
        clock=clock,
        parse=parse or parse_text,
        metrics=metrics,
        display_zone=ZoneInfo(settings.display_zone) if settings.display_zone else None,
    )
    install_problem_handlers(app, metrics.problem)
    app.include_router(ops.router)
    app.include_router(routes.router)
    # The document at /openapi.json: problems, answers, and the bearer scheme when tokens are set.
    install_openapi(app, bearer=bool(settings.tokens))
    install_web(app)  # the page at `/`, after the API's handlers it defers to
    app.add_middleware(BodyLimit)
    # Outermost: nothing is read before the caller is known.
    app.add_middleware(Auth, settings=settings, refuse=_refusal(metrics))
    app.add_middleware(RequestTimer, histogram=metrics.requests)  # times refusals too
    return app


def _refusal(metrics: Metrics) -> Callable[[DomainError, Scope], ASGIApp]:
    """How `Auth` answers a refused request: a browser asking for a page gets a page (or the
    sign-in form), everything else a problem+json; either way the code is counted."""
    from rewake.api.openapi import OPENAPI_PATH
    from rewake.api.problems import problem
    from rewake.security import browser
    from rewake.web.render import page_refusal

    def refuse(refused: DomainError, scope: Scope) -> ASGIApp:
        metrics.problem(refused.code)
        path = scope.get("path", "")
        # The document is read by programs (the docs page's fetch too): a problem, never a page.
        if browser.is_page(path) and path != OPENAPI_PATH:
            return page_refusal(refused, scope)
        return problem(refused.status, refused.code, refused.detail)

    return refuse


def database_store(settings: Settings, cwd: Path | None = None) -> MarkStore:
    """The sweeper's own database, for the resumes it starts: a relative SQLite path made
    absolute (the program may run elsewhere)."""
    url = settings.database_url
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url.startswith(prefix + "/"):
        path, query = url[len(prefix) :], ""
        if "?" in path:
            path, query = path.split("?", 1)
            query = "?" + query
        if path and path != ":memory:":
            url = prefix + str((cwd or Path.cwd()) / path) + query
    return MarkStore(database_url=url)


def service_store(settings: Settings, host: str, port: int) -> MarkStore:
    """The service `serve` runs, for the resumes its own sweeper starts: its URL as this
    machine reaches it, and the key of the one-resume credentials it accepts."""
    # A wildcard bind is reached on loopback (the program runs on this machine).
    reach = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)  # noqa: S104
    if ":" in reach:
        reach = f"[{reach}]"
    key = resume_credential.credential_key(settings.tokens.values())
    return MarkStore(service_url=f"http://{reach}:{port}", credential_key=key)


def build_sweeper(
    settings: Settings,
    database: Database,
    *,
    metrics: SweeperMetrics | None = None,
    registry: CollectorRegistry | None = None,
    store: MarkStore | None = None,
) -> Sweeper:
    """A sweeper over `database` as the settings describe it (not started). Raises
    ExecutorConfigError when the executor cannot work (a webhook without a secret) or the
    notify webhook cannot be signed (a `whsec_` secret that is not base64)."""
    try:
        notifier = (
            Notifier(settings.notify_url, settings.webhook_secret) if settings.notify_url else None
        )
        announcer = Announcer(settings.notify) if settings.notify else None
    except ValueError as error:
        raise ExecutorConfigError(str(error)) from error
    executor = build_executor(settings, store=store or database_store(settings))
    if metrics is None:
        registry = registry or CollectorRegistry()
        register_process_metrics(registry)  # a sweeper of its own process: `rewake sweep`
        metrics = SweeperMetrics(registry)
    return Sweeper(
        database,
        executor,
        SweeperConfig.from_settings(settings),
        metrics,
        watcher=watcher_for(settings.sqlalchemy_url),
        notifier=notifier,
        announcer=announcer,
    )
