"""The optional fields of a failure report, read leniently: the failure route never loses a
report (docs/design.md#bodies) over a field it could do without.

Only attempt, message and observed_at are required, and their errors stay 422. Every other
field that cannot be used as sent is normalised ("Claude" is claude), cleaned (NUL and lone
surrogates become U+FFFD), or dropped; each change is a `FieldWarning` in the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rewake.reports.rules import (
    CLI_TEXT_LIMIT_CHARS,
    EVENTS_CUT,
    EVENTS_MAX_DEPTH,
    FAILURE_KINDS,
    CleanJSON,
    clean_text,
    keep_last_part,
)

PROVIDERS = ("claude", "codex", "gemini")
CAPTURES = ("live", "scrollback")

#: Free-text fields and the most characters their columns hold.
TEXT_LIMITS = {"zone": 64, "session_id": 200, "account_key": 200}

#: Spellings of `halted` read as a boolean (with a warning) besides true and false.
_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0"})

#: How much of a value a warning quotes.
_QUOTE_CHARS = 64


@dataclass(frozen=True, slots=True)
class FieldWarning:
    """A field of a report that was not used as sent: which one, a stable code, and why."""

    field: str
    #: normalized | not_allowed | too_long | wrong_type | unstorable_text | too_deep |
    #: non_finite (docs/api.md)
    code: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "code": self.code, "detail": self.detail}


def read_optional_fields(body: Mapping[str, Any]) -> tuple[dict[str, Any], list[FieldWarning]]:
    """The optional fields of a failure body, each usable as its schema says or None (halted:
    a bool), and a warning for every value that was changed or dropped."""
    warnings: list[FieldWarning] = []
    fields: dict[str, Any] = {}
    for name, limit in TEXT_LIMITS.items():
        fields[name] = _text(name, body.get(name), limit, warnings)
    fields["provider"] = _choice("provider", body.get("provider"), PROVIDERS, warnings)
    fields["capture"] = _choice("capture", body.get("capture"), CAPTURES, warnings)
    fields["failure_kind"] = _choice(
        "failure_kind", body.get("failure_kind"), FAILURE_KINDS, warnings
    )
    fields["halted"] = _halted(body.get("halted"), warnings)
    fields["conversation_saved"] = _conversation_saved(body.get("conversation_saved"), warnings)
    fields["events"] = _events(body.get("events"), warnings)
    fields["cli_text"] = _cli_text(body.get("cli_text"), warnings)
    return fields, warnings


def events_warnings(cleaned: CleanJSON) -> list[FieldWarning]:
    """What cleaning the events changed."""
    warnings = []
    if cleaned.cut_too_deep:
        warnings.append(
            FieldWarning(
                "events",
                "too_deep",
                f"arrays and objects nested more than {EVENTS_MAX_DEPTH} levels deep were "
                f"stored as {EVENTS_CUT!r}",
            )
        )
    if cleaned.had_non_finite:
        warnings.append(
            FieldWarning(
                "events",
                "non_finite",
                "NaN and infinite numbers are not JSON; they were stored as the strings "
                "'NaN', 'Infinity' and '-Infinity'",
            )
        )
    return warnings


def _text(name: str, value: Any, limit: int, warnings: list[FieldWarning]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        warnings.append(_wrong_type(name, value, "a string"))
        return None
    cleaned = clean_text(value)
    if len(cleaned) > limit:
        warnings.append(
            FieldWarning(
                name,
                "too_long",
                f"{len(cleaned)} characters, more than the {limit} stored; ignored",
            )
        )
        return None
    if cleaned != value:
        warnings.append(
            FieldWarning(
                name, "unstorable_text", "NUL characters and lone surrogates stored as U+FFFD"
            )
        )
    return cleaned


def _cli_text(value: Any, warnings: list[FieldWarning]) -> str | None:
    """Cleaned as the message is and cut to its last part, not dropped: it is only shown, so
    its end (how the run ended) is worth keeping whatever came before. Blank text is none."""
    if value is None:
        return None
    if not isinstance(value, str):
        warnings.append(_wrong_type("cli_text", value, "a string"))
        return None
    cleaned = clean_text(value)
    if cleaned != value:
        warnings.append(
            FieldWarning(
                "cli_text", "unstorable_text", "NUL characters and lone surrogates stored as U+FFFD"
            )
        )
    kept, cut = keep_last_part(cleaned, CLI_TEXT_LIMIT_CHARS)
    if cut:
        warnings.append(
            FieldWarning(
                "cli_text",
                "too_long",
                f"{len(cleaned)} characters, more than the {CLI_TEXT_LIMIT_CHARS} stored; "
                "the last ones kept",
            )
        )
    return kept if kept.strip() else None


def _choice(
    name: str, value: Any, allowed: tuple[str, ...], warnings: list[FieldWarning]
) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        warnings.append(_wrong_type(name, value, f"one of {', '.join(allowed)}"))
        return None
    normal = value.strip().lower().replace("-", "_").replace(" ", "_")
    if normal not in allowed:
        warnings.append(
            FieldWarning(
                name, "not_allowed", f"{_quote(value)} is not one of {', '.join(allowed)}; ignored"
            )
        )
        return None
    if normal != value:
        warnings.append(FieldWarning(name, "normalized", f"{_quote(value)} read as {normal!r}"))
    return normal


def _halted(value: Any, warnings: list[FieldWarning]) -> bool:
    """true or false; a recognisable spelling with a warning; anything else is read as
    halted, since a run that may have been stopped must never be resumed automatically."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    spelled = None
    if isinstance(value, str):
        spelled = value.strip().lower()
    elif isinstance(value, int) and value in (0, 1):
        spelled = str(value)
    said = _quote(value) if isinstance(value, str) else _kind(value)
    if spelled in _TRUE or spelled in _FALSE:
        read = spelled in _TRUE
        warnings.append(FieldWarning("halted", "normalized", f"{said} read as {str(read).lower()}"))
        return read
    warnings.append(
        FieldWarning(
            "halted",
            "not_allowed",
            f"{said} is not true or false; read as true, so the run is never resumed automatically",
        )
    )
    return True


