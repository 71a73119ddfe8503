"""Sessions over HTTP: attempts, manual resume, cancel, delete with tombstones, views, list."""

from __future__ import annotations

import httpx
import pytest

from rewake.context import iso
from rewake.session_service import reads as session_views
from tests.support.api import Api, arm, drive, mark_url
from tests.support.reports import NOT_STATED, QUOTA_LATER, failure, runs_url


def session_url(root_id: str) -> str:
    return f"/api/agent/runs/{root_id}"


def finish(http: httpx.Client, root_id: str, attempt: int = 2) -> None:
    for status in ("started", "completed"):
        body = {"attempt": attempt, "status": status}
        assert http.post(runs_url(root_id, what="attempts"), json=body).status_code == 200


def test_attempt_started_moves_the_run_on_and_clears_the_mark(
    http: httpx.Client, root_id: str
) -> None:
    """A later attempt started means someone resumed by hand: the armed mark is cleared."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    answer = http.post(runs_url(root_id, what="attempts"), json={"attempt": 2, "status": "started"})
    assert answer.json()["run"] == answer.json()["run"] | {
        "status": "running",
        "current_attempt": 2,
    }
    mark = http.get(mark_url(root_id)).json()
    assert (mark["state"], mark["clear_reason"]) == ("cleared", "manual_resume")
    assert arm(http, root_id).json()["code"] == "not_paused_on_provider_limit"


def _listed(http: httpx.Client, root_id: str, **query: str) -> dict[str, object]:
    """`root_id`'s entry in the session list, paging through it (other tests' sessions share
    the database and the clock)."""
    offset: int | None = 0
    while offset is not None:
        page = http.get("/api/agent/runs", params={**query, "offset": offset}).json()
        for entry in page["sessions"]:
            if entry["root_id"] == root_id:
                return dict(entry)
        offset = page["next_offset"]
    raise AssertionError(f"{root_id} is not listed")


def test_a_resumed_session_no_longer_says_paused(http: httpx.Client, root_id: str) -> None:
    """Limit on attempt 1, then attempt 2 started and completed: the session's current point is
    attempt 2, the session and the list carry no current failure, and it is finished."""
    http.post(runs_url(root_id), json=failure())
    finish(http, root_id, attempt=2)
    session = http.get(session_url(root_id)).json()
    assert session["state"] == "finished"
    assert session["current"] == {"run_id": "r1", "attempt": 2}
    listed = _listed(http, root_id, state="finished")
    assert (listed["state"], listed["failure"]) == ("finished", None)
    [run] = session["runs"]
    failed = [a["attempt"] for a in run["attempts"] if a["failure"] is not None]
    assert failed == [1]  # the history stays


def test_attempt_reports_are_idempotent(http: httpx.Client, root_id: str) -> None:
    """The same attempt status twice changes nothing the second time."""
    finish(http, root_id, 1)
    finish(http, root_id, 1)
    timeline = http.get(session_url(root_id)).json()["timeline"]
    assert [entry["event"] for entry in timeline] == ["attempt_started", "attempt_completed"]


def test_manual_resume_clears_the_mark(http: httpx.Client, root_id: str) -> None:
    """POST .../resume records a manual resume: the run runs again, the mark is cleared."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    answer = http.post(runs_url(root_id, what="resume")).json()
    assert answer["run"]["status"] == "running"
    assert (answer["mark"]["state"], answer["mark"]["clear_reason"]) == ("cleared", "manual_resume")
    unknown = http.post(runs_url(root_id, "nope", what="resume"))
    assert (unknown.status_code, unknown.json()["code"]) == (404, "run_not_found")


def test_cancel_is_final_and_always_succeeds(http: httpx.Client, root_id: str) -> None:
    """Cancel clears the mark (reason cancel), can be repeated, and refuses arming afterwards."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    first = http.post(f"{session_url(root_id)}/cancel")
    again = http.post(f"{session_url(root_id)}/cancel")
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json()["state"] == "cancelled"
    assert again.json()["cancelled_by"] == "alice"
    mark = again.json()["mark"]
    assert (mark["state"], mark["clear_reason"]) == ("cleared", "cancel")
    assert arm(http, root_id).json()["code"] == "session_cancelled"


def test_cancel_while_sending_succeeds_and_leaves_the_send(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """Cancel succeeds while a resume is being sent; the sending mark is left to settle."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    drive(api, root_id, "sending")
    answer = http.post(f"{session_url(root_id)}/cancel")
    assert answer.status_code == 200
    assert answer.json()["mark"]["state"] == "sending"


