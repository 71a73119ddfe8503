"""The web page's routes over HTTP, on each database: what the list and session pages render,
the tombstone page, and clear error pages (never a 500) for unknown ids and bad input."""

from __future__ import annotations

import httpx
import pytest

from rewake.marks import lifecycle as sweeper
from rewake.security.browser import COOKIE
from tests.support.api import ALICE, Api, loopback_client
from tests.support.reports import GEMINI_QUOTA, LOGIN, NOT_STATED, PASSED, QUOTA, failure, runs_url

CREDITS = "■ Your workspace is out of credits. Add credits to continue."

HTML = {"Accept": "text/html"}


def test_list_page_shows_a_session_with_its_banner_and_action(
    http: httpx.Client, root_id: str
) -> None:
    """The list renders the banner in words, the reset as a <time> in UTC with the display
    zone's text, a countdown, the technical label and the turn-on button."""
    http.post(runs_url(root_id), json=failure(account_key=root_id))
    page = http.get("/", params={"state": "paused", "account_key": root_id}, headers=HTML)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    card = _card(page.text, root_id)
    assert "Paused · provider limit" in card
    assert '<time datetime="2026-11-30T16:40:00Z" data-local>17:40 CET</time>' in card
    assert 'data-until="2026-11-30T16:40:00Z"' in card and "in 3 h 34 min" in card
    assert "reset_at 2026-11-30T16:40:00Z +60 s (named_zone)" in card
    assert 'data-action="arm">Turn auto-resume on</button>' in card
    assert 'data-now="2026-11-30T13:06:00Z"' in page.text


def test_a_refused_offer_has_no_button_and_says_why(http: httpx.Client, root_id: str) -> None:
    """Where the API would answer 409, no turn-on button is drawn; the reason is in words."""
    http.post(runs_url(root_id), json=failure(message=NOT_STATED, account_key=root_id))
    card = _card(http.get("/", params={"account_key": root_id}, headers=HTML).text, root_id)
    assert "<button" not in card and "disabled" not in card
    assert 'data-code="reset_not_stated"' in card
    assert (
        "Auto-resume is not offered: the limit message states no reset time, so rewake cannot "
        "tell when to resume. rewake says: the reset time was not stated"
    ) in card


def test_a_conversation_not_saved_offers_no_button_and_says_why(
    http: httpx.Client, root_id: str
) -> None:
    """A Gemini limit whose CLI saved no conversation gets no "Turn auto-resume on" button but
    the reason and the command that starts the task afresh, on the list and the session page;
    the CLI's words beside it stay escaped."""
    body = failure(
        message=GEMINI_QUOTA,
        provider="gemini",
        conversation_saved=False,
        cli_text="<b>quota</b>",
        account_key=root_id,
    )
    http.post(runs_url(root_id), json=body)
    for page in (
        http.get("/", params={"account_key": root_id}, headers=HTML).text,
        http.get(f"/sessions/{root_id}", headers=HTML).text,
    ):
        card = _card(page, root_id)
        assert "Turn auto-resume on" not in card and 'data-action="arm"' not in card
        assert 'data-code="conversation_not_saved"' in card
        assert (
            "Auto-resume is not offered: the CLI saved no conversation for this attempt (the "
            "model never answered in it), so a resume would have nothing to continue"
        ) in card
        assert "rewake auto-resume NAME on --fresh-if-missing" in card
        assert "fresh_if_missing: true" not in card  # the API's words name a JSON field
        assert "<b>quota</b>" not in page


@pytest.mark.parametrize(
    ("provider", "message", "step"),
    [
        ("codex", CREDITS, "add credits to the codex account, then resume the session."),
        ("claude", LOGIN, "run <code>/login</code> in the session, then resume it."),
    ],
)
def test_a_card_waiting_will_not_help_looks_different_and_names_the_next_step(
    http: httpx.Client, root_id: str, provider: str, message: str, step: str
) -> None:
    """Credits and sign-in cards are marked blocked, say the next step, and draw no button."""
    http.post(runs_url(root_id), json=failure(message=message, provider=provider))
    page = http.get(f"/sessions/{root_id}", headers=HTML).text
    assert f'class="card state-paused blocked" data-root-id="{root_id}"' in page
    card = _card(page, root_id)
    assert '<span class="chip chip-blocked">waiting will not help</span>' in card
    assert f"<strong>Next step:</strong> {step}" in card
    assert "<button" not in card
    assert "Auto-resume is not offered: no reset will end this pause" in card


