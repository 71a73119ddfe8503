"""`rewake ls` / `show` / `auto-resume` rendering: fixed API JSON and a fixed `now` in, text out.

The times are worked out by hand: Europe/Berlin is UTC+1 (CET) in late November.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from rich.console import Console, RenderableType

from rewake.runner.commands import status_text as views

BERLIN = ZoneInfo("Europe/Berlin")
#: 15:26:30 CET.
NOW = datetime(2026, 11, 30, 14, 26, 30, tzinfo=UTC)
ROOT = "claude-3f6c2a9e-1b7d-4c55-9e0a-8d2f4b6a1c03"


def render(renderable: RenderableType, width: int = 100) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, highlight=False).print(renderable)
    return out.getvalue()


def summary(**failure: Any) -> dict[str, Any]:
    base = {
        "failure_kind": "provider_quota",
        "provider": "claude",
        "reset_at": "2026-11-30T16:40:00Z",
        # Written against the store's clock: the views must not repeat its countdown.
        "banner": {"business": "Paused · provider limit", "detail": "resets 17:40 CET, in 9 h"},
    }
    return {"root_id": ROOT, "state": "paused", "failure": {**base, **failure}}


ARMED = {
    "state": "armed",
    "run_id": "interactive",
    "attempt": 1,
    "reset_at": "2026-11-30T16:40:00Z",
    "due_at": "2026-11-30T16:41:30Z",
    "armed_by": "local:alice",
    "armed_at": "2026-11-30T14:20:00Z",
    "warnings": ["executor is log: nothing will be resumed"],
    "offer": {"available": False, "code": "attempt_already_resumed", "detail": None},
}


def test_ls_row_counts_down_to_the_reset_and_the_resume_from_now() -> None:
    """Reset 16:40Z is 17:40 CET, 2 h 13 min 30 s after 14:26:30Z; due 16:41:30Z is 2 h 15 min."""
    row = views.ls_row(summary(), ARMED, NOW, BERLIN)
    assert row == views.LsRow(
        name=ROOT,
        provider="claude",
        state="paused",
        banner="Paused · provider limit",
        reset="17:40 CET, in 2 h 13 min",
        resume_due="17:41 CET, in 2 h 15 min",
        mark="armed",
    )


def test_ls_row_without_a_stated_reset_says_why_and_shows_no_resume() -> None:
    """A limit with no reset shows the banner's reason, no due time, and mark `off`."""
    banner = {"business": "Paused · provider limit", "detail": "the reset time was not stated"}
    failure = summary(reset_at=None, banner=banner)
    row = views.ls_row(failure, None, NOW, BERLIN)
    assert (row.reset, row.resume_due, row.mark) == ("the reset time was not stated", "—", "off")


def test_ls_row_of_a_session_without_failure_is_dashes() -> None:
    """A running session with no failure shows dashes, not errors."""
    row = views.ls_row({"root_id": "r", "state": "running", "failure": None}, {}, NOW, BERLIN)
    assert (row.provider, row.banner, row.reset, row.resume_due, row.mark) == (
        "—", "—", "—", "—", "off",
    )  # fmt: skip


def test_ls_row_does_not_show_a_due_time_for_a_mark_that_ended() -> None:
    """A done mark's due time is history: the RESUME DUE column is a dash."""
    row = views.ls_row(summary(), {**ARMED, "state": "done", "outcome": "done"}, NOW, BERLIN)
    assert (row.resume_due, row.mark) == ("—", "done")


def test_mark_state_words_name_the_reason() -> None:
    """Cleared and failed marks say why; a mark that never existed is `off`."""
    assert views.mark_state_words({"state": "cleared", "clear_reason": "manual_resume"}) == (
        "cleared (manual_resume)"
    )
    assert views.mark_state_words({"state": "failed", "outcome": "exit_1"}) == "failed (exit_1)"
    assert views.mark_state_words({"state": None, "enabled": False}) == "off"


def test_when_gives_the_date_for_another_day() -> None:
    """03:00Z on 1 Dec is 04:00 CET the next day, 4 h 30 min after 22:30Z."""
    now = datetime(2026, 11, 30, 22, 30, tzinfo=UTC)
    assert views.when("2026-12-01T03:00:00Z", now, BERLIN) == "Tue 1 Dec 04:00 CET, in 4 h 30 min"


