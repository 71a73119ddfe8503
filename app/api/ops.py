"""Operations routes: liveness, readiness, metrics, the OpenAPI schema, and stateless parse."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from rewake.api import answers
from rewake.api.deps import Actor, AppServices, RequestContext
from rewake.api.openapi import OPENAPI_PATH, problems
from rewake.api.problems import problem
from rewake.api.schemas import ParseBody
from rewake.db import migrations
from rewake.db.engine import Database
from rewake.heartbeats import latest_heartbeat
from rewake.reports.rules import check_observed_at, clean_text
from rewake.settings import SWEEPER_FRESH_S

router = APIRouter(tags=["operations"])


@router.get(
    "/healthz",
    summary="Liveness: the process answers (no auth, no database)",
    response_model=answers.Health,
)
def healthz() -> JSONResponse:
    # A constant, written as such: nothing of it could miss its model (answers.Health).
    return JSONResponse({"status": "ok"})


@router.get(
    "/readyz",
    summary="Readiness: database, schema current, storage not full, a sweeper seen in 90 s",
    response_model=answers.Ready,
    responses=problems("not_ready", database=False),  # a database that fails is not ready
)
def readyz(services: AppServices, _who: Actor) -> answers.Ready | JSONResponse:
    now = services.clock()
    checks: dict[str, dict[str, object]] = {}
    try:
        schema: dict[str, object]
        try:
            status = migrations.schema_status(services.database.engine)
            schema = {
                "ok": status.is_current,
                "current": list(status.current),
                "head": list(status.head),
            }
        except migrations.ScriptsMissing as missing:  # the database answered; the install is bad
            schema = {"ok": False, "error": str(missing)}
        checks["database"] = {"ok": True}
        checks["schema"] = schema
        # Reads still work on a full disk: the last write that failed for want of storage
        # (until one succeeds) and, for a SQLite file, the free space beside it say so.
        checks["storage"] = storage_check(services.database)
        with services.database.reader() as db:
            seen = latest_heartbeat(db)
        fresh = seen is not None and now - seen <= timedelta(seconds=SWEEPER_FRESH_S)
        checks["sweeper"] = {"ok": fresh, "seen_at": seen.isoformat() if seen else None}
    except Exception as error:  # any failure to reach the database means not ready
        checks["database"] = {"ok": False, "error": type(error).__name__}
    ready = all(check["ok"] for check in checks.values()) and len(checks) == 4
    if not ready:
        failing = ", ".join(name for name, check in checks.items() if not check["ok"])
        return problem(503, "not_ready", f"not ready: {failing}", checks=checks)
    return answers.Ready.model_validate({"status": "ready", "checks": checks})


#: Free space under which a SQLite file's storage counts as full: a page and its WAL frame.
MIN_FREE_BYTES = 64 * 1024


def storage_check(database: Database) -> dict[str, object]:
    """/readyz's storage check: not ok while writes fail for want of storage, or when the
    file system of a SQLite file has under MIN_FREE_BYTES free."""
    if database.storage_full_since is not None:
        return {"ok": False, "error": "storage_full"}
    path = database.engine.url.database if database.dialect == "sqlite" else None
    if path and path != ":memory:":
        try:
            stats = os.statvfs(Path(path).absolute().parent)
        except OSError:
            return {"ok": True}
        free = stats.f_bavail * stats.f_frsize
        if free < MIN_FREE_BYTES:
            return {"ok": False, "error": "storage_full", "free_bytes": free}
    return {"ok": True}


@router.get(
    "/metrics",
    summary="Prometheus metrics (the text exposition format)",
    response_class=PlainTextResponse,  # what it answers; the route builds the response itself
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
        **problems(),  # rewake_marks is read from the database at each scrape
    },
)
def metrics(services: AppServices, _who: Actor) -> Response:
    return Response(
        services.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8"
    )


@router.get(OPENAPI_PATH, include_in_schema=False)
def openapi(request: Request, _who: Actor) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.post(
    "/api/parse",
    summary="Parse CLI output statelessly: the Verdict JSON",
    response_model=answers.Verdict,
    responses=problems("observed_at_naive", "observed_in_future", body=True, database=False),
)
def parse(body: ParseBody, ctx: RequestContext, services: AppServices) -> answers.Verdict:
    observed_at = body.observed_at or ctx.now
    check_observed_at(observed_at, ctx.now)
    verdict = services.parse(
        clean_text(body.message), observed_at=observed_at, zone=body.zone, provider=body.provider
    )
    return answers.Verdict.model_validate(verdict.to_json())