def send(api: Api, http: httpx.Client, root_id: str, *outcome: str) -> None:
    """Arm the (due) mark and, as a sweeper would, send it and record `outcome` (state, code,
    detail)."""
    answer = http.put(f"/api/agent/runs/{root_id}/auto-resume", json={"enabled": True})
    mark_id = answer.json()["id"]
    with api.database.writer() as db, db.begin():
        (claimed,) = sweeper.claim_due(db, api.clock.now, 1, "s1", 60, only_ids=[mark_id])
    assert claimed.attempt_key is not None
    key = claimed.attempt_key
    with api.database.durable_writer() as db, db.begin():
        assert sweeper.start_sending(db, [(mark_id, key)], api.clock.now, 60) != []
    with api.database.writer() as db, db.begin():
        sent = sweeper.SendResult(mark_id, key, *outcome)
        assert sweeper.settle(db, [sent], api.clock.now) != []


def test_a_failed_resume_says_why_in_words(api: Api, http: httpx.Client, root_id: str) -> None:
    """A resume command that exited 1 reads as words; "pid … exited 1" is the technical line."""
    http.post(runs_url(root_id), json=failure(message=PASSED))
    send(api, http, root_id, "failed", "exit_1", "pid 29954 exited 1")
    card = _card(http.get(f"/sessions/{root_id}", headers=HTML).text, root_id)
    assert (
        'The resume failed</strong><span class="mark-detail"> · the resume command failed' in card
    )
    assert '<p class="technical mark-technical">outcome exit_1: pid 29954 exited 1</p>' in card


