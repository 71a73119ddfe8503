"""The part of a failure's text the verdict rests on, as a person should see it: found in the
stored text, and narrowed from a whole structured event to the field that says it.

The parser's evidence is the span it read, which for a structured event is the whole event (a
line of JSON, up to a thousand characters: ids, usage counters, the model's name). Shown as
"the verdict rests on", that hides the words that matter; the field whose text speaks of the
limit (a `result`, a `message`, an `error.message`) is what the page marks and `show` keeps in
view.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Words a field that carries a limit (or another failure) message uses.
_SPEAKS = re.compile(
    r"limit|quota|reset|exhaust|rate|capacity|try again|retry|credit|429|missing|error",
    re.IGNORECASE,
)


def locate(message: str, evidence: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """Where the evidence is in `message`: its own offsets when they still point at it (the
    text may have been cut, or the verdict read events), else its last occurrence."""
    if not evidence or not evidence.get("text"):
        return None, None
    text, start, end = str(evidence["text"]), evidence.get("start"), evidence.get("end")
    if isinstance(start, int) and isinstance(end, int) and message[start:end] == text:
        return start, end
    found = message.rfind(text)
    return (found, found + len(text)) if found >= 0 else (None, None)


def narrow(span: str) -> tuple[int, int]:
    """The part of `span` to mark, as offsets into it: for a JSON event, the string field that
    speaks of the failure (the longest such); otherwise the whole span."""
    stripped = span.strip()
    if not stripped.startswith("{"):
        return 0, len(span)
    try:
        event = json.loads(stripped)
    except ValueError:
        return 0, len(span)
    candidates = sorted(
        (value for value in _strings(event) if _SPEAKS.search(value)), key=len, reverse=True
    )
    for value in candidates:
        for form in (value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
            found = span.find(form)
            if found >= 0 and form:
                return found, found + len(form)
    return 0, len(span)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def evidence_line(message: str, evidence: dict[str, Any] | None) -> str | None:
    """The line of `message` that holds the (narrowed) evidence, None when it is not there."""
    start, end = locate(message, evidence)
    if start is None or end is None:
        return None
    lo, hi = narrow(message[start:end])
    at = start + lo
    line_start = message.rfind("\n", 0, at) + 1
    line_end = message.find("\n", at)
    line = message[line_start : line_end if line_end >= 0 else len(message)]
    if line.lstrip().startswith("{"):
        # A JSON event: its field, not the whole line.
        return message[start + lo : start + hi]
    return line
