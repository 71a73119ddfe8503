"""Auto-resume over HTTP: arming, the gate's 409 codes, what clears a mark and what settles it."""

from __future__ import annotations

import httpx
import pytest

from rewake.marks import lifecycle as sweeper
from tests.support.api import Api, arm, drive, mark_url
from tests.support.reports import (
    GEMINI_QUOTA,
    LOGIN,
    NATIVE,
    NO_RESET,
    NOT_STATED,
    PASSED,
    QUOTA_LATER,
    STALE,
    failure,
    runs_url,
)


def test_arming_sets_due_at_and_warns(http: httpx.Client, root_id: str) -> None:
    """due_at = reset_at + resolution_s + 30 s; with no sweeper seen, the warning says so."""
    http.post(runs_url(root_id), json=failure())
    answer = arm(http, root_id)
    assert answer.status_code == 200
    mark = answer.json()
    assert mark["state"] == "armed"
    assert (mark["run_id"], mark["attempt"]) == ("r1", 1)
    assert mark["reset_at"] == "2026-11-30T16:40:00Z"
    assert mark["due_at"] == "2026-11-30T16:41:30Z"
    assert (mark["armed_by"], mark["armed_at"]) == ("alice", "2026-11-30T13:06:00Z")
    assert mark["warnings"] == ["no sweeper seen in the last 90 s"]
    assert http.get(mark_url(root_id)).json()["id"] == mark["id"]


def test_repeating_the_put_changes_nothing(api: Api, http: httpx.Client, root_id: str) -> None:
    """A second PUT enabled=true returns the same mark, armed_at and armed_by unchanged."""
    http.post(runs_url(root_id), json=failure())
    first = arm(http, root_id).json()
    api.clock.advance(minutes=3)
    bob = {"Authorization": "Bearer bob-secret-0123456789"}
    again = http.put(mark_url(root_id), json={"enabled": True}, headers=bob).json()
    assert (again["id"], again["armed_at"], again["armed_by"]) == (
        first["id"],
        first["armed_at"],
        "alice",
    )


def test_arming_after_the_reset_passed_is_due_at_once(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """A mark armed after reset_at + resolution + delay is due at the arming instant."""
    http.post(runs_url(root_id), json=failure(message=PASSED))
    mark = arm(http, root_id).json()
    assert mark["due_at"] == "2026-11-30T13:06:00Z"
    with api.database.writer() as db, db.begin():
        claimed = sweeper.claim_due(db, api.clock.now, 10_000, "test-sweeper", 60)
    assert root_id in {row.root_id for row in claimed}


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (NOT_STATED, "reset_not_stated"),
        (NO_RESET, "reset_not_stated"),
        (LOGIN, "not_paused_on_provider_limit"),
        (NATIVE, "native_auto_continue"),
    ],
)
def test_gate_refuses_with_its_code(
    http: httpx.Client, root_id: str, message: str, code: str
) -> None:
    """Auto-resume is offered only for a paused provider limit with a stated reset."""
    http.post(runs_url(root_id), json=failure(message=message))
    answer = arm(http, root_id)
    assert answer.status_code == 409
    assert answer.json()["code"] == code
    assert http.get(mark_url(root_id)).json()["offer"]["code"] == code


@pytest.mark.parametrize(
    ("body", "refusal", "says"),
    [
        (failure(message=NO_RESET), "no_reset", "waiting will not help"),
        (failure(message=NOT_STATED), "not_stated", "the reset time was not stated"),
        (failure(message=STALE), "stale", "the stated reset has already passed"),
        (
            failure(message="You've hit your session limit · resets 5:40pm", zone=None),
            "zone_unknown",
            "the reset time needs the host's time zone, which is unknown",
        ),
    ],
)
def test_reset_not_stated_names_the_verdicts_refusal(
    http: httpx.Client, root_id: str, body: dict[str, object], refusal: str, says: str
) -> None:
    """reset_not_stated's detail (409 and offer) names the verdict's refusal code and detail."""
    stored = http.post(runs_url(root_id), json=body).json()
    verdict_detail = stored["verdict"]["refusal"]["detail"]
    expected = f"{says} ({refusal}: {verdict_detail})"
    assert stored["auto_resume"] == {
        "available": False,
        "code": "reset_not_stated",
        "detail": expected,
    }
    problem = arm(http, root_id).json()
    assert (problem["code"], problem["refusal"], problem["detail"]) == (
        "reset_not_stated",
        refusal,
        expected,
    )
    assert http.get(mark_url(root_id)).json()["offer"]["detail"] == expected


def test_despite_native_arms_anyway(http: httpx.Client, root_id: str) -> None:
    """despite_native arms a mark even though the CLI said it continues by itself."""
    http.post(runs_url(root_id), json=failure(message=NATIVE))
    mark = arm(http, root_id, despite_native=True).json()
    assert (mark["state"], mark["despite_native"], mark["reset_at"]) == (
        "armed",
        True,
        "2026-11-30T17:00:00Z",
    )


