"""How the real-CLI tier submits a prompt to an interactive CLI (`submit_heard`), with stand-in
callables for the terminal and the provider: Enter is pressed again only at a CLI that has
neither sent the request nor drawn anything for a while."""

from __future__ import annotations

import itertools

from tests.realcli.realcli_drive import submit_heard

FAST = {"wait_s": 0.05, "quiet_s": 0.05, "poll_s": 0.01}


class Terminal:
    """The keys the CLI was sent."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def type_line(self) -> None:
        self.keys += ["hi", "Enter"]

    def enter(self) -> None:
        self.keys.append("Enter")


def test_a_cli_that_sends_the_request_gets_one_enter() -> None:
    """The request arrives after the first Enter: nothing more is pressed."""
    terminal = Terminal()

    def requests() -> int:
        return int("Enter" in terminal.keys)  # the first Enter is heard

    submit_heard(terminal.type_line, terminal.enter, requests, lambda: "", give_up_s=5, **FAST)
    assert terminal.keys == ["hi", "Enter"]


def test_an_idle_cli_that_lost_the_enter_gets_it_again() -> None:
    """A still screen and no request: Enter again, until the third press is heard."""
    terminal = Terminal()

    def requests() -> int:
        return int(terminal.keys.count("Enter") >= 3)

    submit_heard(terminal.type_line, terminal.enter, requests, lambda: "still",
                 give_up_s=30, **FAST)  # fmt: skip
    assert terminal.keys == ["hi", "Enter", "Enter", "Enter"]


def test_a_cli_still_drawing_gets_no_second_enter() -> None:
    """No request yet, but the screen keeps changing (a spinner: the CLI took the line and is
    slow to send it): no Enter is pressed again, however long it takes."""
    terminal = Terminal()
    frames = itertools.count()
    submit_heard(terminal.type_line, terminal.enter, lambda: 0, lambda: next(frames),
                 give_up_s=0.5, **FAST)  # fmt: skip
    assert terminal.keys == ["hi", "Enter"]


def test_no_more_than_the_presses_allowed() -> None:
    """A CLI that never sends gets three Enters in all, then the caller is answered."""
    terminal = Terminal()
    submit_heard(terminal.type_line, terminal.enter, lambda: 0, lambda: "still",
                 give_up_s=30, **FAST)  # fmt: skip
    assert terminal.keys == ["hi", "Enter", "Enter", "Enter"]
