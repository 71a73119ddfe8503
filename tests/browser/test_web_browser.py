"""The web page in a real headless chromium, against a real server and a seeded SQLite file:
what it shows, what its buttons do through the JSON API, sign-in, phone width, accessibility.

Skipped (with the reason) where no chromium exists or Playwright cannot start it; failed
instead with REWAKE_REQUIRE_BROWSER=1 (`browser_launch.chromium_for_tests`).
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rewake.security.browser import COOKIE
from rewake.web.cards import REFUSAL_WORDS
from tests.browser.browser_launch import chromium_for_tests
from tests.browser.web_seed import (
    ALICE,
    CODEX_LATER,
    DELETED,
    SECRET,
    arm,
    seeded_site,
    send_and_lose,
)
from tests.support.api import Api
from tests.support.reports import QUOTA, failure

Page = Any  # playwright.sync_api.Page; Playwright is imported only once chromium is found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium_for_tests() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with seeded_site(tmp_path_factory.mktemp("web")) as api:
        yield api


@pytest.fixture(scope="module")
def api_client(site: Api) -> Iterator[httpx.Client]:
    with site.client(ALICE) as client:
        yield client


def open_page(
    browser: Any,
    site: Api,
    *,
    width: int = 1200,
    zone: str = "Europe/Berlin",
    signed_in: bool = True,
) -> Any:
    context = browser.new_context(
        viewport={"width": width, "height": 900}, locale="en-GB", timezone_id=zone
    )
    if signed_in:
        context.add_cookies([{"name": COOKIE, "value": SECRET, "url": site.url}])
    return context.new_page()


@pytest.fixture
def page(browser: Any, site: Api) -> Iterator[Page]:
    """A signed-in tab, 1200 px wide, in Berlin."""
    tab = open_page(browser, site)
    yield tab
    tab.context.close()


def card(page: Page, root_id: str) -> Any:
    return page.locator(f'article[data-root-id="{root_id}"]')


def new_paused_session(api_client: httpx.Client, root_id: str, message: str = QUOTA) -> None:
    answer = api_client.post(
        f"/api/agent/runs/{root_id}/runs/r1/failures", json=failure(1, message)
    )
    assert answer.status_code == 201, answer.text


def mark_of(api_client: httpx.Client, root_id: str) -> dict[str, Any]:
    answer = api_client.get(f"/api/agent/runs/{root_id}/auto-resume")
    assert answer.status_code == 200
    mark: dict[str, Any] = answer.json()
    return mark


def test_list_shows_banners_in_words_with_their_technical_labels(page: Page, site: Api) -> None:
    """Each seeded session's banner reads in words, beside the failure kind, form or refusal."""
    page.goto(site.url + "/")
    billing = card(page, "billing-refactor")
    assert "Paused · provider limit · resets 17:00 CET (in 2 h 5" in billing.inner_text()
    assert "named_zone" in billing.locator(".technical").inner_text()
    assert "the reset time was not stated" in card(page, "codex-migration").inner_text()
    assert "refusal not_stated" in card(page, "codex-migration").inner_text()
    credits = card(page, "codex-credits").inner_text()
    assert "waiting will not help" in credits
    assert "Next step: add credits to the codex account, then resume the session." in credits
    assert "refusal no_reset" in credits
    login = card(page, "claude-login").locator(".banner").inner_text()
    assert login.strip() == "Paused · sign-in needed · run /login"
    armed = card(page, "docs-rewrite").inner_text()
    assert "Auto-resume is on: resumes at 18:41 CET" in armed
    assert "no sweeper seen" in armed
    uncertain = card(page, "flaky-host").inner_text()
    assert "Unknown whether the resume arrived" in uncertain
    assert "What to check: Check whether run r1 went on after attempt 1" in uncertain
    assert "Resumed · the host accepted the resume" in card(page, "night-batch").inner_text()
    assert page.locator("footer [data-zone]").inner_text() == "Europe/Berlin (your browser's zone)"


def test_times_show_in_the_viewers_zone_named(browser: Any, site: Api) -> None:
    """A viewer in New York sees the 16:00Z reset as 11:00 in their zone, with the zone named."""
    tab = open_page(browser, site, zone="America/New_York")
    try:
        tab.goto(site.url + "/")
        reset = card(tab, "billing-refactor").locator(".banner time")
        assert reset.get_attribute("datetime") == "2026-11-30T16:00:00Z"
        assert re.fullmatch(r"11:00 (EST|GMT-5)", reset.inner_text())
        assert "America/New_York" in tab.locator("footer [data-zone]").inner_text()
    finally:
        tab.context.close()


