"""What routes are given: the services, who acts (bearer auth), the request's Context and
database sessions. The clock is read here, once per request."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session

from rewake.api.metrics import Metrics
from rewake.context import Context, ParseFn
from rewake.db.engine import Database
from rewake.settings import Settings


@dataclass(frozen=True, slots=True)
class Services:
    """Everything a request may use, built once per app."""

    settings: Settings
    database: Database
    clock: Callable[[], datetime]
    parse: ParseFn
    metrics: Metrics
    display_zone: tzinfo | None


async def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


AppServices = Annotated[Services, Depends(services)]


async def actor(request: Request) -> str:
    """Set by `Auth` for every route that needs it."""
    who: str = request.state.actor
    return who


Actor = Annotated[str, Depends(actor)]


async def context(request: Request) -> Context:
    """The request's Context: who acts (set by `Auth`) and the clock, read once, here."""
    services: Services = request.app.state.services
    return Context(
        now=services.clock(),
        actor=request.state.actor,
        resume_delay_s=services.settings.resume_delay_s,
        display_zone=services.display_zone,
        tombstone_retention_days=services.settings.tombstone_retention_days,
        hold_window_s=services.settings.hold_window_s,
    )


RequestContext = Annotated[Context, Depends(context)]


# The reader never blocks (a session connects on first use, inside the route's worker thread),
# so it runs on the event loop instead of costing a thread hop. Writes have no dependency: a
# route runs its transaction through `Database.write`, on the writer threads.


async def reader(services: AppServices) -> AsyncIterator[Session]:
    with services.database.reader() as db:
        yield db


Reader = Annotated[Session, Depends(reader)]