def test_when_says_a_past_instant_has_passed_and_bad_values_are_dashes() -> None:
    """A reset before now has `already passed`; null or junk is a dash, never an error."""
    assert views.when("2026-11-30T14:00:00Z", NOW, BERLIN) == "15:00 CET, already passed"
    assert views.when(None, NOW, BERLIN) == "—"
    assert views.when("soon", NOW, BERLIN) == "—"


def test_ls_is_a_table_in_a_wide_terminal_with_the_name_whole() -> None:
    """From 120 columns up the list is one table row per session, the NAME never wrapped."""
    rows = [views.ls_row(summary(), ARMED, NOW, BERLIN)]
    lines = render(views.ls_renderable(rows, 160), width=160).splitlines()
    assert lines[0].split() == [
        "NAME", "PROVIDER", "STATE", "BANNER", "RESET", "RESUME", "DUE", "MARK",
    ]  # fmt: skip
    assert lines[1].split() == [
        ROOT, "claude", "paused", "Paused", "·", "provider", "limit", "17:40", "CET,", "in", "2",
        "h", "13", "min", "17:41", "CET,", "in", "2", "h", "15", "min", "armed",
    ]  # fmt: skip


def test_ls_is_a_block_per_session_in_a_narrow_terminal() -> None:
    """Below 120 columns each session is its name, then its state, then its times."""
    rows = [views.ls_row(summary(), ARMED, NOW, BERLIN)]
    assert render(views.ls_renderable(rows, 80), width=80).splitlines() == [
        ROOT,
        "  claude · paused · Paused · provider limit · mark armed",
        "  reset 17:40 CET, in 2 h 13 min · resumes 17:41 CET, in 2 h 15 min",
    ]


def test_mark_lines_show_due_time_armer_and_warnings() -> None:
    """An armed mark: when it resumes, who armed it, for which reset, and every warning."""
    assert views.mark_lines(ARMED, ROOT, NOW, BERLIN) == [
        "Auto-resume armed: resumes 17:41 CET, in 2 h 15 min",
        "  armed by local:alice at 15:20 CET, for the reset at 17:40 CET",
        "  ! executor is log: nothing will be resumed",
    ]


def test_mark_lines_of_a_deferred_mark_say_it_waits_and_why() -> None:
    """A mark armed again after a deferral: still its due time, and the reason nothing was
    sent (an open Claude holds the conversation) on a line of its own."""
    why = "an open Claude Code (pid 4242) holds this conversation; nothing was sent"
    deferred = {**ARMED, "warnings": [], "outcome": "deferred", "outcome_detail": why}
    assert views.mark_lines(deferred, ROOT, NOW, BERLIN) == [
        "Auto-resume armed: resumes 17:41 CET, in 2 h 15 min",
        "  armed by local:alice at 15:20 CET, for the reset at 17:40 CET",
        f"  waiting, nothing sent: {why}",
    ]


def test_mark_lines_offer_the_command_or_say_why_not() -> None:
    """No mark: the command that arms it when offered, else the refusal in words."""
    offered = {"state": None, "offer": {"available": True, "code": None, "detail": None}}
    assert views.mark_lines(offered, ROOT, NOW, BERLIN) == [
        "Auto-resume off",
        f"  can be turned on: rewake auto-resume {ROOT} on",
    ]
    refused = {"state": None, "offer": {"available": False, "code": "reset_not_stated",
                                        "detail": "not_stated: no reset time"}}  # fmt: skip
    assert views.mark_lines(refused, ROOT, NOW, BERLIN)[1] == (
        "  not offered: the limit message states no reset time, so rewake cannot tell when to "
        "resume (not_stated: no reset time)"
    )


def test_mark_lines_of_an_uncertain_mark_say_how_to_settle_it() -> None:
    """An uncertain mark is never re-sent: the view says so and names the resolve route."""
    lines = views.mark_lines({"state": "uncertain", "outcome": "uncertain"}, ROOT, NOW, BERLIN)
    assert lines[0] == "Auto-resume uncertain"
    assert f"POST /api/agent/runs/{ROOT}/auto-resume/resolve" in lines[-1]