def test_turning_auto_resume_on_and_off_by_clicking(
    page: Page, site: Api, api_client: httpx.Client
) -> None:
    """The on and off buttons call the API as the signed-in user; the mark follows each click."""
    new_paused_session(api_client, "click-on-off")
    page.goto(site.url + "/sessions/click-on-off")
    page.get_by_role("button", name="Turn auto-resume on").click()
    page.get_by_role("button", name="Turn auto-resume off").wait_for()
    mark = mark_of(api_client, "click-on-off")
    assert (mark["state"], mark["armed_by"], mark["due_at"]) == (
        "armed",
        "alice",
        "2026-11-30T16:41:30Z",
    )
    assert "Auto-resume is on: resumes at 17:41 CET" in page.locator(".mark").inner_text()
    page.get_by_role("button", name="Turn auto-resume off").click()
    page.get_by_role("button", name="Turn auto-resume on").wait_for()
    mark = mark_of(api_client, "click-on-off")
    assert (mark["state"], mark["clear_reason"]) == ("cleared", "disabled")
    assert "Auto-resume is off · turned off by hand" in page.locator(".mark").inner_text()


def says_reset_not_stated(text: str) -> None:
    """`text` gives the refusal in words: the sentence for the API's code `reset_not_stated`,
    then the banner's own reason, "not stated", with the verdict's refusal code `not_stated`."""
    assert REFUSAL_WORDS["reset_not_stated"][1:] in text, text  # "[T]he limit" or "[t]he"
    assert "not stated" in text and "(not_stated" in text, text


def test_a_reset_not_stated_is_not_offered_and_says_why(page: Page, site: Api) -> None:
    """For a Codex "try again later", no turn-on button is drawn (never a disabled one) and
    the 409 reason reads in words in its place."""
    page.goto(site.url + "/")
    codex = card(page, "codex-migration")
    assert codex.get_by_role("button").count() == 0
    reason = codex.locator(".reason")
    assert reason.get_attribute("data-code") == "reset_not_stated"
    says_reset_not_stated(reason.inner_text())


def test_cards_waiting_will_not_help_look_different_and_say_the_next_step(
    page: Page, site: Api
) -> None:
    """Sign-in and credits cards have their own colour and chip, the next step in words and no
    button; an ordinary paused card has neither."""
    page.goto(site.url + "/")
    for root_id, step in (
        ("claude-login", "Next step: run /login in the session, then resume it."),
        ("codex-credits", "Next step: add credits to the codex account"),
    ):
        blocked = card(page, root_id)
        assert "blocked" in (blocked.get_attribute("class") or "")
        assert step in blocked.locator(".next-step").inner_text()
        assert blocked.get_by_role("button").count() == 0
        colour = blocked.evaluate("el => getComputedStyle(el).borderLeftColor")
        assert colour == "rgb(155, 28, 28)", colour
    assert card(page, "billing-refactor").locator(".next-step, .chip-blocked").count() == 0


def test_the_next_24_hours_picture_shows_each_accounts_resets_and_resumes(
    browser: Any, site: Api
) -> None:
    """The picture has a lane per account with a marker per reset and resume, a text
    alternative, and its axis and list in the viewer's zone (here New York)."""
    tab = open_page(browser, site, zone="America/New_York")
    try:
        tab.goto(site.url + "/")
        chart = tab.get_by_role("img", name="Resets and resumes in the next 24 hours, per account")
        assert chart.is_visible()
        # Other tests of this module add sessions: the seeded ones are there, maybe more.
        assert {"team-a", "team-b"} <= set(chart.locator(".lane-name").all_text_contents())
        assert chart.locator(".event-reset").count() >= 4
        assert chart.locator(".event-resume").count() >= 2
        titles = chart.locator(".event title").all_text_contents()
        assert any(re.fullmatch(r"support-bot: auto-resume 11:31 (EST|GMT-5)", t) for t in titles)
        assert chart.locator(".axis-label").nth(1).text_content() == "10:00"  # 15:00Z
        items = tab.locator(".fleet-list").inner_text()
        assert re.search(r"11:00 (EST|GMT-5) · limit resets · billing-refactor", items), items
        box = chart.bounding_box()
        assert box is not None and box["height"] > 100
    finally:
        tab.context.close()