def test_a_resumed_session_still_paused_says_what_is_true_now(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """A reset behind now reads in the past tense; a resume the host accepted says the session
    shows running once its host reports the new attempt; the timeline is oldest first."""
    http.post(runs_url(root_id), json=failure(message=PASSED))
    send(api, http, root_id, "done", "done", "ok")
    page = http.get(f"/sessions/{root_id}", headers=HTML).text
    card = _card(page, root_id)
    assert "· the limit reset at <time" in card and "already passed" not in card
    assert "the host accepted the resume; it shows as running once its host reports" in card
    timeline = page[page.index('<ol class="timeline">') :]
    order = [
        timeline.index(words)
        for words in (
            "failure reported",
            "auto-resume turned on",
            "resume being sent",
            "resume arrived",
        )
    ]
    assert order == sorted(order)


def test_an_armed_mark_offers_turning_it_off_with_its_warnings(
    http: httpx.Client, root_id: str
) -> None:
    """An armed session counts down to due_at, shows the mark's warnings, offers "off"."""
    http.post(runs_url(root_id), json=failure())
    mark = http.put(f"/api/agent/runs/{root_id}/auto-resume", json={"enabled": True}).json()
    card = _card(http.get(f"/sessions/{root_id}", headers=HTML).text, root_id)
    assert "Auto-resume is on" in card
    assert 'data-until="2026-11-30T16:41:30Z" data-past="due now"' in card
    # Which warnings depend on the sweepers other tests left seen in the shared database.
    assert mark["warnings"] and all(warning in card for warning in mark["warnings"])
    assert 'data-action="disarm"' in card


def test_session_page_escapes_the_cli_text_and_marks_the_evidence(
    http: httpx.Client, root_id: str
) -> None:
    """The CLI text is escaped (a <script> in it is text), escapes show as ␛, and the verdict's
    evidence is wrapped in <mark>."""
    message = f"<script>alert(1)</script>\n\x1b[31m{QUOTA}\x1b[0m\n"
    http.post(runs_url(root_id), json=failure(message=message))
    page = http.get(f"/sessions/{root_id}", headers=HTML)
    assert page.status_code == 200
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert f'␛[31m<mark class="evidence">{QUOTA}</mark>␛[0m' in page.text.replace("&#39;", "'")
    assert "failure reported" in page.text


def test_a_long_text_shows_the_part_around_early_evidence_and_links_the_whole(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """Evidence at the start of a 40,000-character text: the answer carries the part around
    it (not the end), the page marks it, counts what is cut after from the whole text, and
    links the whole text, which a signed-in browser reads with its cookie alone."""
    message = f"noise\n{QUOTA}\n" + "z" * 40_000
    http.post(runs_url(root_id), json=failure(message=message))
    shown = http.get(f"/api/agent/runs/{root_id}").json()["runs"][0]["attempts"][0]["failure"]
    assert QUOTA in shown["message"] and shown["message_from"] == 0
    assert shown["message_stored_chars"] == len(message) and len(shown["message"]) < 8_192
    page = http.get(f"/sessions/{root_id}", headers=HTML).text.replace("&#39;", "'")
    assert f'<mark class="evidence">{QUOTA}</mark>' in page
    end = message.index(QUOTA) + len(QUOTA)
    assert f"… {len(message) - end - 2_000} characters after" in page
    whole = f"/sessions/{root_id}/runs/r1/attempts/1/failure/message"
    assert f'href="{whole}"' in page
    secret = ALICE["Authorization"].removeprefix("Bearer ")
    with loopback_client(api.url, cookies={COOKIE: secret}) as browser:
        read = browser.get(whole)
    assert read.status_code == 200 and read.text == message
    assert read.headers["content-type"].startswith("text/plain")
    missing = http.get(f"/api/agent/runs/{root_id}/runs/r1/attempts/2/failure/message")
    assert (missing.status_code, missing.json()["code"]) == (404, "failure_not_found")


def test_a_deleted_session_shows_its_tombstone(http: httpx.Client, root_id: str) -> None:
    """A deleted session's page is its tombstone (410): who deleted it, when, what it was."""
    http.post(runs_url(root_id), json=failure())
    http.post(f"/api/agent/runs/{root_id}/cancel")
    assert http.delete(f"/api/agent/runs/{root_id}").status_code == 200
    page = http.get(f"/sessions/{root_id}", headers=HTML)
    assert page.status_code == 410
    assert "This session was deleted</strong> by alice" in page.text
    assert "run r1, attempt 1: provider_quota" in page.text


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        ("/sessions/never-seen", 404, "no session &#39;never-seen&#39;"),
        ("/sessions/%20spaced", 404, "no session can be called"),
        ("/sessions/" + "x" * 300, 404, "a root_id is 1 to 200 of"),
        ("/sessions/..%2F..%2Fetc", 404, "there is no page at"),
        ("/sessions/%E2%80%AE", 404, "no session can be called"),
        ("/sessions/tombstones", 404, "no session &#39;tombstones&#39;"),
        ("/sessions/a/b", 404, "there is no page at /sessions/a/b"),
        ("/?offset=-1", 422, "offset &#39;-1&#39; is not a whole number"),
        ("/?offset=99999999999999999999", 422, "is not a whole number from 0 to 1000000"),
        ("/?state=sleeping", 422, "state &#39;sleeping&#39; is not one of"),
        ("/?provider=openai", 422, "provider &#39;openai&#39; is not one of claude"),
        ("/?account_key=" + "k" * 201, 422, "account_key is longer than 200 characters"),
        ("/nowhere", 404, "there is no page at /nowhere"),
    ],
)
def test_unknown_ids_and_bad_input_are_clear_error_pages(
    http: httpx.Client, path: str, status: int, words: str
) -> None:
    """Unknown sessions, impossible ids and bad query parameters answer an HTML page that says
    why, with the API's status; never a 500."""
    page = http.get(path, headers=HTML)
    assert page.status_code == status
    assert page.headers["content-type"].startswith("text/html")
    assert words in page.text


def test_api_errors_stay_problem_json(http: httpx.Client) -> None:
    """Adding the page changes nothing for API clients: unknown API paths are problem+json."""
    for path in ("/api/agent/runs/x/nothing", "/nowhere"):
        answer = http.get(path, headers={"Accept": "application/json"})
        assert answer.status_code == 404
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["code"] == "not_found"