def test_delete_needs_a_finished_or_cancelled_session(http: httpx.Client, root_id: str) -> None:
    """Deleting a paused session is 409 session_active; a finished one leaves a tombstone."""
    http.post(runs_url(root_id), json=failure(account_key="acct-1"))
    refused = http.delete(session_url(root_id))
    assert (refused.status_code, refused.json()["code"]) == (409, "session_active")
    finish(http, root_id)
    tombstone = http.delete(session_url(root_id)).json()
    assert (tombstone["root_id"], tombstone["deleted_by"]) == (root_id, "alice")
    assert tombstone["summary"]["state"] == "finished"
    gone = http.get(session_url(root_id))
    assert (gone.status_code, gone.json()["code"]) == (410, "session_deleted")
    assert http.get(f"/api/agent/runs/tombstones/{root_id}").json() == tombstone
    late = http.post(runs_url(root_id), json=failure(3))
    assert (late.status_code, late.json()["code"]) == (410, "session_deleted")


def test_tombstones_are_kept_for_the_retention(api: Api, http: httpx.Client, root_id: str) -> None:
    """A tombstone is shown for 365 days, then 404 tombstone_not_found."""
    http.post(runs_url(root_id), json=failure())
    http.post(f"{session_url(root_id)}/cancel")
    http.delete(session_url(root_id))
    api.clock.advance(days=365)
    assert http.get(f"/api/agent/runs/tombstones/{root_id}").status_code == 200
    api.clock.advance(seconds=1)
    late = http.get(f"/api/agent/runs/tombstones/{root_id}")
    assert (late.status_code, late.json()["code"]) == (404, "tombstone_not_found")


def test_delete_while_sending_is_409(api: Api, http: httpx.Client, root_id: str) -> None:
    """A session whose resume is being sent cannot be deleted: 409 recovery_in_progress."""
    http.post(runs_url(root_id), json=failure())
    arm(http, root_id)
    drive(api, root_id, "sending")
    http.post(f"{session_url(root_id)}/cancel")
    answer = http.delete(session_url(root_id))
    assert (answer.status_code, answer.json()["code"]) == (409, "recovery_in_progress")


def test_session_view_has_runs_failures_mark_and_timeline(http: httpx.Client, root_id: str) -> None:
    """GET a session: its runs, attempts with failures and banners, the mark and the timeline."""
    http.post(runs_url(root_id), json=failure(session_id="cli-1", capture="live"))
    arm(http, root_id)
    http.post(runs_url(root_id), json=failure(2, QUOTA_LATER))
    view = http.get(session_url(root_id)).json()
    assert (view["state"], view["current"]) == ("paused", {"run_id": "r1", "attempt": 2})
    [run] = view["runs"]
    first = run["attempts"][0]["failure"]
    assert (first["session_id"], first["capture"], first["zone"]) == (
        "cli-1",
        "live",
        "Europe/Berlin",
    )
    assert first["banner"]["business"] == "Paused · provider limit"
    assert view["mark"]["clear_reason"] == "new_failure"
    events = [entry["event"] for entry in view["timeline"]]
    assert events == ["failure_reported", "mark_armed", "mark_cleared", "failure_reported"]


def test_unknown_session_is_404(http: httpx.Client, root_id: str) -> None:
    """GET and delete of a root_id never seen are 404 session_not_found."""
    for answer in (http.get(session_url(root_id)), http.delete(session_url(root_id))):
        assert (answer.status_code, answer.json()["code"]) == (404, "session_not_found")