def test_refusal_words_for_every_arming_refusal_and_an_unknown_code() -> None:
    """Known 409 codes read as sentences; an unknown code is still shown, spaced out."""
    assert "--despite-native" in views.refusal_words("native_auto_continue")
    assert views.refusal_words("some_new_code") == "some new code"


FAILURE = {
    "run_id": "interactive",
    "attempt": 1,
    "failure_kind": "provider_quota",
    "halted": False,
    "observed_at": "2026-11-30T14:05:00Z",
    "zone": "Europe/Berlin",
    "truncated": False,
    "message": "\n".join(f"line {n}" for n in range(1, 21)) + "\n" + "x" * 500,
    "verdict": {
        "kind": "provider_quota",
        "provider": "claude",
        "reset_at": "2026-11-30T16:40:00Z",
        "resolution_s": 0,
        "form": "structured",
        "scope": "five_hour",
    },
    "banner": {
        "business": "Paused · provider limit",
        "detail": "resets 17:40 CET, in 9 h",
        "technical": "provider_quota: verdict provider_quota from claude",
    },
}
SESSION = {
    "root_id": ROOT,
    "state": "paused",
    "created_at": "2026-11-30T14:05:01Z",
    "updated_at": "2026-11-30T14:20:00Z",
    "current": {"run_id": "interactive", "attempt": 1},
    "runs": [
        {
            "run_id": "interactive",
            "status": "paused",
            "current_attempt": 1,
            "attempts": [
                {
                    "attempt": 1,
                    "status": "failed",
                    "started_at": None,
                    "completed_at": None,
                    "failed_at": "2026-11-30T14:05:01Z",
                    "failure": FAILURE,
                }
            ],
        }
    ],
    "mark": ARMED,
    "timeline": [
        {
            "at": "2026-11-30T14:05:01Z",
            "event": "failure_reported",
            "actor": "local:alice",
            "run_id": "interactive",
            "attempt": 1,
            "detail": {"failure_kind": "provider_quota", "refusal": None, "warnings": []},
        },
        {
            "at": "2026-11-30T14:20:00Z",
            "event": "mark_armed",
            "actor": "local:alice",
            "run_id": "interactive",
            "attempt": 1,
            "detail": None,
        },
    ],
}


def test_failure_lines_recount_the_banner_and_keep_only_the_tail_cut_to_width() -> None:
    """The banner is counted from now (not the stored "in 9 h"); the CLI text shows its last
    8 non-empty lines, a 500-character line cut to 200 with an ellipsis."""
    lines = views.failure_lines(FAILURE, NOW, BERLIN)
    assert lines[:3] == [
        "run interactive attempt 1 · observed 15:05 CET (zone Europe/Berlin)",
        "  Paused · provider limit: resets 17:40 CET, in 2 h 13 min",
        "  provider_quota: verdict provider_quota from claude",
    ]
    tail = lines[3:]
    assert tail[0] == "  │ line 14"
    assert len(tail) == views.TAIL_LINES
    assert tail[-1] == "  │ " + "x" * 199 + "…"


def test_show_view_has_summary_mark_attempts_failures_and_timeline() -> None:
    """`rewake show` prints the session, banner, mark, attempts, failures and the timeline,
    leaving empty detail fields out of the timeline."""
    text = render(views.show_view(SESSION, NOW, BERLIN), width=160)
    assert text.splitlines()[:4] == [
        f"{ROOT} · paused",
        "  created 15:05 CET · updated 15:20 CET · current run interactive, attempt 1",
        "Paused · provider limit: resets 17:40 CET, in 2 h 13 min",
        "Auto-resume armed: resumes 17:41 CET, in 2 h 15 min",
    ]
    for heading in ("Attempts", "Failures", "Timeline"):
        assert f"\n{heading}\n" in text
    assert "failure_kind=provider_quota" in text
    assert "refusal=" not in text
    assert "mark_armed" in text


