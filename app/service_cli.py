"""The service's commands: `rewake serve` (the API, with a sweeper beside it unless told
not to), `rewake sweep` (the sweeper alone, as a sidecar) and `rewake migrate`.

`rewake.cli` imports this module only for these commands, so it imports what they share at the
top, and the web stack (uvicorn, the API) in `serve` alone; everything is built through the
composition root, `rewake.main`."""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
import threading
import time
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from pydantic import ValidationError
from sqlalchemy import Engine
from sqlalchemy import exc as sa_exc

from rewake.db import migrations
from rewake.db.engine import Database
from rewake.executors.command import MarkStore
from rewake.executors.factory import ExecutorConfigError
from rewake.exits import Exit
from rewake.logs import configure_logging, log_event, redact_url
from rewake.main import build_sweeper, create_app, service_store
from rewake.secret_env import SecretError
from rewake.settings import Settings, explain, is_loopback
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.runtime import Sweeper

logger = logging.getLogger("rewake.serve")
sweep_logger = logging.getLogger("rewake.sweep")

#: How often a sweeper waiting for the schema looks again, in seconds.
SCHEMA_POLL_S = 2.0

LOOPBACK_ONLY_NOTICE = (
    "no REWAKE_API_TOKENS configured: the API serves loopback only, and any local process "
    "(agents included) can use it"
)


def register(subparsers: Any) -> None:
    """Add `serve`, `sweep` and `migrate` to the `rewake` command."""
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
    sweep = subparsers.add_parser(
        "sweep",
        help="fire due auto-resume marks (run beside the API, any number of replicas)",
        description=(
            "Fire each armed mark once when it falls due, paced per account. Shares the API's "
            "database (REWAKE_DATABASE_URL); waits for `rewake migrate` or `rewake serve` to "
            "bring the schema current and refuses a schema newer than it knows."
        ),
    )
    sweep.add_argument(
        "--once", action="store_true", help="run one sweep (reap, expire, claim, send) and exit"
    )
    sweep.add_argument(
        "--metrics-port", type=int, default=None, help="serve Prometheus metrics on this port"
    )
    sweep.add_argument(
        "--metrics-host", default="127.0.0.1", help="address for --metrics-port (127.0.0.1)"
    )
    sweep.add_argument(
        "--schema-timeout",
        type=float,
        default=None,
        help="give up after this many seconds waiting for a current schema (default: wait)",
    )
    sweep.set_defaults(func=run_sweep)
    migrate = subparsers.add_parser(
        "migrate",
        help="upgrade the database schema to this version's",
        description="Upgrade the schema of REWAKE_DATABASE_URL, under a lock.",
    )
    migrate.set_defaults(func=run_migrate)


def _settings() -> Settings | None:
    """The settings, or None after saying why not (a setting, or a secret's file)."""
    try:
        return Settings()
    except ValidationError as error:
        print(f"rewake: invalid configuration:\n{explain(error)}", file=sys.stderr)
    except SecretError as error:
        print(f"rewake: invalid configuration: {error}", file=sys.stderr)
    return None


def run_migrate(_args: argparse.Namespace) -> int:
    settings = _settings()
    if settings is None:
        return Exit.USAGE
    configure_logging(json_lines=settings.log_json, level=settings.log_level)
    opened = _schema_ready(settings, migrate=True)
    if opened is None:
        return Exit.USAGE
    database, _status = opened
    database.dispose()
    return Exit.OK


#: Errors that say the database itself cannot be used (not a bug in rewake): a file that
#: cannot be opened or written, locked past the busy timeout, not a database; a server that
#: does not answer; a URL no installed driver takes.
UNUSABLE = (sa_exc.DBAPIError, sa_exc.ArgumentError, OSError)


def unusable_reason(error: BaseException) -> str:
    """The first line of what the database (or its driver) said."""
    cause = getattr(error, "orig", None) or error
    return (str(cause).strip().splitlines() or [type(cause).__name__])[0]


def _schema_ready(
    settings: Settings, *, migrate: bool
) -> tuple[Database, migrations.SchemaStatus] | None:
    """The database with its schema upgraded (or, without `migrate`, checked current); None
    after one error line when it cannot be used: a schema this rewake cannot run on, or a
    database that cannot be opened (`database_unusable`, the URL without its secrets)."""
    database = None
    try:
        database = Database(settings.sqlalchemy_url)
        if migrate:
            status = migrations.upgrade(database.engine)
        else:
            status = migrations.require_current(database.engine)
    except migrations.SchemaError as error:
        log_event(logger, "schema_refused", logging.ERROR, reason=str(error))
    except UNUSABLE as error:
        log_event(
            logger, "database_unusable", logging.ERROR,
            database=redact_url(settings.database_url), reason=unusable_reason(error),
        )  # fmt: skip
    else:
        log_event(logger, "schema_current", revision=",".join(status.current))
        return database, status
    if database is not None:
        database.dispose()
    return None


#: Libraries whose INFO lines drown a long-running service's own events: APScheduler's
#: "Running job ..." for every sweep, Alembic's lines at every start. WARNING and up.
CHATTY_LOGGERS = ("apscheduler", "alembic")


