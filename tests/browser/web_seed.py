"""A database with one session of each kind the web page shows, made through the real API
(and, for the marks a sweeper moves, the sweeper's own functions), for the browser tests and
the screenshots."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from rewake.marks import lifecycle as sweeper
from tests.support.api import T0, Api, serve_api
from tests.support.db import migrate
from tests.support.reports import OBSERVED

#: The scrollback a Claude Code host captured: the stop banner is the part marked as evidence.
CLAUDE_SCROLLBACK = (  # as Claude Code prints it on Linux (● bullets), indents kept
    "● Update(src/billing/invoice.py)\n"
    "    Updated src/billing/invoice.py with 12 additions and 3 removals\n"
    "\n"
    "● Running the test suite to check the rounding fix…\n"
    "\n"
    "    You've hit your limit · resets 5pm (Europe/Berlin)\n"
    "    /upgrade to increase your usage limit.\n"
)
CLAUDE_LATER = "You've hit your session limit · resets 6:40pm (Europe/Berlin)"
#: 13:00Z, five minutes before it was seen: still that instant, so a mark is due at once.
CLAUDE_PASSED = "You've hit your session limit · resets 2:00pm (Europe/Berlin)"
#: 16:30Z, on another account: the picture of the next 24 hours has a second lane.
CLAUDE_NIGHT = "You've hit your session limit · resets 5:30pm (Europe/Berlin)"
CODEX_LATER = "■ You've hit your usage limit. Try again later."
CODEX_CREDITS = "■ Your workspace is out of credits. Add credits to continue."
CLAUDE_LOGIN = "Invalid API key · Please run /login"
CLAUDE_NATIVE = (
    "5-hour limit reached ∙ resets 6pm\n"
    "  ⎿  Claude will continue automatically when the limit resets."
)

#: root_id -> (provider, message, what the page shows for it)
SESSIONS: dict[str, tuple[str, str, str]] = {
    "billing-refactor": ("claude", CLAUDE_SCROLLBACK, "a reset, auto-resume can be turned on"),
    "codex-migration": ("codex", CODEX_LATER, "the reset time was not stated"),
    "codex-credits": ("codex", CODEX_CREDITS, "waiting will not help"),
    "claude-login": ("claude", CLAUDE_LOGIN, "sign-in needed"),
    "docs-rewrite": ("claude", CLAUDE_LATER, "auto-resume armed"),
    "native-continue": ("claude", CLAUDE_NATIVE, "the CLI continues by itself"),
    "flaky-host": ("claude", CLAUDE_PASSED, "a resume whose outcome is unknown"),
    "night-batch": ("claude", CLAUDE_PASSED, "resumed"),
    "support-bot": ("claude", CLAUDE_NIGHT, "auto-resume armed, on the account team-b"),
}
#: The account each session reports (team-a unless named here).
ACCOUNTS = {"support-bot": "team-b"}
DELETED = "old-experiment"
SECRET = "alice-secret-0123456789"
ALICE = {"Authorization": f"Bearer {SECRET}"}


def report(http: httpx.Client, root_id: str, provider: str, message: str, **extra: Any) -> None:
    body = {
        "attempt": 1,
        "message": message,
        "observed_at": OBSERVED,
        "zone": "Europe/Berlin",
        "provider": provider,
        "account_key": "team-a",
        **extra,
    }
    answer = http.post(f"/api/agent/runs/{root_id}/runs/r1/failures", json=body)
    assert answer.status_code == 201, answer.text


def arm(http: httpx.Client, root_id: str) -> dict[str, Any]:
    answer = http.put(f"/api/agent/runs/{root_id}/auto-resume", json={"enabled": True})
    assert answer.status_code == 200, answer.text
    mark: dict[str, Any] = answer.json()
    return mark


def send_and_lose(api: Api, mark_id: int, outcome: str | None) -> None:
    """As a sweeper would: claim the (due) mark, commit sending, then record `outcome`, or,
    for None, die so that the reaper finds the lease run out: uncertain."""
    now = api.clock.now
    with api.database.writer() as db, db.begin():
        (claimed,) = sweeper.claim_due(db, now, 1, "sweeper-1", 60, only_ids=[mark_id])
    assert claimed.attempt_key is not None
    with api.database.durable_writer() as db, db.begin():
        assert sweeper.start_sending(db, [(mark_id, claimed.attempt_key)], now, 60) != []
    with api.database.writer() as db, db.begin():
        if outcome is None:
            sweeper.reap_lost_leases(db, now + timedelta(seconds=61))
        else:
            sent = [sweeper.SendResult(mark_id, claimed.attempt_key, outcome)]
            sweeper.settle(db, sent, now)


def seed(api: Api) -> None:
    """Every session in SESSIONS, and one deleted session (a tombstone)."""
    with api.client(ALICE) as http:
        for root_id, (provider, message, _) in SESSIONS.items():
            report(http, root_id, provider, message, account_key=ACCOUNTS.get(root_id, "team-a"))
        arm(http, "docs-rewrite")
        arm(http, "support-bot")
        send_and_lose(api, arm(http, "flaky-host")["id"], None)
        send_and_lose(api, arm(http, "night-batch")["id"], "done")
        report(http, DELETED, "gemini", "Usage limit reached for gemini-2.5-pro.")
        assert http.post(f"/api/agent/runs/{DELETED}/cancel").status_code == 200
        assert http.delete(f"/api/agent/runs/{DELETED}").status_code == 200


@contextmanager
def seeded_site(directory: Path, **settings: Any) -> Iterator[Api]:
    """rewake on a fresh SQLite file in `directory`, seeded, served on loopback at T0."""
    url = f"sqlite:///{directory / 'rewake.db'}"
    migrate(url)
    with serve_api(url, **settings) as api:
        api.clock.now = T0
        seed(api)
        yield api