def test_show_view_says_what_a_workflow_resume_replayed_and_what_ran_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose record keeps workflow predictions (a sweeper's resume of a paused
    workflow): `rewake show` lists each, with how many agents ran live once known."""
    from rewake.runner.store import records

    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path))
    predicted = {"run_id": "wf_ce797aee-628", "cached": 3, "total": 6, "live": 3}
    records.save(records.RunRecord(
        root_id=ROOT, run_id="interactive", provider="claude", cwd="/work", args=[],
        extra={"workflow_predictions": {"2": [{**predicted, "ran_live": 3}],
                                        "3": [{**predicted, "cached": 5, "live": 1}]}},
    ))  # fmt: skip
    text = render(views.show_view(SESSION, NOW, BERLIN), width=160)
    assert "\nWorkflow resumes\n" in text
    assert (
        "  attempt 2: wf_ce797aee-628 replays 3 of 6 agents from cache, 3 to run live; "
        "3 ran live" in text
    )
    assert "  attempt 3: wf_ce797aee-628 replays 5 of 6 agents from cache, 1 to run live\n" in text


def test_show_view_of_a_session_without_workflows_has_no_workflow_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No record (or no predictions): no "Workflow resumes" heading."""
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path))
    assert "Workflow resumes" not in render(views.show_view(SESSION, NOW, BERLIN), width=160)


def test_current_failure_is_none_when_the_current_attempt_did_not_fail() -> None:
    """A session whose current attempt is running has no current failure (and no banner)."""
    running = {**SESSION, "current": {"run_id": "interactive", "attempt": 2}}
    assert views.current_failure(running) is None
    assert "Paused" not in views.summary_lines(running, NOW, BERLIN)[-1]


def test_refusal_words_do_not_repeat_a_detail_that_only_restates_the_code() -> None:
    """attempt_already_resumed with the store's own detail reads once, not "…never repeated
    (this attempt's auto-resume already ran…)"; a detail that says which case is kept."""
    from rewake.marks.rules import OfferFacts, auto_resume_refusal

    facts = OfferFacts(
        cancelled=False, has_failure=True, run_paused_at_failure=True, failure_kind=None,
        halted=False, reset_at=None, refusal_code=None, refusal_detail=None,
        native_auto_continue=False, attempt_resumed_before=True,
    )  # fmt: skip
    refused = auto_resume_refusal(facts, despite_native=False)
    assert refused is not None and refused.code == "attempt_already_resumed"
    words = views.refusal_words(refused.code, refused.detail)
    assert words == views.REFUSALS["attempt_already_resumed"].reason and "(" not in words
    native = views.refusal_words("native_auto_continue", "send despite_native: true")
    assert "despite_native:" not in native
    halted = views.refusal_words("not_paused_on_provider_limit", "the run was halted")
    assert halted.endswith("(the run was halted)")


def test_a_conversation_not_saved_reads_as_the_cli_flag_not_the_api_field() -> None:
    """The store's refusal of a Gemini limit with nothing saved names its JSON field; the
    terminal says why and names --fresh-if-missing instead."""
    from datetime import UTC, datetime

    from rewake.marks.rules import OfferFacts, auto_resume_refusal

    facts = OfferFacts(
        cancelled=False, has_failure=True, run_paused_at_failure=True,
        failure_kind="provider_quota", halted=False,
        reset_at=datetime(2026, 11, 30, 16, 40, tzinfo=UTC), refusal_code=None,
        refusal_detail=None, native_auto_continue=False, attempt_resumed_before=False,
        conversation_saved=False,
    )  # fmt: skip
    refused = auto_resume_refusal(facts, despite_native=False)
    assert refused is not None and refused.code == "conversation_not_saved"
    assert auto_resume_refusal(facts, despite_native=False, fresh_if_missing=True) is None
    words = views.refusal_words(refused.code, refused.detail)
    assert "saved no conversation" in words and "--fresh-if-missing" in words
    assert "fresh_if_missing:" not in words


