"""`rewake sweep`: the sweeper as a long-running process (a sidecar beside the API).

Only the standard library is imported at module level: `rewake parse` builds the same argument
parser and must start fast.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from typing import Any

logger = logging.getLogger("rewake.sweep")

#: How often a sweeper waiting for the schema looks again, in seconds.
SCHEMA_POLL_S = 2.0


def register(subparsers: Any) -> None:
    """Add `sweep` to the `rewake` command."""
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


def wait_for_schema(engine: Any, timeout_s: float | None, stop: threading.Event) -> int | None:
    """None once the schema is current; an exit status when it is newer, or never came."""
    from rewake import migrations
    from rewake.logs import log_event

    started = time.monotonic()
    told = False
    while not stop.is_set():
        try:
            migrations.require_current(engine)
        except migrations.SchemaError as error:
            final = isinstance(error, migrations.ScriptsMissing)
            if final or migrations.schema_status(engine).is_newer:
                log_event(logger, "schema_refused", logging.ERROR, reason=str(error))
                return 2
            reason = str(error)
        except Exception as error:  # the database may not be up yet
            reason = f"database unavailable: {type(error).__name__}"
        else:
            return None
        if not told:
            log_event(logger, "schema_waiting", logging.WARNING, reason=reason)
            told = True
        if timeout_s is not None and time.monotonic() - started > timeout_s:
            log_event(logger, "schema_timeout", logging.ERROR, reason=reason)
            return 2
        stop.wait(SCHEMA_POLL_S)
    return 1


def run_sweep(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry, start_http_server
    from pydantic import ValidationError

    from rewake.db import Database
    from rewake.executors.factory import ExecutorConfigError
    from rewake.logs import configure_logging, log_event
    from rewake.settings import Settings
    from rewake.sweeper.build import build_sweeper

    try:
        settings = Settings()
    except ValidationError as error:
        print(f"rewake: invalid configuration:\n{error}", file=sys.stderr)
        return 2
    configure_logging(json_lines=settings.log_json, level=settings.log_level)
    for chatty in ("apscheduler", "httpx", "httpcore", "alembic"):
        # Their INFO lines (every job run, every request) drown the sweeper's own events.
        logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.getLogger().level))
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
            log_event(logger, "executor_refused", logging.ERROR, reason=str(error))
            return 2
        if args.once:
            sweeper.heartbeat_job()
            sweeper.sweep_job()
            sweeper.dispatcher.close(sweeper.clock())
            sweeper.executor.close()
            return 0
        if args.metrics_port is not None:
            start_http_server(args.metrics_port, addr=args.metrics_host, registry=registry)
        sweeper.start()
        stop.wait()
        sweeper.stop()
        return 0
    finally:
        database.dispose()
