"""Executor rules without a network: placeholders and their checks, the webhook's outcome
mapping, the body it sends, and the signature."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from rewake.executors.base import DEFAULT_PROMPT, Delivery, audit_note
from rewake.executors.command import CommandConfigError, CommandExecutor, parse_argv_template
from rewake.executors.signing import Signer, secret_key
from rewake.executors.templates import TemplateError, check_template, fill
from rewake.executors.webhook import WebhookConfigError, WebhookExecutor, outcome_of

SESSION = "0b6f3f3e-8d1c-4c53-9a0e-3c1f5f0d2a11"


def delivery(**changes: object) -> Delivery:
    values: dict[str, object] = {
        "mark_id": 7,
        "root_id": "root-1",
        "run_id": "run-1",
        "attempt": 2,
        "attempt_key": "9f2c1d0e4b5a6978-7",
        "reset_at": datetime(2026, 11, 30, 16, 40, tzinfo=UTC),
        "resolution_s": 60,
        "due_at": datetime(2026, 11, 30, 16, 41, 30, tzinfo=UTC),
        "armed_by": "alice",
        "armed_at": datetime(2026, 11, 30, 13, 6, tzinfo=UTC),
        "sent_at": datetime(2026, 11, 30, 16, 41, 30, 200000, tzinfo=UTC),
        "account_key": "acct-1",
        "cli_session_id": SESSION,
    }
    values.update(changes)
    return Delivery(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "body", "state", "code"),
    [
        (200, '{"ok": true}', "done", "done"),
        (202, "", "done", "done"),
        (409, '{"code": "key_in_progress"}', "uncertain", "key_in_progress"),
        (409, '{"code": "attempt_moved_on"}', "superseded", "attempt_moved_on"),
        (409, '{"code": "question_open"}', "failed", "question_open"),
        (409, '{"code": "run_alive"}', "failed", "run_alive"),
        (409, "not json", "failed", "http_409"),
        (502, "bad gateway", "uncertain", "http_502"),
        (504, "", "uncertain", "http_504"),
        (500, "", "failed", "http_500"),
        (503, "", "failed", "http_503"),
        (404, "", "failed", "http_404"),
        (401, '{"code": "signature_mismatch"}', "failed", "http_401"),
        (301, "", "failed", "http_301"),
    ],
)
def test_answer_maps_to_outcome(status: int, body: str, state: str, code: str) -> None:
    """Each host answer maps to the mark state and code docs/design.md#executors gives it."""
    outcome = outcome_of(status, body)
    assert (outcome.state, outcome.code) == (state, code)


def test_done_keeps_the_hosts_answer() -> None:
    """A 2xx is recorded with what the host answered."""
    assert outcome_of(200, '{"run": "r2"}').detail == '{"run": "r2"}'


def test_body_has_the_contract_fields_and_never_force() -> None:
    """The webhook body is message, note, expected_attempt and mark; `force` never appears."""
    executor = WebhookExecutor("http://127.0.0.1:9/r/{root_id}/{run_id}", "s3cret")
    url, raw, headers = executor.request_parts(delivery())
    body = json.loads(raw)
    assert set(body) == {"message", "note", "expected_attempt", "mark"}
    assert body["message"] == DEFAULT_PROMPT
    assert body["expected_attempt"] == 2
    assert body["mark"]["attempt_key"] == "9f2c1d0e4b5a6978-7"
    assert "force" not in raw.decode()
    assert url == "http://127.0.0.1:9/r/root-1/run-1"
    assert headers["Idempotency-Key"] == "9f2c1d0e4b5a6978-7"
    executor.close()


def test_resume_is_signed_per_standard_webhooks_with_the_key_as_id() -> None:
    """The resume carries webhook-id (the attempt key, as Idempotency-Key), webhook-timestamp
    (sent_at) and a v1 signature the library verifies over id, timestamp and body; the old
    X-Rewake-* headers are gone."""
    sent_at = datetime.fromtimestamp(int(time.time()), UTC)
    executor = WebhookExecutor("http://127.0.0.1:9/r/{root_id}/{run_id}", "s3cret")
    _url, raw, headers = executor.request_parts(delivery(sent_at=sent_at))
    executor.close()
    assert headers["webhook-id"] == headers["Idempotency-Key"] == "9f2c1d0e4b5a6978-7"
    assert headers["webhook-timestamp"] == str(int(sent_at.timestamp()))
    assert headers["webhook-signature"].startswith("v1,")
    assert not any(name.lower().startswith("x-rewake") for name in headers)
    assert Webhook(b"s3cret").verify(raw, headers) == json.loads(raw)
    for changed in ({"webhook-id": "9f2c1d0e4b5a6978-8"}, {"webhook-timestamp": "1"}):
        with pytest.raises(WebhookVerificationError):
            Webhook(b"s3cret").verify(raw, {**headers, **changed})


def test_note_says_who_when_and_which_reset() -> None:
    """The audit note names who armed the resume, when, and the reset it waited for."""
    note = audit_note(delivery())
    assert "requested in advance by alice at 2026-11-30T13:06:00Z" in note
    assert "2026-11-30T16:40:00Z" in note


