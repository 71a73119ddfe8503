"""Placeholders in executor templates: `{root_id}`, `{run_id}`, ... filled from a delivery.

Templates are operator configuration, values come from hosts: a value is only ever substituted,
never re-read as a template, and each kind of value is checked before it goes anywhere.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Mapping

from rewake.executors.base import Delivery
from rewake.ids import ID_RE

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
#: The API's id alphabet, checked again here because a value may become an argument of a
#: command: never a leading dash (an option), no whitespace, no control or shell-significant
#: characters (no shell is used, but the program may pass them on).
_SAFE_ID = ID_RE


class TemplateError(ValueError):
    """A template names an unknown placeholder, or a value fails its check."""


def _safe_id(name: str, value: str) -> str:
    if not _SAFE_ID.fullmatch(value):
        raise TemplateError(f"{name} {value!r} is not a safe id ([A-Za-z0-9][A-Za-z0-9._:@-]*)")
    return value


def _session_uuid(value: str | None) -> str:
    if value is None:
        raise TemplateError("session_id is needed but the failure named no CLI session id")
    try:
        parsed = uuid.UUID(value)
    except ValueError as error:
        raise TemplateError(f"session_id {value!r} is not a UUID") from error
    if str(parsed) != value.lower():
        raise TemplateError(f"session_id {value!r} is not a UUID in canonical form")
    return str(parsed)


#: Every placeholder, and how its value is taken from a delivery and checked.
VALUES: Mapping[str, Callable[[Delivery], str]] = {
    "root_id": lambda d: _safe_id("root_id", d.root_id),
    "run_id": lambda d: _safe_id("run_id", d.run_id),
    "attempt": lambda d: str(int(d.attempt)),
    "mark_id": lambda d: str(int(d.mark_id)),
    "attempt_key": lambda d: _safe_id("attempt_key", d.attempt_key),
    "session_id": lambda d: _session_uuid(d.cli_session_id),
}


def placeholders(template: str) -> list[str]:
    return _PLACEHOLDER.findall(template)


def check_template(template: str, allowed: Iterable[str] = VALUES) -> None:
    """TemplateError when the template names a placeholder that does not exist."""
    known = set(allowed)
    unknown = [name for name in placeholders(template) if name not in known]
    if unknown:
        raise TemplateError(
            f"unknown placeholder {{{unknown[0]}}} in {template!r}; known: {sorted(known)}"
        )


def fill(template: str, delivery: Delivery, quote: Callable[[str], str] = str) -> str:
    """The template with each placeholder replaced by its checked (and quoted) value."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in VALUES:
            raise TemplateError(f"unknown placeholder {{{name}}}")
        return quote(VALUES[name](delivery))

    return _PLACEHOLDER.sub(replace, template)