def test_the_screenshot_script_writes_every_picture(browser: Any, tmp_path: Path) -> None:
    """make_screenshots.py, which writes docs/web.md's pictures, runs (in its own process, as
    by hand) and writes each one at its width; the committed ones are its last output."""
    from tests.browser import make_screenshots

    script = Path(make_screenshots.__file__)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for name, _, width, _ in make_screenshots.SHOTS:
        head = (tmp_path / name).read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">I", head[16:20])[0] == width


def test_a_click_the_api_refuses_shows_the_409_reason(
    page: Page, site: Api, api_client: httpx.Client
) -> None:
    """When the session changed after the page was drawn, the API's 409 is shown in words."""
    new_paused_session(api_client, "refused-click")
    page.goto(site.url + "/sessions/refused-click")
    # Meanwhile the run went on and stopped again, on a limit that states no reset.
    later = failure(2, CODEX_LATER, provider="codex")
    assert api_client.post("/api/agent/runs/refused-click/runs/r1/failures", json=later).is_success
    page.get_by_role("button", name="Turn auto-resume on").click()
    feedback = page.locator("[data-feedback]")
    feedback.filter(has_text="Refused").wait_for()
    assert feedback.inner_text().startswith("Refused: ")
    says_reset_not_stated(feedback.inner_text())
    assert mark_of(api_client, "refused-click")["state"] is None


def test_settling_an_uncertain_resume_by_clicking(
    page: Page, site: Api, api_client: httpx.Client
) -> None:
    """ "It was not sent" settles the uncertain mark through the resolve route: failed, not_sent."""
    new_paused_session(api_client, "settle-me", "You've hit your session limit · resets 2:00pm")
    send_and_lose(site, arm(api_client, "settle-me")["id"], None)
    page.goto(site.url + "/sessions/settle-me")
    page.get_by_role("button", name="It was not sent").click()
    page.locator(".mark", has_text="Not resumed").wait_for()
    mark = mark_of(api_client, "settle-me")
    assert (mark["state"], mark["outcome"]) == ("failed", "not_sent")
    assert "uncertain resume settled by hand" in page.locator(".timeline").inner_text()


def test_the_countdowns_tick(page: Page, site: Api) -> None:
    """The reset and due countdowns change second by second, counted from the server's now."""
    page.goto(site.url + "/")
    reset = card(page, "billing-refactor").locator(".countdown")
    due = card(page, "docs-rewrite").locator(".mark .countdown")
    first = (reset.inner_text(), due.inner_text())
    page.wait_for_timeout(1500)
    second = (reset.inner_text(), due.inner_text())
    assert first[0] != second[0] and first[1] != second[1]
    assert re.fullmatch(r"in 2 h 5\d min \d\d s", second[0]), second
    assert re.fullmatch(r"in 4 h 3\d min \d\d s", second[1]), second


def test_session_page_marks_the_evidence_in_the_cli_text(page: Page, site: Api) -> None:
    """The session page shows what the CLI printed with the verdict's evidence highlighted."""
    page.goto(site.url + "/sessions/billing-refactor")
    evidence = page.locator("pre mark.evidence")
    assert evidence.inner_text() == "You've hit your limit · resets 5pm (Europe/Berlin)"
    assert "Running the test suite" in page.locator(".cli pre").inner_text()
    assert "failure reported" in page.locator(".timeline").inner_text()


def test_a_deleted_session_shows_its_tombstone(page: Page, site: Api) -> None:
    """A deleted session's address shows who deleted it and what it was."""
    answer = page.goto(site.url + f"/sessions/{DELETED}")
    assert answer is not None and answer.status == 410
    assert "This session was deleted by alice" in page.locator("main").inner_text()


@pytest.mark.parametrize(
    "path", ["/", "/sessions/billing-refactor", "/sessions/flaky-host", f"/sessions/{DELETED}"]
)
def test_phone_width_has_no_horizontal_overflow(browser: Any, site: Api, path: str) -> None:
    """At 375 px nothing is wider than the screen."""
    tab = open_page(browser, site, width=375)
    try:
        tab.goto(site.url + path)
        widths = tab.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1] == 375, widths
    finally:
        tab.context.close()