def _conversation_saved(value: Any, warnings: list[FieldWarning]) -> bool | None:
    """true or false; a recognisable spelling with a warning; anything else is dropped (not
    known), which is what a report without the field says: only a plain `false` is taken as
    the CLI's word that nothing was saved, and a doubtful one never blocks a resume."""
    if value is None or isinstance(value, bool):
        return value
    spelled = value.strip().lower() if isinstance(value, str) else None
    said = _quote(value) if isinstance(value, str) else _kind(value)
    if spelled in _TRUE or spelled in _FALSE:
        read = spelled in _TRUE
        warnings.append(
            FieldWarning("conversation_saved", "normalized", f"{said} read as {str(read).lower()}")
        )
        return read
    warnings.append(
        FieldWarning(
            "conversation_saved",
            "wrong_type" if not isinstance(value, str) else "not_allowed",
            f"{said} is not true or false; ignored (read as not known)",
        )
    )
    return None


def _events(value: Any, warnings: list[FieldWarning]) -> list[Any] | None:
    if value is None or isinstance(value, list):
        return value
    warnings.append(
        FieldWarning("events", "wrong_type", f"{_kind(value)}, not a list; kept as a list of one")
    )
    return [value]


def _wrong_type(name: str, value: Any, wanted: str) -> FieldWarning:
    return FieldWarning(name, "wrong_type", f"{_kind(value)}, not {wanted}; ignored")


def _quote(value: str) -> str:
    """A string quoted, cut to a few dozen characters."""
    text = clean_text(value)
    return repr(text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "…")


def _kind(value: Any) -> str:
    kinds = {list: "an array", dict: "an object", bool: "a boolean", str: "a string"}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return kinds.get(type(value), "a value")
