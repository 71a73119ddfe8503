"""The words the web page derives from the API's JSON (rewake.web.cards, rewake.web.detail): pure
functions, tested without a server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from rewake.web import cards as views
from rewake.web import detail, fleet


def mark(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"state": None, "warnings": [], "offer": {"available": False}}
    return base | fields


def test_evidence_is_found_again_when_its_offsets_do_not_fit_the_stored_text() -> None:
    """Offsets into another text (events, a cut) fall back to the evidence's last occurrence."""
    part = detail.excerpt("a limit\nb limit\n", {"text": "limit", "start": 0, "end": 5})
    assert (part.before, part.hit, part.after) == ("a limit\nb ", "limit", "\n")


def test_evidence_not_in_the_text_is_shown_apart() -> None:
    """Evidence read from structured events is shown beside the text's tail, not marked in it."""
    part = detail.excerpt("x" * 5000, {"text": "resetsAt 1764518400", "start": 3, "end": 9})
    assert (part.hit, part.evidence_elsewhere) == ("", "resetsAt 1764518400")
    assert (part.cut_before, len(part.before)) == (1000, detail.TAIL_CHARS)


def test_long_text_is_cut_around_the_evidence_and_controls_are_visible() -> None:
    """Only the evidence's surroundings are shown; ANSI escapes show as ␛, offsets intact."""
    text = "y" * 3000 + "\x1b[1mhit\x1b[0m" + "z" * 3000
    start = text.index("hit")
    part = detail.excerpt(text, {"text": "hit", "start": start, "end": start + 3})
    assert part.hit == "hit"
    assert part.before.endswith("␛[1m") and part.after.startswith("␛[0m")
    assert (part.cut_before, part.cut_after) == (start - detail.CONTEXT_CHARS, 3000 + 4 - 2000)


def test_a_mark_moved_later_than_its_reset_is_held_for_the_account() -> None:
    """due_at later than reset + resolution + delay (and than arming) means the account held it."""
    held = mark(
        state="armed", reset_at="2026-11-30T16:00:00Z", resolution_s=60, armed_by="alice",
        armed_at="2026-11-30T13:06:00Z", due_at="2026-11-30T18:01:30Z", account_key="team-a",
    )  # fmt: skip
    shown = views.mark_view(held, resume_delay_s=30)
    assert shown is not None and shown.detail is not None
    assert shown.detail.startswith("held for the account team-a")
    on_time = held | {"due_at": "2026-11-30T16:01:30Z"}
    armed_late = held | {"armed_at": "2026-11-30T18:01:30Z"}
    for plain in (on_time, armed_late):
        shown = views.mark_view(plain, resume_delay_s=30)
        assert shown is not None and shown.detail == "armed by alice; resumes once, after the reset"


def test_a_deferred_mark_reads_as_waiting_with_its_reason() -> None:
    """Armed again after a deferral: the page says it waits for the open session, with the
    reason as the words, and counts down to the next look."""
    why = "an open Claude Code (pid 4242) holds this conversation; nothing was sent"
    deferred = mark(
        state="armed", armed_by="alice", due_at="2026-11-30T16:41:30Z", outcome="deferred",
        outcome_detail=why,
    )  # fmt: skip
    shown = views.mark_view(deferred, resume_delay_s=30)
    assert shown is not None
    assert (shown.tone, shown.headline, shown.detail) == (
        "warn", "Waiting: an open session holds the conversation", why,
    )  # fmt: skip
    assert shown.due_at == "2026-11-30T16:41:30Z"


@pytest.mark.parametrize(
    "state",
    ["armed", "claimed", "sending", "uncertain", "done", "failed", "logged", "expired",
     "superseded", "cleared", "something_new"],
)  # fmt: skip
def test_a_marks_warnings_show_whatever_its_state(state: str) -> None:
    """Every mark state shows the warnings the API gives it, the uncertain one included."""
    given = ["no sweeper seen in the last 90 s", "executor is log: nothing will be resumed"]
    the_mark = mark(
        state=state, warnings=given, armed_by="alice", due_at="2026-11-30T16:41:30Z",
        run_id="r1", attempt=1, clear_reason="disabled",
    )  # fmt: skip
    shown = views.mark_view(the_mark, resume_delay_s=30)
    assert shown is not None and shown.warnings == tuple(given)


