"""The failure route never loses a report over an optional field: a value it cannot use is
normalised or dropped, and the answer's warnings say which field and why."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.reports import NOT_STATED, failure, runs_url


def post_json(http: httpx.Client, url: str, body: Any) -> httpx.Response:
    """POST JSON text as Python writes it: lone surrogates travel as \\ud800 escapes."""
    content = json.dumps(body).encode()
    return http.post(url, content=content, headers={"content-type": "application/json"})


def stored_failure(http: httpx.Client, root_id: str) -> dict[str, Any]:
    """The stored failure of the root's only attempt, as the session view shows it."""
    [run] = http.get(f"/api/agent/runs/{root_id}").json()["runs"]
    failure_json: dict[str, Any] = run["attempts"][0]["failure"]
    return failure_json


@pytest.mark.parametrize(
    ("change", "code", "stored"),
    [
        ({"provider": "Claude"}, "normalized", {"provider": "claude"}),
        ({"provider": "copilot"}, "not_allowed", {"provider": "claude"}),  # detected instead
        ({"provider": 7}, "wrong_type", {"provider": "claude"}),
        ({"capture": " Live "}, "normalized", {"capture": "live"}),
        ({"capture": "memory"}, "not_allowed", {"capture": None}),
        ({"failure_kind": "Runtime-Limit"}, "normalized", {"failure_kind": "runtime_limit"}),
        ({"failure_kind": "bored"}, "not_allowed", {"failure_kind": "provider_quota"}),
        ({"zone": "x" * 65}, "too_long", {"zone": None}),
        ({"zone": ["Europe/Berlin"]}, "wrong_type", {"zone": None}),
        ({"zone": "Europe/Berl\ud800n"}, "unstorable_text", {"zone": "Europe/Berl\ufffdn"}),
        ({"session_id": "cli-\ud800"}, "unstorable_text", {"session_id": "cli-\ufffd"}),
        ({"session_id": "s" * 201}, "too_long", {"session_id": None}),
        ({"account_key": "team-\udfff"}, "unstorable_text", {"account_key": "team-\ufffd"}),
        ({"account_key": {"team": "a"}}, "wrong_type", {"account_key": None}),
        ({"halted": "yes"}, "normalized", {"halted": True}),
        ({"halted": "maybe"}, "not_allowed", {"halted": True}),
        ({"events": {"type": "result"}}, "wrong_type", {}),
        ({"cli_text": ["limit"]}, "wrong_type", {"cli_text": None}),
        ({"conversation_saved": "no"}, "normalized", {"conversation_saved": False}),
        ({"conversation_saved": "gone"}, "not_allowed", {"conversation_saved": None}),
        ({"conversation_saved": [False]}, "wrong_type", {"conversation_saved": None}),
        (
            {"cli_text": "API Error\x00\ud800"},
            "unstorable_text",
            {"cli_text": "API Error\ufffd\ufffd"},
        ),
    ],
)
def test_unusable_optional_fields_are_warned_not_refused(
    http: httpx.Client, root_id: str, change: dict[str, Any], code: str, stored: dict[str, Any]
) -> None:
    """An optional field outside its values keeps the report (201) with a warning naming it."""
    answer = post_json(http, runs_url(root_id), failure() | change)
    assert answer.status_code == 201, answer.text
    [field] = change
    warnings = answer.json()["warnings"]
    assert [(w["field"], w["code"]) for w in warnings] == [(field, code)], warnings
    kept = stored_failure(http, root_id)
    assert kept | stored == kept, kept
    assert kept["warnings"] == warnings
    again = post_json(http, runs_url(root_id), failure() | change)
    assert again.status_code == 200, again.text


def test_a_normalised_provider_reaches_the_parser(http: httpx.Client, root_id: str) -> None:
    """ "Codex" is read as codex and parsed as such (the text alone would be detected as claude)."""
    answer = http.post(runs_url(root_id), json=failure(message=NOT_STATED, provider="Codex"))
    assert answer.json()["verdict"]["provider"] == "codex"
    assert answer.json()["warnings"][0]["detail"] == "'Codex' read as 'codex'"
    detected = http.post(runs_url(root_id, "r2"), json=failure(message=NOT_STATED)).json()
    assert detected["verdict"]["provider"] == "claude"


def test_a_halted_spelled_oddly_is_never_a_provider_limit(http: httpx.Client, root_id: str) -> None:
    """An unreadable halted counts as halted: the run is never offered an automatic resume."""
    answer = http.post(runs_url(root_id), json=failure(halted="stopped")).json()
    assert (answer["halted"], answer["failure_kind"]) == (True, "execution_failure")
    assert answer["auto_resume"]["available"] is False


@pytest.mark.parametrize(
    ("change", "field"),
    [({"attempt": "one"}, "attempt"), ({"message": None}, "message"), ({}, "observed_at")],
)
def test_only_required_fields_refuse(
    http: httpx.Client, root_id: str, change: dict[str, Any], field: str
) -> None:
    """attempt, message and observed_at still refuse a report with 422, and are the only
    fields the refusal names, whatever the optional fields hold."""
    body = failure(provider="Claude", zone="x" * 65, capture="memory") | change
    if field == "observed_at":
        del body["observed_at"]
    answer = http.post(runs_url(root_id), json=body)
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_request")
    assert [error["loc"] for error in answer.json()["errors"]] == [["body", field]]
