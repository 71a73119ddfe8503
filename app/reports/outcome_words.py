"""How a resume ended, in words: one table from the mark's `outcome` code (what an executor, the
reaper, the host's lookup or a person recorded) to a clause a person reads, for the web page
and the terminal.

The codes come from `rewake.executors` (webhook: the host's 409 code, `http_<status>`,
`connection_refused`, `timeout`...; command: `exit_<status>`, `spawn_failed`...), from
`rewake.runner.process` (`conversation_missing`), from the reaper (`lease_expired`) and from
the expiry sweep (`expired`). The mark's `outcome_detail` (what the far side said, "pid 29954
exited 1") stays available beside the words, as the technical part.

Each entry is a clause (lower case, no full stop). Imports nothing but the standard library.
"""

from __future__ import annotations

import json
import re

OUTCOME_REASONS: dict[str, str] = {
    # The host (or the CLI) refused the resume.
    "conversation_missing": "the conversation was gone: the CLI found nothing to continue",
    "run_alive": "the host refused: another run of this session is alive",
    "question_open": "the host refused: the agent is waiting for a person's answer",
    "key_retired": "the host refused: it had recorded this resume as never received",
    "key_mismatch": "the host refused: the resume's key did not match its address",
    "attempt_moved_on": "the run had moved on before the resume arrived",
    # Nothing left rewake.
    "connection_refused": "nothing was sent: the host refused the connection",
    "bad_url": "nothing was sent: the webhook address is not usable",
    "bad_placeholder": "nothing was sent: the resume template names a field rewake does not have",
    "spawn_failed": "nothing was started: the resume command could not be started",
    "not_sent": "the resume was not sent",
    "expired": "it stayed armed too long past its due time, so it was not sent",
    "host_unseen": "its host was not seen for too long, so it was not sent",
    "deferred": "nothing was sent: the conversation is held by an open session, and the "
    "resume waits to be looked at again",
    # Sent, answer unknown.
    "timeout": "it was sent, but the host did not answer in time",
    "transport_error": "it was sent, but the connection broke before the answer",
    "lease_expired": "it was being sent, but the send never reported back",
    "key_in_progress": "the host was still handling the same resume",
    "executor_error": "the sender failed while sending",
    # Arrived.
    "done": "the host accepted the resume",
    "spawned": "the resume command started and is still running",
    "exit_0": "the resume command ran and succeeded",
    "resumed_in_foreground": "the session was resumed in its terminal",
    "logged": "the log executor wrote it down; nothing was resumed",
}

_EXIT = re.compile(r"exit_(-?\d+)")
_HTTP = re.compile(r"http_(\d{3})")


def outcome_reason(code: str | None) -> str | None:
    """The clause for an outcome code; None for no code. An unknown code (a host's own 409 code)
    is named as the host's refusal, so the words never pretend to know more than the code."""
    if not code:
        return None
    if code in OUTCOME_REASONS:
        return OUTCOME_REASONS[code]
    if exited := _EXIT.fullmatch(code):
        return f"the resume command failed (exit status {exited.group(1)})"
    if http := _HTTP.fullmatch(code):
        return f"the host answered HTTP {http.group(1)} instead of accepting the resume"
    return f"the host refused: {code.replace('_', ' ')}"


#: How much of what the far side said is shown beside the words.
SAID_CHARS = 240
_EXITED = re.compile(r"exited -?\d+: (.+)", re.DOTALL)


def what_was_said(code: str | None, detail: str | None) -> str | None:
    """The one line of the far side's own words a failure rests on: for a resume command, the
    last line it wrote to stderr (the command executor keeps it after "exited N: "); for a host
    that answered HTTP, its problem's `detail` or `code`, else its first line. None when it
    said nothing that adds to the code."""
    if not code or not detail:
        return None
    text: str | None = None
    if _EXIT.fullmatch(code):
        said = _EXITED.fullmatch(detail.strip())
        text = said.group(1) if said else None
    elif _HTTP.fullmatch(code):
        text = _problem_words(detail) or detail.strip().splitlines()[0] if detail.strip() else None
    if not text:
        return None
    line = " ".join(text.split())
    return line if len(line) <= SAID_CHARS else line[: SAID_CHARS - 1] + "…"


def _problem_words(body: str) -> str | None:
    """A problem+json body's `detail` (or `title`, or `code`), when the body is one."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    for field in ("detail", "title", "code"):
        if isinstance(parsed.get(field), str) and parsed[field].strip():
            return str(parsed[field])
    return None