def test_cancel_of_an_unseen_session_creates_it_cancelled(http: httpx.Client, root_id: str) -> None:
    """Cancel before any report succeeds, and a late limit report can then never arm a mark."""
    answer = http.post(f"{session_url(root_id)}/cancel")
    assert answer.status_code == 200, answer.text
    view = answer.json()
    assert (view["state"], view["cancelled_by"], view["runs"]) == ("cancelled", "alice", [])
    [entry] = view["timeline"]
    assert (entry["event"], entry["detail"]) == ("cancelled", {"before_any_report": True})
    late = http.post(runs_url(root_id), json=failure())
    assert late.status_code == 201, late.text
    assert late.json()["auto_resume"]["code"] == "session_cancelled"
    refused = arm(http, root_id)
    assert (refused.status_code, refused.json()["code"]) == (409, "session_cancelled")
    after = http.get(session_url(root_id)).json()
    assert (after["state"], after["mark"]["state"]) == ("cancelled", None)


def test_after_the_retention_a_deleted_root_starts_afresh(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """A deleted root refuses reports (410) while its tombstone is kept, then starts anew."""
    http.post(runs_url(root_id), json=failure())
    http.post(f"{session_url(root_id)}/cancel")
    assert http.delete(session_url(root_id)).status_code == 200
    api.clock.advance(days=365)
    for refused in (
        http.post(runs_url(root_id), json=failure(observed_at=api.clock.now.isoformat())),
        http.post(runs_url(root_id, what="attempts"), json={"attempt": 1, "status": "started"}),
        http.get(session_url(root_id)),
        http.post(f"{session_url(root_id)}/cancel"),
    ):
        assert (refused.status_code, refused.json()["code"]) == (410, "session_deleted")
    api.clock.advance(seconds=1)
    report = http.post(runs_url(root_id), json=failure(observed_at=api.clock.now.isoformat()))
    assert report.status_code == 201, report.text
    view = http.get(session_url(root_id)).json()
    assert (view["state"], view["created_at"]) == ("paused", iso(api.clock.now))
    assert [entry["event"] for entry in view["timeline"]] == ["failure_reported"]
    assert arm(http, root_id).json()["state"] == "armed"


def test_list_filters_and_pages(http: httpx.Client, root_id: str) -> None:
    """The list filters by state, failure kind, mark state and account, and pages by offset."""
    account = f"acct-{root_id}"
    for index, message in enumerate([failure(), failure(message=NOT_STATED), failure()]):
        http.post(runs_url(f"{root_id}-{index}"), json=message | {"account_key": account})
    arm(http, f"{root_id}-0")

    def listed(**query: str | int) -> list[str]:
        answer = http.get("/api/agent/runs", params={"account_key": account, **query})
        return sorted(item["root_id"] for item in answer.json()["sessions"])

    assert listed() == [f"{root_id}-0", f"{root_id}-1", f"{root_id}-2"]
    assert listed(mark_state="armed") == [f"{root_id}-0"]
    assert listed(state="finished") == []
    page = http.get("/api/agent/runs", params={"account_key": account, "limit": 2}).json()
    assert (len(page["sessions"]), page["next_offset"]) == (2, 2)
    assert page["sessions"][0]["failure"]["failure_kind"] == "provider_quota"


@pytest.mark.parametrize("query", [{"state": "bogus"}, {"limit": 0}, {"failure_kind": "x"}])
def test_list_refuses_bad_filters(http: httpx.Client, query: dict[str, object]) -> None:
    """A filter outside its values is 422 invalid_request."""
    answer = http.get("/api/agent/runs", params=query)
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_request")


def test_an_answer_that_does_not_fit_its_model_is_a_500_and_is_not_sent(
    api: Api, root_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session route checks the domain's answer against its declared model: an answer with
    a field the model does not declare, or without one it requires, is a 500 problem, and
    nothing of that answer reaches the host."""
    with api.client() as http:
        http.post(runs_url(root_id), json=failure())
    built = session_views.session_view
    misfits = (
        lambda *args, **kw: built(*args, **kw) | {"stray": "x"},
        lambda *args, **kw: {k: v for k, v in built(*args, **kw).items() if k != "mark"},
    )
    for misfit in misfits:
        monkeypatch.setattr(session_views, "session_view", misfit)
        with api.client() as http:  # a 500 closes its connection
            answer = http.get(session_url(root_id))
        assert answer.status_code == 500 and root_id not in answer.text
