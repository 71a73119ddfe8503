"""The FastAPI application, built from settings (and, in tests, a clock and a database)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from fastapi import FastAPI

from rewake import __version__
from rewake.api import ops, routes
from rewake.api.deps import Auth, Services
from rewake.api.metrics import Metrics
from rewake.api.problems import BodyLimit, install_problem_handlers
from rewake.db import Database
from rewake.domain.context import ParseFn
from rewake.settings import Settings
from rewake.web.site import install_web


def system_clock() -> datetime:
    return datetime.now(UTC)


def default_parse() -> ParseFn:
    from rewake.parsers import parse

    return parse


def create_app(
    settings: Settings,
    *,
    database: Database | None = None,
    clock: Callable[[], datetime] = system_clock,
    parse: ParseFn | None = None,
) -> FastAPI:
    """The API over `settings.database_url` (or `database`); the schema must already exist."""
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
        parse=parse or default_parse(),
        metrics=metrics,
        display_zone=ZoneInfo(settings.display_zone) if settings.display_zone else None,
    )
    install_problem_handlers(app, metrics.problem)
    app.include_router(ops.router)
    app.include_router(routes.router)
    install_web(app)  # the page at `/`, after the API's handlers it defers to
    app.add_middleware(BodyLimit)
    app.add_middleware(Auth)  # outermost: nothing is read before the caller is known
    return app
