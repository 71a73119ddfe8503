"""The exit-status table: a number means one thing across every `rewake` command."""

from __future__ import annotations

from rewake.exits import Exit


def test_no_two_statuses_share_a_number_but_claudes_block() -> None:
    """Only the hook's block shares its number (2, fixed by Claude Code) with bad usage; the
    hook never exits for bad usage, so no command can mean both."""
    by_number: dict[int, list[str]] = {}
    for name, member in Exit.__members__.items():
        by_number.setdefault(int(member), []).append(name)
    shared = {number: names for number, names in by_number.items() if len(names) > 1}
    assert shared == {2: ["USAGE", "HOOK_BLOCK"]}