def configure_service_logging(settings: Settings) -> None:
    """The logs of `serve` and `sweep`, the two long-running commands: rewake's format and
    level (REWAKE_LOG_JSON, REWAKE_LOG_LEVEL), and the chatty libraries only from WARNING up
    (httpx's are quieted for every command by configure_logging: they name each URL)."""
    configure_logging(json_lines=settings.log_json, level=settings.log_level)
    for chatty in CHATTY_LOGGERS:
        logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.getLogger().level))


def run_serve(args: argparse.Namespace) -> int:
    settings = _settings()
    if settings is None:
        return Exit.USAGE
    configure_service_logging(settings)
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
        return Exit.USAGE
    opened = _schema_ready(settings, migrate=not args.no_migrate)
    if opened is None:
        return Exit.USAGE
    database, _status = opened
    if not settings.tokens:
        log_event(logger, "auth_disabled", logging.WARNING, notice=LOOPBACK_ONLY_NOTICE)
    # The web stack is loaded here, for `serve` only: `sweep` and `migrate` never serve.
    import uvicorn

    from rewake.api.server import server_config

    app = create_app(settings, database=database)
    sweeper = None
    if settings.serve_sweeper and not args.no_sweeper:
        # Its metrics go on the API's /metrics.
        sweeper = _embedded_sweeper(
            settings,
            database,
            app.state.services.metrics.sweeper,
            service_store(settings, host, port),
        )
        if sweeper is None:
            database.dispose()
            return Exit.USAGE
    log_event(logger, "serving", host=host, port=port, executor=settings.executor)
    # Everything built so far (modules, the app, SQLAlchemy's compiled statements) lives as long
    # as the process: move it out of the collector's reach, or every full collection walks it
    # again, a pause that lands on the slowest requests of every route.
    gc.collect()
    gc.freeze()
    if sweeper:
        sweeper.start()
    try:
        # Deadlines for every connection and a ceiling on them (rewake.api.server).
        uvicorn.Server(server_config(app, host=host, port=port, settings=settings)).run()
    except KeyboardInterrupt:
        # uvicorn shuts down cleanly on Ctrl-C, then raises the signal again for the caller:
        # the stop was asked for and is done, so no traceback.
        pass
    finally:
        if sweeper:
            sweeper.stop()
        database.dispose()
    return Exit.OK


def _embedded_sweeper(
    settings: Settings, database: Database, metrics: SweeperMetrics, store: MarkStore
) -> Sweeper | None:
    """The sweeper `serve` runs beside the API (not started); None when its executor cannot
    work (the reason is logged). The resumes it starts record through the API (`store`)."""
    try:
        return build_sweeper(settings, database, metrics=metrics, store=store)
    except ExecutorConfigError as error:
        log_event(logger, "executor_refused", logging.ERROR, reason=str(error))
        return None


def wait_for_schema(engine: Engine, timeout_s: float | None, stop: threading.Event) -> int | None:
    """None once the schema is current; an exit status when it is newer, or never came."""

    started = time.monotonic()
    told = False
    while not stop.is_set():
        try:
            migrations.require_current(engine)
        except migrations.SchemaError as error:
            final = isinstance(error, migrations.ScriptsMissing)
            if final or migrations.schema_status(engine).is_newer:
                log_event(sweep_logger, "schema_refused", logging.ERROR, reason=str(error))
                return Exit.USAGE
            reason = str(error)
        except Exception as error:  # the database may not be up yet
            reason = f"database unavailable: {type(error).__name__}"
        else:
            return None
        if not told:
            log_event(sweep_logger, "schema_waiting", logging.WARNING, reason=reason)
            told = True
        if timeout_s is not None and time.monotonic() - started > timeout_s:
            log_event(sweep_logger, "schema_timeout", logging.ERROR, reason=reason)
            return Exit.USAGE
        stop.wait(SCHEMA_POLL_S)
    return Exit.PROBLEM


def run_sweep(args: argparse.Namespace) -> int:
    settings = _settings()
    if settings is None:
        return Exit.USAGE
    configure_service_logging(settings)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    database = Database(settings.sqlalchemy_url)
    try:
        refused = wait_for_schema(database.engine, args.schema_timeout, stop)
        if refused is not None:
            return refused
        registry = CollectorRegistry()
        try:
            sweeper = build_sweeper(settings, database, registry=registry)
        except ExecutorConfigError as error:
            log_event(sweep_logger, "executor_refused", logging.ERROR, reason=str(error))
            return Exit.USAGE
        if args.once:
            sweeper.heartbeat_job()
            sweeper.sweep_job()
            sweeper.dispatcher.close(sweeper.clock())
            sweeper.executor.close()
            return Exit.OK
        if args.metrics_port is not None:
            start_http_server(args.metrics_port, addr=args.metrics_host, registry=registry)
        sweeper.start()
        stop.wait()
        sweeper.stop()
        return Exit.OK
    finally:
        database.dispose()