@pytest.mark.parametrize(
    ("state", "the_mark", "kind"),
    [
        ("paused", mark(state="armed"), "disarm"),
        ("paused", mark(state="claimed"), "disarm"),
        ("paused", mark(state="sending"), "none"),
        ("paused", mark(state="uncertain"), "resolve"),
        ("paused", mark(state="cleared", offer={"available": True}), "arm"),
        ("paused", mark(offer={"available": False, "code": "reset_not_stated"}), "none"),
        ("paused", mark(offer={"code": "native_auto_continue"}), "arm_despite_native"),
        ("paused", mark(state="done", offer={"code": "attempt_already_resumed"}), "none"),
        ("running", mark(offer={"code": "not_paused_on_provider_limit"}), "none"),
    ],
)
def test_each_state_offers_the_one_action_that_fits(
    state: str, the_mark: dict[str, Any], kind: str
) -> None:
    """Off for a live mark, settle for an uncertain one, on where the API accepts it, else no
    button at all (never a disabled one)."""
    assert views.action_for(state, the_mark).kind == kind


def test_a_refused_offer_says_why_without_a_button() -> None:
    """A paused session the API would refuse gets the refusal in words, and no button."""
    action = views.action_for(
        "paused",
        mark(offer={"code": "reset_not_stated", "detail": "the reset time was not stated"}),
    )
    assert (action.kind, action.code) == ("none", "reset_not_stated")
    assert action.reason is not None
    assert action.reason.startswith("Auto-resume is not offered: the limit message states no")


def test_a_session_waiting_will_not_help_says_there_is_nothing_to_wait_for() -> None:
    """For a blocked session (credits, sign-in), the reason is that no reset ends the pause."""
    action = views.action_for("paused", mark(offer={"code": "reset_not_stated"}), blocked=True)
    assert (action.kind, action.reason) == ("none", views.BLOCKED_REASON)


def test_banner_words_for_sign_in_and_for_no_reset() -> None:
    """A sign-in banner names its command as code; a no_reset one says what to do instead."""
    login = views.banner_view(
        {"failure_kind": "login_required", "reset_at": None, "banner": {
            "business": "Paused · sign-in needed", "detail": "run `/login`",
            "technical": "login_required: verdict login_required from claude"}}
    )  # fmt: skip
    assert login is not None and (login.detail, login.command) == ("run", "/login")
    credits = views.banner_view(
        {"failure_kind": "provider_quota", "reset_at": None, "banner": {
            "business": "Paused · provider limit", "detail": "waiting will not help",
            "technical": "provider_quota: verdict provider_quota from codex; refusal no_reset: x"}}
    )  # fmt: skip
    assert credits is not None and credits.detail == "waiting will not help"
    assert credits.blocked and login.blocked


@pytest.mark.parametrize(
    ("kind", "technical", "command", "step"),
    [
        ("login_required", "login_required: verdict login_required from claude", "/login",
         ("run ", "/login", " in the session, then resume it")),
        ("provider_quota", "provider_quota: verdict provider_quota from codex; scope credits; "
         "refusal no_reset: out of credits",  None,
         ("add credits to the codex account, then resume the session", "", "")),
        ("provider_quota", "provider_quota: verdict provider_quota from claude; scope spend_cap; "
         "refusal no_reset: a cap", None,
         ("raise the spend cap of the claude account, then resume the session", "", "")),
        ("provider_quota", "provider_quota: verdict provider_quota from codex; refusal "
         "not_stated: later", None, None),
    ],
)  # fmt: skip
def test_waiting_will_not_help_names_the_next_step(
    kind: str, technical: str, command: str | None, step: tuple[str, str, str] | None
) -> None:
    """Sign-in, credits and spend caps get the next step in words; a reset not stated none."""
    provider = "claude" if "claude" in technical else "codex"
    detail = f"run `{command}`" if command else "waiting will not help"
    shown = views.banner_view(
        {"failure_kind": kind, "reset_at": None, "provider": provider,
         "banner": {"business": "Paused", "detail": detail, "technical": technical}}
    )  # fmt: skip
    assert shown is not None and shown.next_step == step and shown.blocked == (step is not None)


