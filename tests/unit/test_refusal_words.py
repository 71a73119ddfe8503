"""The one table of arming refusals in words, as the terminal and the page read it."""

from __future__ import annotations

from rewake.api.routes import ARM_REFUSALS
from rewake.reports.refusal_words import REFUSALS
from rewake.runner.commands import status_text
from rewake.web import cards


def test_every_arming_refusal_the_api_gives_has_words() -> None:
    """Each code `PUT .../auto-resume` refuses with (and a resume being sent) is worded once,
    so neither the terminal nor the page falls back to the bare code."""
    assert set(ARM_REFUSALS) | {"recovery_in_progress"} <= set(REFUSALS)


def test_the_terminal_and_the_page_give_the_same_reason_and_each_its_own_way_around() -> None:
    """Native auto-continue reads alike in both places up to what a person can do: a flag in
    the terminal, the page's own advice beside its button."""
    reason = REFUSALS["native_auto_continue"].reason
    terminal = status_text.refusal_words("native_auto_continue")
    page = cards.REFUSAL_WORDS["native_auto_continue"]
    assert terminal.startswith(reason) and "--despite-native" in terminal
    assert page.startswith(reason) and "--despite-native" not in page
