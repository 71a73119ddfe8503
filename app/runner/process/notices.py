"""REWAKE_NOTIFY for the runner's commands: the notifier read from the environment, and the
notice for a limit that paused a session, which `rewake run` and `rewake hook claude` send."""

from __future__ import annotations

import os
from collections.abc import Callable

from rewake.instants import local_clock, parse_instant
from rewake.notifications.apprise_notices import Announcer, Notice
from rewake.runner.store.base import JSON


def announcer_from_env(warn: Callable[[str], None]) -> Announcer | None:
    """REWAKE_NOTIFY's notifier, or None; a URL apprise cannot read is a warning, not a reason
    to leave the CLI unsupervised or the hook unreported."""
    urls = os.environ.get("REWAKE_NOTIFY")
    if not urls:
        return None
    try:
        return Announcer(urls, warn=warn)
    except ValueError as error:
        warn(f"{error}; no notifications are sent")
        return None


def pause_notice(
    name: str, answer: JSON, mark: JSON | None, *, continues: bool = False
) -> Notice | None:
    """A limit paused session `name`: the banner's words, and when it resumes (if armed, or
    `continues`: the CLI continues by itself); None for any other failure. Only the store's
    answer is quoted (its banner), never the CLI's own text."""
    if answer.get("failure_kind") != "provider_quota":
        return None
    banner = answer.get("banner") or {}
    lines = [f"{name}: {banner.get('detail') or 'the provider limit stopped the run'}"]
    if mark is not None and mark.get("due_at"):
        due = local_clock(parse_instant(str(mark["due_at"])))
        lines.append(f"auto-resume is on: due at {due}")
    elif continues:
        lines.append("the CLI continues it by itself at the reset")
    elif (answer.get("auto_resume") or {}).get("available"):
        lines.append(f"resume automatically after the reset: rewake auto-resume {name} on")
    return Notice(
        f"{banner.get('business') or 'Paused · provider limit'} · {name}",
        "\n".join(lines),
        "warning",
    )
