"""The failure report's body, as the API's route and the runner's local store both read it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StrictBool,
    StrictInt,
    model_validator,
)

from rewake.reports.failures import FailureReport
from rewake.reports.fields import FieldWarning, read_optional_fields
from rewake.reports.rules import CLI_TEXT_LIMIT_CHARS, FailureKind


def _integral(value: Any) -> Any:
    """`2783.0` as 2783: the published schema says `integer`, and JSON Schema counts a number
    with no fraction as one (so do the clients it generates). `1.5` stays a float: refused."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: An attempt counts from 1. A JSON integer (`2783.0` included) and nothing else: `true`, `"1"`
#: and `1.5` are refused (422), never read as a number.
AttemptNumber = Annotated[StrictInt, Field(ge=1, le=1_000_000_000), BeforeValidator(_integral)]


Provider = Literal["claude", "codex", "gemini"]


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FailureBody(Body):
    """A failed attempt, as the host saw it."""

    attempt: AttemptNumber
    message: str = Field(description="the CLI output, as captured (any length; see truncated)")
    observed_at: datetime = Field(description="aware instant the CLI printed the message")
    zone: str | None = Field(default=None, max_length=64, description="IANA zone of the host")
    provider: Provider | None = None
    session_id: str | None = Field(default=None, max_length=200)
    events: list[Any] | None = None
    failure_kind: FailureKind | None = None
    capture: Literal["live", "scrollback"] | None = None
    account_key: str | None = Field(default=None, max_length=200)
    halted: StrictBool = False
    conversation_saved: StrictBool | None = Field(
        default=None,
        description=(
            "false when the CLI saved no conversation for this attempt, so that resuming it in "
            "place has nothing to continue (Gemini CLI saves one only once the model answered); "
            "auto-resume is then refused unless armed with fresh_if_missing. Absent or null: "
            "not known, the usual case"
        ),
    )
    cli_text: str | None = Field(
        default=None,
        description=(
            "what the CLI showed the user about how the attempt ended, when the message lacks "
            "it (headless runs keep it in their events): shown beside the message, never "
            f"parsed; its last {CLI_TEXT_LIMIT_CHARS} characters are kept"
        ),
    )

    _warnings: list[FieldWarning] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _read_optional_fields(
        cls, data: Any, handler: ModelWrapValidatorHandler[FailureBody]
    ) -> FailureBody:
        """Only attempt, message and observed_at can refuse a report."""
        if not isinstance(data, dict):
            return handler(data)
        optional, warnings = read_optional_fields(data)
        body = handler({**data, **optional})
        body._warnings = warnings
        return body

    def to_report(self, root_id: str, run_id: str) -> FailureReport:
        return FailureReport(
            root_id=root_id,
            run_id=run_id,
            attempt=self.attempt,
            message=self.message,
            observed_at=self.observed_at,
            zone=self.zone,
            provider=self.provider,
            session_id=self.session_id,
            events=self.events,
            failure_kind=self.failure_kind,
            capture=self.capture,
            account_key=self.account_key,
            halted=self.halted,
            cli_text=self.cli_text,
            conversation_saved=self.conversation_saved,
            warnings=tuple(self._warnings),
        )