def test_a_conversation_not_saved_is_refused_unless_armed_as_a_fresh_start(
    http: httpx.Client, root_id: str
) -> None:
    """A limit whose report says the CLI saved no conversation is offered no plain resume (409
    conversation_not_saved, in the answer's offer, the mark's offer and the PUT); arming it
    with fresh_if_missing works, and the timeline says it is a fresh start."""
    body = failure(message=GEMINI_QUOTA, provider="gemini", conversation_saved=False)
    answer = http.post(runs_url(root_id), json=body).json()
    assert (answer["failure_kind"], answer["auto_resume"]["available"]) == ("provider_quota", False)
    assert answer["auto_resume"]["code"] == "conversation_not_saved"
    assert http.get(mark_url(root_id)).json()["offer"]["code"] == "conversation_not_saved"
    refused = arm(http, root_id)
    assert refused.status_code == 409
    problem = refused.json()
    assert problem["code"] == "conversation_not_saved"
    assert "saved no conversation" in problem["detail"]
    assert "fresh_if_missing" in problem["detail"]
    session = http.get(f"/api/agent/runs/{root_id}").json()
    assert session["runs"][0]["attempts"][0]["failure"]["conversation_saved"] is False
    mark = arm(http, root_id, fresh_if_missing=True)
    assert (mark.status_code, mark.json()["state"]) == (200, "armed")
    timeline = http.get(f"/api/agent/runs/{root_id}").json()["timeline"]
    [armed] = [event for event in timeline if event["event"] == "mark_armed"]
    assert armed["detail"]["fresh_start"] is True


def test_fresh_if_missing_changes_nothing_for_a_saved_conversation(
    http: httpx.Client, root_id: str
) -> None:
    """A report that says the conversation was saved (or says nothing) arms as always, and
    fresh_if_missing does not mark it a fresh start."""
    http.post(runs_url(root_id), json=failure(conversation_saved=True))
    assert arm(http, root_id).status_code == 200
    http.put(mark_url(root_id), json={"enabled": False})
    http.post(runs_url(root_id, "r2"), json=failure())
    assert arm(http, root_id, fresh_if_missing=True).status_code == 200
    timeline = http.get(f"/api/agent/runs/{root_id}").json()["timeline"]
    armed = [event for event in timeline if event["event"] == "mark_armed"]
    assert len(armed) == 2 and all("fresh_start" not in e["detail"] for e in armed)


def test_disable_clears_and_a_disabled_mark_may_be_armed_again(
    http: httpx.Client, root_id: str
) -> None:
    """PUT enabled=false clears the mark (disabled); arming again makes a new mark."""
    http.post(runs_url(root_id), json=failure())
    first = arm(http, root_id).json()
    off = http.put(mark_url(root_id), json={"enabled": False}).json()
    assert (off["state"], off["clear_reason"], off["enabled"]) == ("cleared", "disabled", False)
    assert http.put(mark_url(root_id), json={"enabled": False}).json()["id"] == first["id"]
    again = arm(http, root_id).json()
    assert again["state"] == "armed" and again["id"] != first["id"]


def test_newer_attempt_clears_the_mark(http: httpx.Client, root_id: str) -> None:
    """A report for a higher attempt of the marked run clears the mark with new_failure."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    http.post(runs_url(root_id), json=failure(2, QUOTA_LATER))
    mark = http.get(mark_url(root_id)).json()
    assert (mark["state"], mark["clear_reason"]) == ("cleared", "new_failure")
    assert arm(http, root_id).json()["attempt"] == 2


def test_older_or_repeated_reports_leave_the_mark(http: httpx.Client, root_id: str) -> None:
    """A late report of an earlier attempt, or the same report again, does not clear the mark."""
    http.post(runs_url(root_id), json=failure(1, NOT_STATED))
    http.post(runs_url(root_id), json=failure(2))
    arm(http, root_id)
    http.post(runs_url(root_id), json=failure(2))
    http.post(runs_url(root_id), json=failure(0, NOT_STATED))
    mark = http.get(mark_url(root_id)).json()
    assert (mark["state"], mark["attempt"]) == ("armed", 2)


@pytest.mark.parametrize(("observed_at", "state"), [("13:10", "cleared"), ("13:00", "armed")])
def test_another_run_clears_only_when_observed_later(
    http: httpx.Client, root_id: str, observed_at: str, state: str
) -> None:
    """Another run's failure clears the mark only when it was observed after the marked one."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    later = failure(observed_at=f"2026-11-30T{observed_at}:00Z")
    http.post(runs_url(root_id, "r2"), json=later)
    assert http.get(mark_url(root_id)).json()["state"] == state


@pytest.mark.parametrize("state", ["sending", "uncertain"])
def test_later_attempt_report_proves_the_resume_landed(
    api: Api, http: httpx.Client, root_id: str, state: str
) -> None:
    """A later attempt's report while the mark is sending or uncertain makes it done."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    drive(api, root_id, state)
    http.post(runs_url(root_id), json=failure(2, QUOTA_LATER))
    mark = http.get(mark_url(root_id)).json()
    assert (mark["state"], mark["attempt"], mark["outcome"]) == ("done", 1, "done")


def test_later_attempt_started_settles_an_uncertain_mark(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """The attempts route proves a landing too: attempt 2 started makes the mark done."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    drive(api, root_id, "uncertain")
    http.post(runs_url(root_id, what="attempts"), json={"attempt": 2, "status": "started"})
    assert http.get(mark_url(root_id)).json()["state"] == "done"