def test_signature_round_trip_and_refusals() -> None:
    """The library verifies a signature over id.timestamp.body; another id, a changed body, a
    wrong secret or a timestamp more than five minutes old does not verify."""
    body = b'{"a":1}'
    now = int(time.time())
    headers = Signer("s3cret").headers("key-1", now, body)
    assert Webhook(b"s3cret").verify(body, headers) == {"a": 1}
    refused = [
        (Webhook(b"s3cret"), body, {**headers, "webhook-id": "key-2"}),
        (Webhook(b"s3cret"), b'{"a":2}', headers),
        (Webhook(b"other"), body, headers),
        (Webhook(b"s3cret"), body, Signer("s3cret").headers("key-1", now - 310, body)),
    ]
    for webhook, payload, sent in refused:
        with pytest.raises(WebhookVerificationError):
            webhook.verify(payload, sent)


def test_secret_maps_to_the_librarys_key() -> None:
    """A `whsec_<base64>` secret is the library's own form, read as it reads it; any other
    string is the raw key, which a host gives its library as `whsec_` + base64(secret)."""
    raw = b"\x00\x01binary key\xff"
    whsec = "whsec_" + base64.b64encode(raw).decode()
    assert secret_key(whsec) == raw
    assert secret_key(whsec.rstrip("=")) == raw  # unpadded, as the libraries accept it
    assert secret_key("change-me") == b"change-me"
    body = b"{}"
    now = int(time.time())
    Webhook(whsec).verify(body, Signer(whsec).headers("k", now, body))
    plain = Signer("change-me").headers("k", now, body)
    Webhook(b"change-me").verify(body, plain)
    Webhook("whsec_" + base64.b64encode(b"change-me").decode()).verify(body, plain)


@pytest.mark.parametrize("secret", ["whsec_not-base64!", "whsec_", "whsec_===="])
def test_unreadable_whsec_secret_is_refused_without_echoing_it(secret: str) -> None:
    """A `whsec_` secret whose rest is not base64 (or is empty) stops the webhook executor with
    a message that names the variable and never contains the secret."""
    with pytest.raises(WebhookConfigError, match="REWAKE_WEBHOOK_SECRET") as refused:
        WebhookExecutor("http://h/{root_id}", secret)
    assert secret not in str(refused.value)


def test_webhook_refuses_to_start_without_secret_or_url() -> None:
    """No secret, no URL, an unknown placeholder or a non-HTTP URL: the executor will not start."""
    with pytest.raises(WebhookConfigError, match="SECRET"):
        WebhookExecutor("http://h/{root_id}", None)
    with pytest.raises(WebhookConfigError, match="URL"):
        WebhookExecutor(None, "s")
    with pytest.raises(WebhookConfigError, match="unknown placeholder"):
        WebhookExecutor("http://h/{root}", "s")
    with pytest.raises(WebhookConfigError, match="http"):
        WebhookExecutor("file:///etc/{root_id}", "s")


def test_url_values_are_quoted_as_one_segment() -> None:
    """A value cannot add path segments or a query to the URL."""
    url = fill("http://h/{root_id}/x", delivery(root_id="a:b@c"), lambda v: v.replace(":", "%3A"))
    assert url == "http://h/a%3Ab@c/x"


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"root_id": "-rf"}, "root_id"),
        ({"run_id": "a b"}, "run_id"),
        ({"run_id": "a;rm"}, "run_id"),
        ({"cli_session_id": "not-a-uuid"}, "session_id"),
        ({"cli_session_id": None}, "session_id"),
        ({"cli_session_id": "{" + SESSION + "}"}, "session_id"),
    ],
)
def test_command_placeholders_are_checked(changes: dict[str, object], problem: str) -> None:
    """Ids that could become options or several arguments, and session ids that are not
    UUIDs, are refused before anything runs."""
    executor = CommandExecutor(["prog", "{root_id}", "{run_id}", "--session", "{session_id}"])
    with pytest.raises(TemplateError, match=problem):
        executor.argv(delivery(**changes))


def test_command_argv_puts_the_prompt_after_double_dash() -> None:
    """The prompt is the last argument, after `--`; the attempt key is not on the command line."""
    executor = CommandExecutor('["prog", "--resume-of", "{mark_id}", "--session", "{session_id}"]')
    argv = executor.argv(delivery())
    assert argv == ["prog", "--resume-of", "7", "--session", SESSION, "--", DEFAULT_PROMPT]
    assert all("9f2c1d0e4b5a6978" not in arg for arg in argv)
    assert executor.environment(delivery())["REWAKE_ATTEMPT_KEY"] == "9f2c1d0e4b5a6978-7"


@pytest.mark.parametrize(
    "template",
    ['"prog {run_id}"', "[]", '["{root_id}"]', '["prog", 3]', '["prog", "{nope}"]', "prog run"],
)
def test_command_template_must_be_a_json_argv(template: str) -> None:
    """REWAKE_COMMAND is a JSON array of strings with known placeholders, the program fixed."""
    with pytest.raises(CommandConfigError):
        parse_argv_template(template)


def test_unknown_placeholder_named() -> None:
    """An unknown placeholder is refused with its name."""
    with pytest.raises(TemplateError, match=r"\{rootid\}"):
        check_template("http://h/{rootid}")
