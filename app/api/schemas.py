"""Request bodies and path parameters. Field names are a contract (docs/design.md#bodies);
unknown fields are ignored so that hosts may send more.

The failure body's optional fields are read leniently (rewake.reports.fields): a value that
cannot be used is normalised or dropped with a warning, never a 422. The schema still says
what a host should send."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import Path
from pydantic import (
    Field,
    StrictBool,
)

from rewake.ids import ID_HELP, ID_PATTERN
from rewake.reports.body import AttemptNumber, Body, Provider

RootId = Annotated[str, Path(pattern=ID_PATTERN, max_length=200, description=ID_HELP)]
RunId = Annotated[str, Path(pattern=ID_PATTERN, max_length=200, description=ID_HELP)]


class AttemptBody(Body):
    """The host's run moved on: an attempt started or completed."""

    attempt: AttemptNumber
    status: Literal["started", "completed"]


class AutoResumeBody(Body):
    """Turn auto-resume on or off for the session's current failure."""

    enabled: StrictBool
    despite_native: StrictBool = False
    fresh_if_missing: StrictBool = Field(
        default=False,
        description=(
            "arm even though the failure says the CLI saved no conversation "
            "(conversation_saved: false): the resume is to start the task afresh in its work "
            "directory, as `rewake auto-resume NAME on --fresh-if-missing` does"
        ),
    )


class ResolveBody(Body):
    """How an uncertain mark ended, as a person found out; run_id and attempt say which mark
    when several are uncertain."""

    outcome: Literal["done", "not_sent"]
    run_id: str | None = Field(default=None, pattern=ID_PATTERN, max_length=200)
    attempt: AttemptNumber | None = None


class ParseBody(Body):
    """Text to parse statelessly; observed_at defaults to when the request arrived."""

    message: str
    observed_at: datetime | None = None
    zone: str | None = Field(default=None, max_length=64)
    provider: Provider | None = None
