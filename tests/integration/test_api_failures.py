"""The failure route over HTTP: verdicts, banners, idempotency, limits and the eight kinds."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from rewake.reports.rules import CLI_TEXT_LIMIT_CHARS, MESSAGE_LIMIT_CHARS
from tests.support.api import Api
from tests.support.reports import LOGIN, NO_RESET, NOT_STATED, PASSED, QUOTA, failure, runs_url


def test_quota_report_returns_verdict_and_banner(http: httpx.Client, root_id: str) -> None:
    """A Berlin 5:40pm session limit observed 14:05 CET resets 16:40Z and says so in CET."""
    answer = http.post(runs_url(root_id), json=failure())
    assert answer.status_code == 201
    body = answer.json()
    assert body["verdict"]["kind"] == "provider_quota"
    assert body["verdict"]["reset_at"] == "2026-11-30T16:40:00Z"
    assert body["verdict"]["resolution_s"] == 60
    assert body["failure_kind"] == "provider_quota"
    assert body["banner"]["business"] == "Paused · provider limit"
    # T0 is 13:06Z: 3 h 34 min before the reset, shown in the display zone (CET).
    assert body["banner"]["detail"] == "resets 17:40 CET, in 3 h 34 min"
    assert "reset_at 2026-11-30T16:40:00Z +60 s (named_zone)" in body["banner"]["technical"]
    assert body["auto_resume"] == {"available": True, "code": None, "detail": None}
    assert (body["resumed_into_live_limit"], body["held_marks"]) == (False, [])


def test_same_report_again_returns_the_stored_answer(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """Reporting the same attempt with the same body again answers 200 with the first answer."""
    first = http.post(runs_url(root_id), json=failure())
    api.clock.advance(minutes=5)
    again = http.post(runs_url(root_id), json=failure(observed_at="2026-11-30T13:05:00Z"))
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()


def test_an_answer_stored_by_an_earlier_version_is_replayed_as_stored(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """The same report again gets the answer stored when it was new, even one stored before a
    field of today's answer model existed: 200 with those bytes, never a 500."""
    from sqlmodel import Session, select

    from rewake.db.models import FailureRow

    first = http.post(runs_url(root_id), json=failure())
    assert first.status_code == 201
    with Session(api.database.engine) as db:
        row = db.exec(select(FailureRow).where(FailureRow.root_id == root_id)).one()
        older = {k: v for k, v in row.answer.items() if k != "held_marks"}  # as stored before
        row.answer = older
        db.add(row)
        db.commit()
    again = http.post(runs_url(root_id), json=failure())
    assert again.status_code == 200
    assert again.json() == older and "held_marks" in first.json()


def test_different_body_for_a_reported_attempt_is_409(http: httpx.Client, root_id: str) -> None:
    """Another body for an attempt already reported is 409 attempt_already_reported."""
    http.post(runs_url(root_id), json=failure())
    answer = http.post(runs_url(root_id), json=failure(message=NOT_STATED))
    assert answer.status_code == 409
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "attempt_already_reported"


@pytest.mark.parametrize(
    ("observed_at", "status", "code"),
    [
        ("2026-11-30T14:05:00", 422, "observed_at_naive"),
        ("2026-11-30T13:11:01Z", 422, "observed_in_future"),  # T0 + 5 min 1 s
        ("2026-11-30T13:11:00Z", 201, None),  # T0 + 5 min: within the allowed skew
    ],
)
def test_observed_at_must_be_aware_and_not_future(
    http: httpx.Client, root_id: str, observed_at: str, status: int, code: str | None
) -> None:
    """A naive observed_at, or one more than 5 min after receipt, is refused with 422."""
    answer = http.post(runs_url(root_id), json=failure(observed_at=observed_at))
    assert answer.status_code == status
    if code:
        assert answer.json()["code"] == code


