"""Structured logs: every line has an event name and fields; JSON lines when asked.

`log_event(logger, "failure_reported", root_id=..., kind=...)` writes
`failure_reported root_id=... kind=...` as text, or one JSON object per line with
`REWAKE_LOG_JSON=1`.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from rewake.printable import escaped

_FIELDS = "rewake_fields"
#: The record attribute naming a repeatable failure's kind (log_event's `repeats`).
_REPEATS = "rewake_repeats"
#: Digits, masked in a message's kind: a scheduler's "next run at 11:33:00", a port, a pid.
_DIGITS = re.compile(r"[0-9]+")


#: What stands in for a secret part of a URL in logs and messages.
REDACTED = "***"


def redact_url(url: str) -> str:
    """`url` fit for a log line: the password of its user info and every query value replaced
    by `***` (webhook and notify URLs carry credentials in either place; so do database URLs).
    Anything that does not parse as a URL is replaced whole."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # a malformed port raises here
    except ValueError:
        return REDACTED
    if "@" not in parts.netloc and not parts.query:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:{REDACTED}@{hostport}" if colon else f"{REDACTED}@{hostport}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(key, REDACTED) for key, _ in pairs], safe="*")
    authority = f"//{netloc}" if url[len(parts.scheme) :].startswith("://") else netloc
    return (
        f"{parts.scheme}:{authority}{parts.path}"
        + (f"?{query}" if query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


def redact_urls_in(text: str, *urls: str | None) -> str:
    """`text` with each of `urls` (as given, e.g. in an exception's message) redacted."""
    for url in filter(None, urls):
        text = text.replace(url, redact_url(url))
    return text


#: A URL in free text (a message, an exception's words): a scheme, `://`, and no space or quote.
_URL_IN_TEXT = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]*://[^\s'"<>]+""")


def redact_text(text: str) -> str:
    """`text` with every URL in it passed through `redact_url`."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda found: redact_url(found.group(0)), text)


#: Libraries whose INFO lines name every request's URL (credentials included): WARNING and up.
QUIET_LOGGERS = ("httpx", "httpcore")


def log_event(
    logger: logging.Logger,
    event: str,
    level: int = logging.INFO,
    *,
    repeats: str | None = None,
    **fields: Any,
) -> None:
    """Log one named event with its fields. `repeats` names the kind of a failure that may
    come again and again while something outside is down (the error's type): then one event
    of that kind per ThrottleRepeats window goes out, the next saying how many were left out."""
    extra: dict[str, Any] = {_FIELDS: fields}
    if repeats is not None:
        extra[_REPEATS] = repeats
    logger.log(level, event, extra=extra)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, event and the event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        payload.update(getattr(record, _FIELDS, {}))
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        # Whoever logged it, a URL never shows its password or query values.
        return redact_text(json.dumps(payload, default=str))


class TextFormatter(logging.Formatter):
    """`time level event key=value ...`, readable in a terminal, one line a record: the event
    and every field have their control characters (newlines, ESC, C1, the Unicode line
    separators) shown as visible escapes, so text from outside (a request's path, a host's
    answer) can neither forge a line nor drive the terminal that reads the log. Only a
    traceback, rewake's own, follows on lines of its own."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, _FIELDS, {})
        parts = [f"{key}={value}" for key, value in fields.items()]
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = " ".join([stamp, record.levelname.lower(), record.getMessage(), *parts])
        # Whoever logged it, a URL never shows its password or query values; redacted before
        # the escapes, so that a URL still ends where a line feed ended it.
        line = escaped(redact_text(line))
        if record.exc_info:
            line += "\n" + redact_text(self.formatException(record.exc_info))
        return line


class ThrottleRepeats(logging.Filter):
    """Lets one warning or error of a kind through per `window_s`: from loggers outside
    rewake's own (asyncio, uvicorn, the scheduler), and rewake's own failure events that name
    their kind (`log_event(..., repeats=...)`). Under a flood of connections, asyncio logs a
    traceback for every accept that fails (one audit wrote 804,037 of them, 348 MB, in 80 s);
    during a full disk or a database restart, every sweep, heartbeat and timer turn fails.

    A library's kind is the logger, the level and the message's first line with its digits
    masked (the scheduler's "next run at ...", an address, a port differ each time; later lines
    name objects that differ too); a rewake event's kind is the event and the kind it names. The
    next one let through after a window says how many like it were left out, on one line: its
    traceback, already shown by the first, is dropped. rewake's other events are never held
    back."""

    def __init__(self, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window_s = window_s
        self._clock = clock
        #: kind -> (when the last one went out, how many were left out since)
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        repeats = getattr(record, _REPEATS, None)
        if record.name.split(".")[0] == "rewake" and repeats is None:
            return True
        try:
            first = record.getMessage().split("\n", 1)[0][:200]
        except Exception:  # a message whose arguments do not format: let logging say so
            return True
        described = f"{first} {repeats}" if repeats is not None else _DIGITS.sub("#", first)
        kind = (record.name, record.levelno, described)
        now = self._clock()
        last = self._seen.get(kind)
        if last is not None and now - last[0] < self.window_s:
            self._seen[kind] = (last[0], last[1] + 1)
            return False
        if len(self._seen) > 1000:  # kinds seen once, long ago: forget them
            self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window_s}
        self._seen[kind] = (now, 0)
        if last is not None and last[1]:
            # Still flooding: one line, the count, no second copy of the traceback.
            record.exc_info, record.exc_text, record.stack_info = None, None, None
            if repeats is not None:
                fields = {**getattr(record, _FIELDS, {}), "left_out": last[1]}
                fields["left_out_window_s"] = self.window_s
                setattr(record, _FIELDS, fields)
            else:
                record.msg = f"{first} ({last[1]} more like this in the last {self.window_s:g} s "
                record.msg += "were not logged)"
                record.args = None
        return True


def configure_logging(*, json_lines: bool, level: str = "INFO") -> None:
    """Send the service's logs (and uvicorn's) to stderr in the chosen format, repeated
    warnings of other libraries throttled; the HTTP client libraries only from WARNING up
    (their INFO line for each request names its URL)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(ThrottleRepeats())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