@pytest.mark.parametrize(
    ("outcome", "said", "words"),
    [
        ("conversation_missing", "no conversation to continue",
         "the conversation was gone: the CLI found nothing to continue"),
        ("run_alive", '{"code": "run_alive"}',
         "the host refused: another run of this session is alive"),
        ("exit_1", "pid 29954 exited 1", "the resume command failed (exit status 1)"),
        ("exit_1", "exited 1: Error: Missing environment variable: `MOCK_OPENAI_KEY`.",
         "the resume command failed (exit status 1): Error: Missing environment variable: "
         "`MOCK_OPENAI_KEY`."),
        ("http_503", '{"status": 503, "code": "maintenance", "detail": "host down for upgrade"}',
         "the host answered HTTP 503 instead of accepting the resume: host down for upgrade"),
        ("http_500", "boom", "the host answered HTTP 500 instead of accepting the resume: boom"),
        ("question_limit", '{"code": "question_limit"}', "the host refused: question limit"),
    ],
)  # fmt: skip
def test_a_failed_resume_says_why_in_words_with_the_detail_beside(
    outcome: str, said: str, words: str
) -> None:
    """The outcome code becomes words, with what the program or host said beside them (its last
    stderr line, its problem's detail); "pid 29954 exited 1" adds nothing, so it stays only the
    technical part."""
    shown = views.mark_view(
        mark(state="failed", outcome=outcome, outcome_detail=said), resume_delay_s=30
    )
    assert shown is not None and (shown.headline, shown.detail) == ("The resume failed", words)
    assert shown.technical == f"outcome {outcome}: {said}"


def test_an_expiry_for_an_unseen_host_says_so() -> None:
    """An expired mark whose host was not seen says that, not the code host_unseen."""
    shown = views.mark_view(
        mark(state="expired", outcome="expired", outcome_detail="host_unseen"), resume_delay_s=30
    )
    assert shown is not None
    assert shown.detail == "its host was not seen for too long, so it was not sent"


def test_the_timeline_keeps_the_apis_oldest_first_order() -> None:
    """The session page lists the timeline oldest first, as the API and `rewake show` do."""
    entries = [
        {"at": "2026-11-30T13:00:00Z", "event": "failure_reported"},
        {"at": "2026-11-30T13:01:00Z", "event": "mark_armed"},
    ]
    assert [entry.event for entry in detail.timeline(entries)] == [
        "failure_reported", "mark_armed"
    ]  # fmt: skip


def _session(root_id: str, reset: str | None, account: str | None = "team-a") -> dict[str, Any]:
    failure = {"reset_at": reset, "account_key": account, "provider": "codex"}
    return {"root_id": root_id, "state": "paused", "failure": failure}


def test_the_picture_places_resets_and_resumes_per_account_within_24_hours() -> None:
    """Resets and live marks' due times sit on one 24 h axis from now, one lane per account
    (the provider when none); what lies beyond is counted, what is past is left out."""
    now = datetime(2026, 11, 30, 13, 0, tzinfo=UTC)
    shown = fleet.fleet(
        [
            (_session("a", "2026-11-30T19:00:00Z"),
             mark(state="armed", due_at="2026-11-30T19:01:30Z")),
            (_session("b", "2026-11-30T12:00:00Z", None), mark(state="cleared")),
            (_session("c", "2026-12-02T13:00:00Z", "team-b"), mark()),
            (_session("d", "2026-12-01T01:00:00Z", None), mark()),
        ],
        now,
    )  # fmt: skip
    assert [lane.account for lane in shown.lanes] == ["codex", "team-a"]
    team_a = shown.lanes[1].events
    assert [(e.kind, e.root_id, e.labelled) for e in team_a] == [
        ("reset", "a", True), ("resume", "a", False)
    ]  # fmt: skip
    assert team_a[0].x == fleet.LABEL_W + fleet.AXIS_W / 4
    assert shown.lanes[0].events[0].x == fleet.LABEL_W + fleet.AXIS_W / 2
    assert shown.later == 1 and len(shown.ticks) == 8


def test_an_overdue_resume_sits_at_now() -> None:
    """A live mark already due is drawn at now and says it is due now."""
    now = datetime(2026, 11, 30, 13, 0, tzinfo=UTC)
    shown = fleet.fleet(
        [(_session("x", None), mark(state="claimed", due_at="2026-11-30T12:59:00Z"))], now
    )
    (event,) = shown.lanes[0].events
    assert (event.x, event.overdue, event.words) == (fleet.LABEL_W, True, "resume overdue, due now")


def test_a_part_of_the_text_counts_its_cuts_from_the_whole() -> None:
    """The answer's part begins at character 10,000 of a 30,000-character text: evidence
    offsets into the whole are found in the part, and the characters cut before and after
    are counted from the whole text, not from the part."""
    part_text = "p" * 3000 + "hit" + "q" * 5000
    start = 10_000 + 3000
    part = detail.excerpt(
        part_text, {"text": "hit", "start": start, "end": start + 3},
        starts_at=10_000, whole_chars=30_000,
    )  # fmt: skip
    assert part.hit == "hit"
    assert part.cut_before == start - detail.CONTEXT_CHARS
    assert part.cut_after == 30_000 - (start + 3 + detail.CONTEXT_CHARS)