def test_halted_run_is_never_a_provider_limit(http: httpx.Client, root_id: str) -> None:
    """A halted run's quota text is stored, but the failure is not provider_quota."""
    body = http.post(runs_url(root_id), json=failure(halted=True)).json()
    assert body["verdict"]["kind"] == "provider_quota"
    assert body["failure_kind"] == "execution_failure"
    assert body["banner"]["business"] == "Stopped · halted"
    armed = http.put(f"/api/agent/runs/{root_id}/auto-resume", json={"enabled": True})
    assert armed.json()["code"] == "not_paused_on_provider_limit"


KINDS = {
    "provider_quota": "Paused · provider limit",
    "login_required": "Paused · sign-in needed",
    "runtime_limit": "Stopped · time limit reached",
    "conversation_missing": "Stopped · conversation not found",
    "missing_outcome": "Stopped · no result",
    "interrupted_start": "Stopped · interrupted at start",
    "host_failure": "Stopped · host error",
    "execution_failure": "Stopped · failed",
}


@pytest.mark.parametrize(("kind", "label"), KINDS.items())
def test_stated_failure_kind_has_its_banner(
    http: httpx.Client, root_id: str, kind: str, label: str
) -> None:
    """Each of the eight failure kinds a host may state gets its own business label."""
    body = http.post(runs_url(root_id), json=failure(failure_kind=kind)).json()
    assert body["failure_kind"] == kind
    assert body["banner"]["business"] == label
    assert body["banner"]["technical"].startswith(f"{kind}: verdict provider_quota from claude")


@pytest.mark.parametrize(
    ("message", "kind", "detail"),
    [
        (NOT_STATED, "provider_quota", "the reset time was not stated"),
        (NO_RESET, "provider_quota", "waiting will not help"),
        (LOGIN, "login_required", "run `/login`"),
        ("Error: ENOENT: no such file or directory", "execution_failure", "the CLI failed"),
        (PASSED, "provider_quota", "resets 14:00 CET, already passed"),
    ],
)
def test_derived_failure_kind_and_banner_detail(
    http: httpx.Client, root_id: str, message: str, kind: str, detail: str
) -> None:
    """Without a stated kind the verdict decides it, and the banner says what to expect."""
    body = http.post(runs_url(root_id), json=failure(message=message)).json()
    assert (body["failure_kind"], body["banner"]["detail"]) == (kind, detail)


def test_long_output_keeps_its_last_part(http: httpx.Client, root_id: str) -> None:
    """Text beyond the limit is cut to its last part, flagged truncated, and still parsed."""
    message = "x" * (MESSAGE_LIMIT_CHARS + 10) + "\n" + QUOTA
    body = http.post(runs_url(root_id), json=failure(message=message)).json()
    assert body["truncated"] is True
    assert body["message_chars"] == len(message)
    assert body["verdict"]["reset_at"] == "2026-11-30T16:40:00Z"
    session = http.get(f"/api/agent/runs/{root_id}").json()
    shown = session["runs"][0]["attempts"][0]["failure"]
    assert shown["message_stored_chars"] == MESSAGE_LIMIT_CHARS
    assert shown["message"].endswith(QUOTA)
    stored = http.get(shown["message_url"]).text
    assert len(stored) == MESSAGE_LIMIT_CHARS
    assert stored.endswith(QUOTA)


