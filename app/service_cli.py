"""`rewake serve` and `rewake migrate`.

Only the standard library is imported here at module level: `rewake parse` builds the same
argument parser and must start fast, and FastAPI and SQLAlchemy take most of a second to import.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from typing import Any

logger = logging.getLogger("rewake.serve")

LOOPBACK_ONLY_NOTICE = (
    "no REWAKE_API_TOKENS configured: the API serves loopback only, and any local process "
    "(agents included) can use it"
)


def register(subparsers: Any) -> None:
    """Add `serve` and `migrate` to the `rewake` command."""
    serve = subparsers.add_parser(
        "serve",
        help="run the HTTP API and a sweeper (upgrades the schema first)",
        description=(
            "Run the HTTP API, with a sweeper in the same process unless --no-sweeper. The "
            "schema is upgraded first, under a lock."
        ),
    )
    serve.add_argument("--host", help="address to bind (default REWAKE_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default REWAKE_PORT, 8600)")
    serve.add_argument(
        "--no-migrate",
        action="store_true",
        help="do not upgrade the schema; refuse to start unless it is current",
    )
    serve.add_argument(
        "--no-sweeper",
        action="store_true",
        help=(
            "do not run a sweeper in this process (also REWAKE_SERVE_SWEEPER=false); run "
            "`rewake sweep` beside it instead"
        ),
    )
    serve.set_defaults(func=run_serve)
    migrate = subparsers.add_parser(
        "migrate",
        help="upgrade the database schema to this version's",
        description="Upgrade the schema of REWAKE_DATABASE_URL, under a lock.",
    )
    migrate.set_defaults(func=run_migrate)


def _settings() -> Any:
    from pydantic import ValidationError

    from rewake.settings import Settings

    try:
        return Settings()
    except ValidationError as error:
        print(f"rewake: invalid configuration:\n{error}", file=sys.stderr)
        return None


def run_migrate(_args: argparse.Namespace) -> int:
    from rewake import migrations
    from rewake.db import Database
    from rewake.logs import configure_logging, log_event

    settings = _settings()
    if settings is None:
        return 2
    configure_logging(json_lines=settings.log_json, level=settings.log_level)
    database = Database(settings.sqlalchemy_url)
    try:
        status = migrations.upgrade(database.engine)
    except migrations.SchemaError as error:
        log_event(logger, "schema_refused", logging.ERROR, reason=str(error))
        return 2
    finally:
        database.dispose()
    log_event(logger, "schema_current", revision=",".join(status.current))
    return 0


def run_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from rewake import migrations
    from rewake.api.app import create_app
    from rewake.db import Database
    from rewake.logs import configure_logging, log_event
    from rewake.settings import is_loopback

    settings = _settings()
    if settings is None:
        return 2
    configure_logging(json_lines=settings.log_json, level=settings.log_level)
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    if not settings.tokens and not is_loopback(host):
        log_event(
            logger,
            "bind_refused",
            logging.ERROR,
            host=host,
            reason="binding a non-loopback address needs REWAKE_API_TOKENS",
        )
        return 2
    database = Database(settings.sqlalchemy_url)
    try:
        if args.no_migrate:
            status = migrations.require_current(database.engine)
        else:
            status = migrations.upgrade(database.engine)
    except migrations.SchemaError as error:
        log_event(logger, "schema_refused", logging.ERROR, reason=str(error))
        database.dispose()
        return 2
    log_event(logger, "schema_current", revision=",".join(status.current))
    if not settings.tokens:
        log_event(logger, "auth_disabled", logging.WARNING, notice=LOOPBACK_ONLY_NOTICE)
    app = create_app(settings, database=database)
    sweeper = None
    if settings.serve_sweeper and not args.no_sweeper:
        # Its metrics go on the API's /metrics.
        sweeper = _embedded_sweeper(settings, database, app.state.services.metrics.sweeper)
        if sweeper is False:
            database.dispose()
            return 2
    log_event(logger, "serving", host=host, port=port, executor=settings.executor)
    # Everything built so far (modules, the app, SQLAlchemy's compiled statements) lives as long
    # as the process: move it out of the collector's reach, or every full collection walks it
    # again, a pause of tens of milliseconds at the p99 of every route.
    gc.collect()
    gc.freeze()
    if sweeper:
        sweeper.start()
    try:
        uvicorn.run(app, host=host, port=port, log_config=None, access_log=False)
    finally:
        if sweeper:
            sweeper.stop()
        database.dispose()
    return 0


def _embedded_sweeper(settings: Any, database: Any, metrics: Any) -> Any:
    """The sweeper `serve` runs beside the API (not started); False when its executor cannot
    work (the reason is logged), None when this install has no sweeper."""
    from rewake.logs import log_event

    try:
        from rewake.executors.factory import ExecutorConfigError
        from rewake.sweeper.build import build_sweeper
    except ImportError as error:
        log_event(logger, "sweeper_unavailable", logging.WARNING, reason=str(error))
        return None
    try:
        return build_sweeper(settings, database, metrics=metrics)
    except ExecutorConfigError as error:
        log_event(logger, "executor_refused", logging.ERROR, reason=str(error))
        return False
