"""The exit-status table: a number means one thing across every `rewake` command."""

from __future__ import annotations

from rewake.exits import Exit


def test_no_two_statuses_share_a_number_but_claudes_block() -> None:
    """Only the hook's block shares its number (2, fixed by Claude Code) with bad usage."""
    by_number: dict[int, list[str]] = {}
    for name, member in Exit.__members__.items():
        by_number.setdefault(int(member), []).append(name)
    shared = {number: names for number, names in by_number.items() if len(names) > 1}
    assert shared == {2: ["USAGE", "HOOK_BLOCK"]}


def test_the_hooks_block_is_claude_codes_exit_2_as_an_alias_of_usage() -> None:
    """HOOK_BLOCK is 2, the one status Claude Code's hook protocol reads as "block", and it is
    the USAGE member itself (an alias), not a second status that happens to be equal."""
    assert int(Exit.HOOK_BLOCK) == 2
    assert Exit.HOOK_BLOCK is Exit.USAGE
