"""REWAKE_NOTIFY through apprise: one plain-text notification per event, to a listener on
127.0.0.1 only; a failing or unreachable endpoint is a warning with the URL redacted, never an
error of the work."""

from __future__ import annotations

import logging
import socket
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from rewake.db.models import MarkRow
from rewake.notifications.apprise_notices import Announcer, Notice, mark_notice
from rewake.settings import SECRET_SETTINGS, Settings
from tests.support.announce import listening

NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def row(state: str, **fields: Any) -> MarkRow:
    values: dict[str, Any] = {
        "id": 7, "root_id": "docs-rewrite", "run_id": "r1", "attempt": 2, "state": state,
        "reset_at": NOW, "resolution_s": 1, "due_at": NOW, "armed_by": "local:alice",
        "armed_at": NOW, "despite_native": False, "updated_at": NOW,
    }  # fmt: skip
    values.update(fields)
    return MarkRow(**values)


def test_a_notice_goes_to_every_url_once_as_plain_text() -> None:
    """Each URL gets the notice once, title and body as given; markup in the text is sent as
    text (escaped for a service that reads HTML) and terminal controls are shown, not sent."""
    with listening() as plain, listening() as html:
        announcer = Announcer(f"{plain.url}, {html.url}?format=html")
        announcer.send(Notice("Paused · provider limit · s1", "s1: <b>x</b>\x1b]52;c;Zm9v\x07"))
        announcer.close()
        (sent,), (escaped,) = plain.wait_for(1), html.wait_for(1)
    assert sent["title"] == "Paused · provider limit · s1"
    assert sent["message"] == "s1: <b>x</b>\\x1b]52;c;Zm9v\\x07"
    assert sent["type"] == "info"
    assert "&lt;b&gt;x&lt;/b&gt;" in escaped["message"] and "<b>" not in escaped["message"]


@pytest.mark.parametrize(
    ("state", "fields", "title", "words", "kind"),
    [
        ("done", {"outcome": "accepted"}, "Resumed · docs-rewrite",
         "the resume of attempt 2 was sent (accepted)", "success"),
        ("failed", {"outcome": "http_500", "outcome_detail": "the host answered 500"},
         "The resume failed · docs-rewrite", "failed (http_500): the host answered 500",
         "failure"),
        ("uncertain", {"outcome": "lease_expired"},
         "Unknown whether the resume arrived · docs-rewrite", "never came back", "warning"),
        ("expired", {"clear_reason": "stale"}, "Expired, not sent · docs-rewrite",
         "was never sent: stale", "failure"),
    ],
)  # fmt: skip
def test_mark_outcomes_in_the_pages_words(
    state: str, fields: dict[str, Any], title: str, words: str, kind: str
) -> None:
    """A sent, failed, uncertain or expired mark has a notice titled like the page's mark."""
    notice = mark_notice(row(state, **fields))
    assert notice is not None
    assert (notice.title, notice.kind) == (title, kind) and words in notice.body


@pytest.mark.parametrize("state", ["armed", "claimed", "sending", "logged", "cleared"])
def test_other_mark_states_are_not_announced(state: str) -> None:
    """States no one needs to hear about send nothing."""
    assert mark_notice(row(state)) is None


def test_mark_changed_sends_one_notification_per_event() -> None:
    """The sweeper's calls for a sent and an uncertain mark become two notifications, in order;
    an armed mark adds none."""
    with listening() as listener:
        announcer = Announcer(listener.url)
        announcer.mark_changed(row("done", outcome="accepted"), NOW)
        announcer.mark_changed(row("armed"), NOW)
        announcer.mark_changed(row("uncertain", outcome="lease_expired"), NOW)
        announcer.close()
        got = listener.wait_for(2)
    assert [g["title"] for g in got] == [
        "Resumed · docs-rewrite",
        "Unknown whether the resume arrived · docs-rewrite",
    ]


def test_a_failing_endpoint_is_a_warning_with_the_url_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 500 does not raise and send() does not wait for it; the warning names the URL without
    its password or query values."""
    caplog.set_level(logging.WARNING, logger="rewake.sweeper.announce")
    with listening(status=500) as listener:
        url = listener.url.replace("json://", "json://bot:hunter2@") + "?token=s3cret"
        announcer = Announcer(url)
        started = time.monotonic()
        announcer.send(Notice("Resumed · s1", "s1: sent"))
        assert time.monotonic() - started < 0.5
        announcer.close()
        assert len(listener.wait_for(1)) == 1
    failed = [r for r in caplog.records if r.getMessage() == "announce_failed"]
    assert len(failed) == 1 and failed[0].levelno == logging.WARNING
    fields = str(failed[0].__dict__.get("rewake_fields"))
    assert "127.0.0.1" in fields and "hunter2" not in fields and "s3cret" not in fields


def test_an_unreachable_endpoint_goes_to_warn() -> None:
    """With `warn` (rewake run), a send to a closed port is one line given to it, the URL
    redacted; the next notice still goes out."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    warned: list[str] = []
    announcer = Announcer(f"json://bot:hunter2@127.0.0.1:{port}/", warn=warned.append)
    announcer.send(Notice("Paused · provider limit · s1", "s1"))
    announcer.send(Notice("Resumed · s1", "s1"))
    announcer.close()
    assert len(warned) == 2
    assert f"127.0.0.1:{port}" in warned[0] and "hunter2" not in warned[0]


def test_a_url_apprise_cannot_read_is_refused() -> None:
    """A value with no URL apprise knows is a ValueError naming REWAKE_NOTIFY."""
    with pytest.raises(ValueError, match="REWAKE_NOTIFY"):
        Announcer("nosuchscheme://127.0.0.1/")


def test_the_setting_is_read_and_kept_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """REWAKE_NOTIFY is the `notify` setting, listed among those never echoed."""
    monkeypatch.setenv("REWAKE_NOTIFY", "json://127.0.0.1:9/")
    assert Settings().notify == "json://127.0.0.1:9/"
    assert "notify" in SECRET_SETTINGS