def test_a_failed_resume_is_never_repeated(api: Api, http: httpx.Client, root_id: str) -> None:
    """An attempt whose mark was sent and failed is refused with attempt_already_resumed."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    drive(api, root_id, "failed")
    answer = arm(http, root_id)
    assert (answer.status_code, answer.json()["code"]) == (409, "attempt_already_resumed")


def test_disabling_while_sending_is_409(api: Api, http: httpx.Client, root_id: str) -> None:
    """A mark being sent cannot be disabled: 409 recovery_in_progress."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    drive(api, root_id, "sending")
    answer = http.put(mark_url(root_id), json={"enabled": False})
    assert (answer.status_code, answer.json()["code"]) == (409, "recovery_in_progress")


@pytest.mark.parametrize(("outcome", "state"), [("done", "done"), ("not_sent", "failed")])
def test_resolve_settles_an_uncertain_mark(
    api: Api, http: httpx.Client, root_id: str, outcome: str, state: str
) -> None:
    """The resolve route settles an uncertain mark, audited in the timeline, and only once."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    drive(api, root_id, "uncertain")
    resolved = http.post(f"{mark_url(root_id)}/resolve", json={"outcome": outcome}).json()
    assert (resolved["state"], resolved["outcome"]) == (state, outcome)
    assert resolved["outcome_detail"] == "resolved by alice"
    again = http.post(f"{mark_url(root_id)}/resolve", json={"outcome": outcome})
    assert (again.status_code, again.json()["code"]) == (409, "mark_not_uncertain")
    events = [entry["event"] for entry in http.get(f"/api/agent/runs/{root_id}").json()["timeline"]]
    assert events[-1] == "mark_resolved"
    assert arm(http, root_id).json()["code"] == "attempt_already_resumed"


def test_mark_of_unknown_session_is_404(http: httpx.Client, root_id: str) -> None:
    """GET and PUT on a root_id never seen are 404 session_not_found."""
    assert http.get(mark_url(root_id)).json()["code"] == "session_not_found"
    assert arm(http, root_id).json()["code"] == "session_not_found"
    resolve = http.post(f"{mark_url(root_id)}/resolve", json={"outcome": "done"})
    assert resolve.status_code == 404


def uncertain_marks_of_two_runs(api: Api, http: httpx.Client, root_id: str, both: bool) -> None:
    """r1's mark left uncertain, then r2 (observed later) armed, and uncertain too if `both`."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    drive(api, root_id, "uncertain")
    later = failure(observed_at="2026-11-30T14:05:30+01:00")
    assert http.post(runs_url(root_id, "r2"), json=later).json()["current"]
    assert arm(http, root_id).json()["run_id"] == "r2"
    if both:
        drive(api, root_id, "uncertain")


def test_resolve_settles_the_uncertain_mark_behind_a_newer_one(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """The resolve route settles the uncertain mark even when a newer mark is the latest."""
    uncertain_marks_of_two_runs(api, http, root_id, both=False)
    resolved = http.post(f"{mark_url(root_id)}/resolve", json={"outcome": "not_sent"})
    assert resolved.status_code == 200, resolved.text
    body = resolved.json()
    assert (body["run_id"], body["state"], body["outcome"]) == ("r1", "failed", "not_sent")
    current = http.get(mark_url(root_id)).json()
    assert (current["run_id"], current["state"]) == ("r2", "armed")


def test_resolve_names_the_mark_when_several_are_uncertain(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """With two uncertain marks the route asks which (409 mark_ambiguous); run_id and attempt
    pick one, and the other is then the only one left."""
    uncertain_marks_of_two_runs(api, http, root_id, both=True)
    url = f"{mark_url(root_id)}/resolve"
    ambiguous = http.post(url, json={"outcome": "done"})
    assert (ambiguous.status_code, ambiguous.json()["code"]) == (409, "mark_ambiguous")
    listed = ambiguous.json()["uncertain"]
    assert [(mark["run_id"], mark["attempt"]) for mark in listed] == [("r1", 1), ("r2", 1)]
    second = http.post(url, json={"outcome": "done", "run_id": "r2", "attempt": 1}).json()
    assert (second["run_id"], second["state"]) == ("r2", "done")
    unknown = http.post(url, json={"outcome": "done", "run_id": "r3"})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "mark_not_found")
    settled = http.post(url, json={"outcome": "done", "run_id": "r2"})
    assert (settled.status_code, settled.json()["code"]) == (409, "mark_not_uncertain")
    first = http.post(url, json={"outcome": "done"}).json()
    assert (first["run_id"], first["state"]) == ("r1", "done")