def test_body_over_16_mib_is_413(http: httpx.Client, root_id: str) -> None:
    """Only absurd bodies, over 16 MiB, are refused, with 413 body_too_large."""
    body = b'{"attempt": 1, "message": "' + b"x" * (16 * 1024 * 1024) + b'"}'
    answer = http.post(
        runs_url(root_id), content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413
    assert answer.json()["code"] == "body_too_large"


def test_chunked_body_over_16_mib_is_413(http: httpx.Client, root_id: str) -> None:
    """A body sent without a length is counted as it arrives and refused past 16 MiB."""

    def chunks() -> Any:
        yield b'{"attempt": 1, "message": "'
        for _ in range(17):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    answer = http.post(
        runs_url(root_id), content=chunks(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413
    assert answer.json()["code"] == "body_too_large"


def test_structured_events_are_parsed_with_the_text(http: httpx.Client, root_id: str) -> None:
    """A rejected Claude rate_limit_event in `events` gives the reset its resetsAt states."""
    event = {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "rejected",
            "resetsAt": 1796058000,
            "rateLimitType": "five_hour",
        },
    }
    body = failure(message="Claude usage limit reached.", events=[event], provider="claude")
    answer = http.post(runs_url(root_id), json=body).json()
    assert answer["verdict"]["kind"] == "provider_quota"
    assert answer["verdict"]["reset_at"] == "2026-11-30T17:00:00Z"  # 1796058000 s after 1970
    assert answer["verdict"]["form"] == "structured"


CODEX_LIMIT = "You’ve hit your usage limit. Try again at 5:46 PM."


def test_cli_text_is_stored_and_shown_beside_the_message(http: httpx.Client, root_id: str) -> None:
    """cli_text comes back in the session's failure as sent, the message untouched; a report
    without it shows null."""
    body = failure(message="Reading additional input from stdin...", cli_text=CODEX_LIMIT)
    assert http.post(runs_url(root_id), json=body).status_code == 201
    assert http.post(runs_url(root_id, "r2"), json=failure()).status_code == 201
    runs = {run["run_id"]: run for run in http.get(f"/api/agent/runs/{root_id}").json()["runs"]}
    stored = runs["r1"]["attempts"][0]["failure"]
    assert (stored["cli_text"], stored["message"]) == (CODEX_LIMIT, body["message"])
    assert runs["r2"]["attempts"][0]["failure"]["cli_text"] is None


def test_cli_text_is_never_parsed(http: httpx.Client, root_id: str) -> None:
    """A limit banner only in cli_text leaves the verdict to the message and events: not a
    provider limit (docs/design.md rule 8: text the model may have written is never a banner)."""
    body = failure(message="", cli_text=QUOTA, provider="claude")
    answer = http.post(runs_url(root_id), json=body).json()
    assert answer["verdict"]["kind"] == "none" and answer["failure_kind"] == "execution_failure"
    in_message = http.post(runs_url(root_id, "r2"), json=failure(cli_text="")).json()
    assert in_message["verdict"]["kind"] == "provider_quota"  # the same banner, as the message


def test_cli_text_is_part_of_the_reports_body(http: httpx.Client, root_id: str) -> None:
    """The same report with the same cli_text again is 200; other words are 409, as any other
    change of the body is (the first text is not silently kept); no cli_text and an absent
    one are the same body."""
    body = failure(cli_text=CODEX_LIMIT)
    assert http.post(runs_url(root_id), json=body).status_code == 201
    assert http.post(runs_url(root_id), json=body).status_code == 200
    other = http.post(runs_url(root_id), json=failure(cli_text="another error"))
    assert other.status_code == 409 and other.json()["code"] == "attempt_already_reported"
    assert http.post(runs_url(root_id, "r2"), json=failure()).status_code == 201
    assert http.post(runs_url(root_id, "r2"), json=failure(cli_text=None)).status_code == 200


def test_long_cli_text_keeps_its_last_part_with_a_warning(http: httpx.Client, root_id: str) -> None:
    """cli_text over its limit keeps its last characters (how the run ended) and says so."""
    text = "x" * CLI_TEXT_LIMIT_CHARS + CODEX_LIMIT
    answer = http.post(runs_url(root_id), json=failure(cli_text=text))
    assert answer.status_code == 201
    assert [(w["field"], w["code"]) for w in answer.json()["warnings"]] == [
        ("cli_text", "too_long")
    ]
    [run] = http.get(f"/api/agent/runs/{root_id}").json()["runs"]
    shown = run["attempts"][0]["failure"]
    assert shown["cli_text_stored_chars"] == CLI_TEXT_LIMIT_CHARS
    stored = http.get(shown["cli_text_url"]).text
    assert len(stored) == CLI_TEXT_LIMIT_CHARS and stored.endswith(CODEX_LIMIT)