def test_list_pages_by_offset(http: httpx.Client, root_id: str) -> None:
    """The list links to older sessions when there are more than a page."""
    for n in range(51):
        http.post(runs_url(f"{root_id}-{n}"), json=failure(provider="codex", account_key=root_id))
    query = {"provider": "codex", "account_key": root_id}
    first = http.get("/", params=query, headers=HTML).text
    assert f'href="/?provider=codex&amp;account_key={root_id}&amp;offset=50">Older →' in first
    second = http.get("/", params=query | {"offset": 50}, headers=HTML).text
    assert second.count("<article") == 1
    assert f'href="/?provider=codex&amp;account_key={root_id}">← Newer' in second


def test_static_files_are_served_without_credentials(api: Api) -> None:
    """The stylesheet and script need no token (they hold nothing secret)."""
    for name, kind in (("rewake.css", "text/css"), ("rewake.js", "javascript")):
        answer = httpx.get(f"{api.url}/static/{name}")
        assert answer.status_code == 200
        assert kind in answer.headers["content-type"]


def _card(html: str, root_id: str) -> str:
    start = html.index(f'data-root-id="{root_id}"')
    return html[start : html.index("</article>", start)]


def test_a_session_without_a_failure_has_a_page(http: httpx.Client, root_id: str) -> None:
    """A session cancelled before any report, or only running, still renders (no 500)."""
    http.post(f"/api/agent/runs/{root_id}/cancel")
    http.post(runs_url(f"{root_id}-run", what="attempts"), json={"attempt": 1, "status": "started"})
    for shown in (root_id, f"{root_id}-run"):
        page = http.get(f"/sessions/{shown}", headers=HTML)
        assert page.status_code == 200
        assert "No failure reported for the current attempt." in page.text
    assert "Cancelled</dt>" in http.get(f"/sessions/{root_id}", headers=HTML).text


def test_session_page_shows_what_the_cli_reported_when_its_text_says_nothing(
    http: httpx.Client, root_id: str
) -> None:
    """A message of only Codex's stdin notice gives the box to cli_text, headed "What the CLI
    reported" and escaped; a message with words keeps the box, cli_text or not."""
    reported = "<b>You’ve hit your usage limit.</b>\n\x1b[31mTry again at 5:46 PM."
    chatter = "Reading additional input from stdin..."
    http.post(runs_url(root_id), json=failure(message=chatter, cli_text=reported))
    page = http.get(f"/sessions/{root_id}", headers=HTML).text
    assert "<figcaption>What the CLI reported (from its error events)" in page
    assert "&lt;b&gt;You’ve hit your usage limit.&lt;/b&gt;\n␛[31mTry again" in page
    assert "<b>You’ve" not in page and chatter not in page
    http.post(runs_url(root_id, "r2"), json=failure(message="Error: boom", cli_text=reported))
    page = http.get(f"/sessions/{root_id}", headers=HTML).text
    assert page.count("What the CLI reported") == 1 and "Error: boom" in page


def test_the_list_draws_the_next_24_hours_per_account(http: httpx.Client, root_id: str) -> None:
    """The list page has one SVG of the next 24 hours, with a title, a description and the
    same events as a list; an account key is escaped everywhere it shows."""
    account = f"<b>{root_id}</b>"
    http.post(runs_url(root_id), json=failure(account_key=account))
    http.put(f"/api/agent/runs/{root_id}/auto-resume", json={"enabled": True})
    page = http.get("/", params={"account_key": account}, headers=HTML).text
    assert page.count("<svg") == 1 and 'role="img" aria-labelledby="fleet-title fleet-desc"' in page
    assert f"{root_id}: limit resets 17:40 CET" in page
    assert f"{root_id}: auto-resume 17:41 CET" in page
    assert '<path class="marker"' in page and '<circle class="marker"' in page
    assert "<b>" not in page and f"&lt;b&gt;{root_id}&lt;/b&gt;" in page
    assert '<time datetime="2026-11-30T16:41:30Z" data-local>17:41 CET</time> · auto-resume' in page
