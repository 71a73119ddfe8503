"""Notifications for a person through apprise (REWAKE_NOTIFY): a desktop notification, ntfy,
Slack, email and the other services apprise reaches, from one list of apprise URLs.

Three events, each sent once, by whoever knows it: a limit paused a session (`rewake run`, as it
records the failure), the resume was sent (the sweeper when it records the outcome; `rewake run`
when it fires the mark itself), and the resume failed, turned uncertain or expired (the sweeper,
or `rewake run` for a resume it fired). The signed notify webhook (REWAKE_NOTIFY_URL,
`rewake.notifications.webhook`) is separate and unchanged.

Best effort, off the main work's path: notifications go out one after another on a daemon
thread, so neither a sweep nor `rewake run` waits for one; `close()` gives those in flight a
bounded time. A notification that cannot be sent is a warning naming the URL redacted
(apprise's privacy form, then `redact_url`), never an error of the work. Text is sent as plain
text (apprise escapes it for services that read HTML), with control characters shown as
escapes (`rewake.printable`): a CLI's words in a banner cannot become markup or drive a
terminal. apprise is imported here only, when REWAKE_NOTIFY is set.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rewake.logs import log_event, redact_text, redact_url
from rewake.printable import printable

if TYPE_CHECKING:
    from rewake.db.models import MarkRow

logger = logging.getLogger("rewake.sweeper.announce")

#: How long `close()` waits for notifications still in flight.
CLOSE_WAIT_S = 10.0
#: Longer texts are cut (a title a line, a body a few lines: services cut theirs anyway).
MAX_TITLE, MAX_BODY = 200, 2000


@dataclass(frozen=True)
class Notice:
    """One notification: a title and a body of plain text, and apprise's kind for it."""

    title: str
    body: str
    kind: str = "info"  # apprise's NotifyType: info, success, warning, failure


def mark_notice(row: MarkRow) -> Notice | None:
    """The notification for a mark's new state, in the page's words; None for a state no
    person needs to hear about (armed, logged, cleared, ...)."""
    name, attempt = row.root_id, row.attempt
    detail = f": {row.outcome_detail}" if row.outcome_detail else ""
    if row.state == "done":
        return Notice(
            f"Resumed · {name}",
            f"{name}: the resume of attempt {attempt} was sent ({row.outcome}){detail}",
            "success",
        )
    if row.state == "failed":
        return Notice(
            f"The resume failed · {name}",
            f"{name}: the resume of attempt {attempt} failed ({row.outcome}){detail}",
            "failure",
        )
    if row.state == "uncertain":
        return Notice(
            f"Unknown whether the resume arrived · {name}",
            f"{name}: the resume of attempt {attempt} started but its answer never came back "
            f"({row.outcome}); it is never sent again. Check whether run {row.run_id} went on "
            "before resuming by hand.",
            "warning",
        )
    if row.state == "expired":
        reason = row.outcome_detail or row.clear_reason or "it was not sent in time"
        return Notice(
            f"Expired, not sent · {name}",
            f"{name}: the resume of attempt {attempt} was never sent: {reason}",
            "failure",
        )
    return None


class Announcer:
    """Sends notices to every REWAKE_NOTIFY URL. Raises ValueError when apprise cannot read one
    of them (the message names it redacted). `warn`, when given, takes a failure's one-line
    description instead of the log (rewake run prints it; it configures no logging)."""

    def __init__(self, urls: str, *, warn: Callable[[str], None] | None = None) -> None:
        import apprise

        self._apprise = apprise
        every = apprise.Apprise()
        # Comma-, semicolon- or space-separated, as apprise reads a list; each URL is then sent
        # on its own, so that a failure names the one that failed.
        if not every.add(urls) or len(every) == 0:
            raise ValueError(
                f"REWAKE_NOTIFY: apprise cannot read one of its URLs ({len(every)} of them read)"
            )
        self._services: list[tuple[str, Any]] = []
        for service in every:
            plugin: Any = service  # apprise's plugins are not all typed
            one = apprise.Apprise()
            one.add(plugin)
            self._services.append((redact_url(str(plugin.url(privacy=True))), one))
        self._warn = warn
        self._queue: queue.Queue[Notice | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def where(self) -> list[str]:
        """The URLs, redacted, as warnings name them."""
        return [where for where, _ in self._services]

    # -- what the sweeper and rewake run call -----------------------------------------------

    def send(self, notice: Notice) -> None:
        """Queue `notice` for every URL; returns at once."""
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._run, name="rewake-announce", daemon=True
                )
                self._worker.start()
        self._queue.put(notice)

    def mark_changed(self, row: MarkRow, now: datetime) -> None:
        """A mark's state changed (the sweeper's outcome, its reaper, its expiry)."""
        notice = mark_notice(row)
        if notice is not None:
            self.send(notice)

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Let notifications in flight finish, for at most `wait_s` (the worker is a daemon
        thread: one that hangs longer does not keep the process alive)."""
        with self._lock:
            worker = self._worker
        if worker is None:
            return
        self._queue.put(None)
        worker.join(timeout=wait_s)

    # -- the worker ---------------------------------------------------------------------

    def _run(self) -> None:
        heard = _Heard()
        library = logging.getLogger("apprise")
        library.addHandler(heard)
        library.propagate = False  # its words come back in our warning, redacted
        while True:
            notice = self._queue.get()
            if notice is None:
                return
            for where, service in self._services:
                self._send_one(where, service, notice, heard)

    def _send_one(self, where: str, service: Any, notice: Notice, heard: _Heard) -> None:
        title = printable(notice.title)[:MAX_TITLE]
        body = printable(notice.body, newlines=True)[:MAX_BODY]
        heard.clear()
        started = time.monotonic()
        try:
            result = service.notify(
                body=body,
                title=title,
                notify_type=notice.kind,
                body_format=self._apprise.NotifyFormat.TEXT,
                interpret_escapes=False,
            )
            sent = bool(result)
            reason = heard.last() or "apprise reported a failure"
        except Exception as error:  # a plugin's bug must not end the worker
            sent, reason = False, f"{type(error).__name__}: {error}"
        if sent:
            return
        reason = redact_text(reason)
        took = round(time.monotonic() - started, 3)
        if self._warn is not None:
            self._warn(f"the notification to {where} was not sent: {reason}")
        else:
            log_event(logger, "announce_failed", logging.WARNING, url=where, error=reason,
                      title=title, took_s=took)  # fmt: skip


class _Heard(logging.Handler):
    """What apprise logged (warnings and up) during one send: the reason a send failed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._messages.append(record.getMessage())
        except Exception:  # a message whose arguments do not format
            self._messages.append(str(record.msg))

    def clear(self) -> None:
        self._messages = []

    def last(self) -> str | None:
        return self._messages[-1] if self._messages else None