def test_a_local_store_answers_as_of_the_commands_clock_in_the_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """open_store(clock=...) reads no clock of its own, and without REWAKE_DATABASE_URL its
    database is <state dir>/rewake.db (created), not rewake.db in the working directory."""
    from rewake.runner.store.stores import LocalStore, open_store

    monkeypatch.delenv("REWAKE_URL", raising=False)
    monkeypatch.delenv("REWAKE_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    env = {"REWAKE_STATE_DIR": str(tmp_path / "state")}
    store = open_store(env, clock=lambda: NOW)
    try:
        assert isinstance(store, LocalStore) and store.context().now == NOW
        assert store.settings.database_url == f"sqlite:///{tmp_path / 'state' / 'rewake.db'}"
    finally:
        store.close()
    assert (tmp_path / "state" / "rewake.db").is_file() and not (tmp_path / "rewake.db").exists()


def test_show_prints_what_the_cli_reported_when_its_text_says_nothing() -> None:
    """A failure whose message is only Codex's stdin notice shows its cli_text, headed as
    such and with control characters escaped; a message with words is shown instead."""
    reported = "You’ve hit your usage limit.\n\x1b]0;owned\x07Try again at 5:46 PM."
    failure = FAILURE | {
        "message": "Reading additional input from stdin...\n",
        "cli_text": reported,
    }
    text = render(views.show_view(SESSION | {"runs": [_one_run(failure)]}, NOW, BERLIN), 160)
    assert "  what the CLI reported (from its error events):" in text
    assert "  │ You’ve hit your usage limit." in text
    assert "  │ \\x1b]0;owned\\x07Try again at 5:46 PM." in text
    assert "\x1b]0;" not in text and "Reading additional input" not in text
    printed = views.failure_lines(FAILURE | {"cli_text": reported}, NOW, BERLIN)
    assert "  │ line 20" in printed and not any("reported" in line for line in printed)


def _one_run(failure: dict[str, Any]) -> dict[str, Any]:
    [run] = SESSION["runs"]
    [attempt] = run["attempts"]
    return run | {"attempts": [attempt | {"failure": failure}]}


def test_an_ended_mark_says_how_it_ended_in_words_before_the_detail() -> None:
    """`rewake show` of a failed resume: the outcome in words, then the far side's detail."""
    mark = {"state": "failed", "outcome": "exit_1", "outcome_detail": "pid 29954 exited 1"}
    [line, *_] = views.mark_lines(mark, ROOT, NOW, BERLIN)
    assert line == (
        "Auto-resume failed (exit_1): the resume command failed (exit status 1); pid 29954 exited 1"
    )


def test_the_limit_line_stays_in_view_when_the_cli_printed_more_after_it() -> None:
    """Codex prints its limit, then more stderr: `show` keeps the line the verdict rests on in
    view (first, then "…" and the last lines), instead of only the last 8 lines."""
    limit = "ERROR: You've hit your usage limit. Try again at 5:40 PM."
    text = "\n".join(
        ["starting", limit, *(f"warning {n}: retry telemetry" for n in range(12))]
    )  # fmt: skip
    start = text.index(limit)
    failure = FAILURE | {
        "message": text, "cli_text": None,
        "verdict": {"kind": "provider_quota",
                    "evidence": {"text": limit, "start": start, "end": start + len(limit)}},
    }  # fmt: skip
    tail = views.failure_lines(failure, NOW, BERLIN)[3:]
    assert tail[0] == f"  │ {limit}" and tail[1] == "  │ …"
    assert tail[-1] == "  │ warning 11: retry telemetry" and len(tail) == views.TAIL_LINES


def test_the_evidence_of_a_json_event_is_its_field_not_the_whole_event() -> None:
    """A verdict that rests on a whole stream-json event is shown as the field that says the
    limit, on the page and in `show`."""
    from rewake.reports.evidence import evidence_line

    said = "Claude AI usage limit reached|1764518400"
    event = json.dumps({"type": "result", "subtype": "success", "is_error": True,
                        "session_id": "5f0c" * 9, "usage": {"input_tokens": 3},
                        "result": said})  # fmt: skip
    text = "thinking…\n" + event + "\n"
    evidence = {"text": event, "start": 10, "end": 10 + len(event)}
    assert evidence_line(text, evidence) == said
    from rewake.web import detail

    part = detail.excerpt(text, evidence)
    assert part.hit == said
    assert part.before.endswith('"result": "') and part.after.startswith('"}')
