"""How a URL appears in the service's logs: without its password or query values, whatever
logged it, and otherwise unchanged."""

from __future__ import annotations

import io
import json
import logging

import pytest

from rewake.logs import JsonFormatter, TextFormatter, ThrottleRepeats, redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pw@host:8080/hook?token=abc&x=1#top",
         "http://user:***@host:8080/hook?token=***&x=***#top"),
        ("https://only-a-token@host/hook", "https://***@host/hook"),
        ("postgresql://rewake:pw@db:5432/rewake?sslpassword=s",
         "postgresql://rewake:***@db:5432/rewake?sslpassword=***"),
        ("http://[::1]:8700/resumes/{attempt_key}?k", "http://[::1]:8700/resumes/{attempt_key}?k=***"),
        ("sqlite:////var/lib/rewake/rewake.db", "sqlite:////var/lib/rewake/rewake.db"),
        ("http://host/plain/path", "http://host/plain/path"),
        ("http://host:notaport/x?k=v", "***"),
    ],
)  # fmt: skip
def test_a_url_loses_its_password_and_query_values(url: str, shown: str) -> None:
    """User info keeps its name but not its password (a lone user name may be a token), each
    query value becomes ***, and a URL with neither is left exactly as it was."""
    assert redact_url(url) == shown


def test_urls_in_free_text_are_redacted() -> None:
    """An exception's words that quote a URL (httpx: "... for url 'http://u:p@h/x?k=v'") keep
    everything but the secrets."""
    text = "Server error '500' for url 'http://u:secret@h:1/n?key=q-secret'\nmore"
    assert redact_text(text) == "Server error '500' for url 'http://u:***@h:1/n?key=***'\nmore"


@pytest.mark.parametrize("formatter", [TextFormatter(), JsonFormatter()])
def test_every_log_line_is_redacted_whoever_logged_it(formatter: logging.Formatter) -> None:
    """A library's own message (httpx logs each request's URL) and an event's fields go out
    redacted, in text and in JSON lines."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    logger = logging.getLogger("tests.logs.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning('HTTP Request: POST http://u:pw-1@h/x?t=tok-2 "HTTP/1.1 200 OK"')
        logger.warning("event", extra={"rewake_fields": {"url": "https://u:pw-3@h/?a=tok-4"}})
    finally:
        logger.removeHandler(handler)
    out = stream.getvalue()
    assert not any(secret in out for secret in ("pw-1", "tok-2", "pw-3", "tok-4")), out
    assert "http://u:***@h/x?t=***" in out
    if isinstance(formatter, JsonFormatter):
        assert json.loads(out.splitlines()[1])["url"] == "https://u:***@h/?a=***"


def _record(name: str, message: str, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, None, None)


def test_repeated_library_errors_are_throttled_with_a_count() -> None:
    """Within the window, one error of a kind (logger, level, first line) from a library goes
    out; the next one after the window says how many were left out. Lines that differ only
    after the first line are one kind."""
    now = [0.0]
    throttle = ThrottleRepeats(window_s=60, clock=lambda: now[0])
    first = _record("asyncio", "socket.accept() out of system resource\nsocket: <fd=9>")
    assert throttle.filter(first)
    kept = [throttle.filter(_record("asyncio", f"socket.accept() out of system resource\n{n}"))
            for n in range(500)]  # fmt: skip
    assert not any(kept)
    assert throttle.filter(_record("asyncio", "another problem"))
    assert throttle.filter(_record("uvicorn.error", "socket.accept() out of system resource"))
    now[0] = 61.0
    later = _record("asyncio", "socket.accept() out of system resource\nsocket: <fd=9>")
    assert throttle.filter(later)
    assert "(500 more like this in the last 60 s were not logged)" in later.getMessage()


def test_rewake_events_and_info_lines_are_never_throttled() -> None:
    """rewake's own events (a resume sent, a notice failed) and INFO lines of anyone all go
    out, however often."""
    throttle = ThrottleRepeats(window_s=60, clock=lambda: 0.0)
    assert all(throttle.filter(_record("rewake.sweeper.notify", "notify_failed", logging.WARNING))
               for _ in range(10))  # fmt: skip
    assert all(throttle.filter(_record("uvicorn.error", "Started", logging.INFO))
               for _ in range(10))  # fmt: skip


@pytest.mark.parametrize("formatter", [TextFormatter(), JsonFormatter()])
def test_a_path_cannot_forge_a_log_line(formatter: logging.Formatter) -> None:
    """A request's path holding a line feed, CR, ESC, C1 or U+2028 stays on its one line, the
    characters shown as escapes: no forged `request` line, nothing for a terminal to obey."""
    forged = (
        "/x\n2026-01-01T00:00:00Z info request method=GET path=/admin status=200\r\x1b[2J\x9b\u2028"
    )
    record = _record("rewake.access", "request", logging.INFO)
    record.rewake_fields = {"method": "GET", "path": forged, "status": 404}
    out = formatter.format(record)
    assert "\n" not in out and "\r" not in out and "\x1b" not in out
    assert "\x9b" not in out and "\u2028" not in out
    if isinstance(formatter, JsonFormatter):
        assert json.loads(out)["path"] == forged
    else:
        assert "path=/x\\x0a2026-01-01T00:00:00Z info request" in out and "\\x1b[2J" in out


def test_a_traceback_keeps_its_lines_after_an_escaped_head() -> None:
    """Only a traceback follows the record's line on lines of its own."""
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        record = logging.LogRecord("rewake.x", logging.ERROR, __file__, 1, "a\nb", None,
                                   sys.exc_info())  # fmt: skip
    head, *rest = TextFormatter().format(record).split("\n")
    assert head.endswith("error a\\x0ab") and rest[0] == "Traceback (most recent call last):"