@pytest.mark.parametrize(
    "path", ["/", "/sessions/billing-refactor", f"/sessions/{DELETED}", "/sign-in"]
)
def test_the_pages_keep_to_their_content_security_policy(
    browser: Any, site: Api, path: str
) -> None:
    """The policy (scripts, styles, images from this site only) blocks nothing a page uses:
    the browser reports no violation, and the script ran (times are in the viewer's zone)."""
    tab = open_page(browser, site, signed_in=path != "/sign-in")
    said: list[str] = []
    tab.on("console", lambda message: said.append(message.text))
    try:
        answer = tab.goto(site.url + path)
        assert answer is not None
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        tab.wait_for_load_state("load")
        assert [text for text in said if "Content Security Policy" in text] == []
        if path != "/sign-in":
            assert "your browser's zone" in tab.locator("footer [data-zone]").inner_text()
    finally:
        tab.context.close()


def test_the_api_docs_show_every_operation(browser: Any, site: Api) -> None:
    """/docs, signed in with the cookie, runs Swagger UI on /openapi.json under the pages'
    policy: every operation of the document is listed, and the policy blocks only the inline
    data: icons of Swagger UI's stylesheet."""
    with site.client(ALICE) as client:
        document = client.get("/openapi.json").json()
    operations = sum(len(methods) for methods in document["paths"].values())
    tab = open_page(browser, site)
    said: list[str] = []
    tab.on("console", lambda message: said.append(message.text))
    try:
        tab.goto(site.url + "/docs")
        blocks = tab.locator(".opblock")
        blocks.nth(operations - 1).wait_for()
        assert blocks.count() == operations
        assert tab.locator(".info .title").inner_text().startswith("rewake")
        blocked = [text for text in said if "Content Security Policy" in text]
        assert all("'data:image/" in text for text in blocked), blocked
    finally:
        tab.context.close()


def test_another_page_cannot_frame_rewake(browser: Any, site: Api) -> None:
    """frame-ancestors 'none': a page that puts rewake in a frame (to trick a click) gets an
    empty error frame instead of the form."""
    tab = open_page(browser, site, signed_in=False)
    try:
        refused = "frame-ancestors 'none'"
        with tab.expect_console_message(lambda message: refused in message.text):
            tab.set_content(f'<iframe title="framed" src="{site.url}/sign-in"></iframe>')
        (framed,) = tab.main_frame.child_frames
        assert framed.locator("form").count() == 0
    finally:
        tab.context.close()


def test_sign_in_with_a_token_and_a_wrong_one(browser: Any, site: Api) -> None:
    """Without the cookie the page asks for a token; a wrong one is refused in words; the right
    one (name:secret) signs in with an HttpOnly, SameSite=Strict cookie."""
    tab = open_page(browser, site, signed_in=False)
    try:
        tab.goto(site.url + "/sessions/billing-refactor")
        assert "/sign-in" in tab.url
        tab.get_by_label("Token").fill("alice:not-the-secret")
        tab.get_by_role("button", name="Sign in").click()
        assert tab.get_by_role("alert").inner_text() == (
            "Not signed in: the bearer token matches no configured token."
        )
        tab.get_by_label("Token").fill(f"alice:{SECRET}")
        tab.get_by_role("button", name="Sign in").click()
        tab.wait_for_url(site.url + "/sessions/billing-refactor")
        assert tab.locator("h1").inner_text().strip() == "billing-refactor"
        (cookie,) = tab.context.cookies()
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (COOKIE, True, "Strict")
    finally:
        tab.context.close()


@pytest.mark.parametrize("path", ["/", "/sessions/flaky-host", f"/sessions/{DELETED}", "/sign-in"])
def test_no_serious_accessibility_violations(browser: Any, site: Api, path: str) -> None:
    """axe-core finds no serious or critical violation on the list, session and tombstone
    pages (and the sign-in form)."""
    from axe_playwright_python.sync_playwright import Axe

    tab = open_page(browser, site, signed_in=path != "/sign-in")
    try:
        tab.goto(site.url + path)
        found = Axe().run(tab).response["violations"]
        serious = [v["id"] for v in found if v.get("impact") in ("serious", "critical")]
        assert serious == [], serious
    finally:
        tab.context.close()


def test_axe_finds_nothing_on_the_list_with_its_picture(browser: Any, site: Api) -> None:
    """On the list page (cards, blocked cards and the 24-hour picture) axe-core reports no
    violation of any impact."""
    from axe_playwright_python.sync_playwright import Axe

    tab = open_page(browser, site)
    try:
        tab.goto(site.url + "/")
        found = Axe().run(tab).response["violations"]
        assert [(v["id"], v.get("impact")) for v in found] == []
    finally:
        tab.context.close()