def test_an_outage_logs_one_line_per_kind_of_failure_with_a_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A live scheduler whose job fails every 20 ms (each message naming another "next run
    at") and a timer whose turns all fail log one failure of each kind, with one traceback,
    within the window: not a traceback per failed job."""
    import threading
    import time

    from apscheduler.schedulers.background import BackgroundScheduler
    from sqlalchemy.exc import OperationalError

    from rewake.logs import configure_logging
    from rewake.sweeper.timer import PreciseTimer, TimerHooks

    def fail(*_args: object) -> None:
        raise OperationalError("INSERT ...", {}, Exception("database or disk is full"))

    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    configure_logging(json_lines=False, level="INFO")
    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.add_job(fail, "interval", seconds=0.02, id="sweep")
    timer = PreciseTimer(TimerHooks(fire=fail, earliest_due=fail), step_s=0.01)
    turning = threading.Thread(target=timer.run, daemon=True)
    try:
        scheduler.start()
        turning.start()
        time.sleep(1.0)
    finally:
        timer.stop()
        scheduler.shutdown(wait=True)
        turning.join(5)
        root.handlers[:], root.level = saved
    err = capsys.readouterr().err
    assert err.count("raised an exception") == 1, err[:3000]
    assert err.count("Traceback (most recent call last)") == 1
    assert err.count("timer_turn_failed") == 1


def test_a_flood_of_one_rewake_failure_ends_in_one_line_with_its_count() -> None:
    """rewake's failure events that name their kind are let through once per window; the next
    after the window carries `left_out` and no traceback (the first one showed it)."""
    from rewake.logs import log_event

    now = [0.0]
    throttle = ThrottleRepeats(window_s=60, clock=lambda: now[0])
    records: list[logging.LogRecord] = []
    logger = logging.getLogger("rewake.test_flood")
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    handler.addFilter(throttle)
    logger.addHandler(handler)
    try:
        for _ in range(300):
            log_event(logger, "timer_turn_failed", logging.WARNING, repeats="OperationalError")
        log_event(logger, "timer_turn_failed", logging.WARNING, repeats="TimeoutError")
        log_event(logger, "resume_sent", logging.WARNING)
        now[0] = 61.0
        try:
            raise RuntimeError("still down")
        except RuntimeError:
            logger.warning(
                "timer_turn_failed", exc_info=True,
                extra={"rewake_fields": {}, "rewake_repeats": "OperationalError"},
            )  # fmt: skip
    finally:
        logger.removeHandler(handler)
    kinds = [(r.getMessage(), getattr(r, "rewake_repeats", None)) for r in records]
    assert kinds == [
        ("timer_turn_failed", "OperationalError"),
        ("timer_turn_failed", "TimeoutError"),
        ("resume_sent", None),
        ("timer_turn_failed", "OperationalError"),
    ]
    last = records[-1]
    assert last.rewake_fields["left_out"] == 299 and last.exc_info is None  # type: ignore[attr-defined]
