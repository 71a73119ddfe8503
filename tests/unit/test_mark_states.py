"""The mark lifecycle's table (rewake.marks.states) allows the changes of docs/design.md#states
and refuses every other."""

from __future__ import annotations

from typing import get_args

import pytest

from rewake.executors.base import OutcomeState
from rewake.marks.states import (
    FINAL_STATES,
    LIVE_STATES,
    OUTCOME_STATES,
    TRANSITIONS,
    IllegalTransition,
    MarkState,
    check_transition,
)

# docs/design.md#states, change by change.
ALLOWED = [
    ("armed", "claimed"),
    ("claimed", "sending"),
    *[("sending", outcome) for outcome in ("done", "failed", "uncertain", "superseded", "logged")],
    ("armed", "cleared"),
    ("claimed", "cleared"),
    ("armed", "expired"),
    ("claimed", "armed"),
    ("uncertain", "done"),
    ("uncertain", "failed"),
    ("sending", "armed"),  # deferred: the resume program proved it sent nothing
]
REFUSED = [
    ("armed", "sending"),  # nothing is sent without a claim
    ("uncertain", "armed"),  # a send that may have happened is never retried blindly
    ("sending", "claimed"),
    ("sending", "cleared"),  # a resume under way cannot be taken back
    ("done", "armed"),
    ("expired", "armed"),
    ("cleared", "armed"),
    ("logged", "done"),  # the log executor never claims a delivery
]


@pytest.mark.parametrize(("before", "after"), ALLOWED)
def test_each_change_of_the_lifecycle_is_allowed(before: str, after: str) -> None:
    """Every change docs/design.md names passes the check, and gives the target as a MarkState."""
    assert check_transition([before], after) is MarkState(after)


@pytest.mark.parametrize(("before", "after"), REFUSED)
def test_a_change_outside_the_lifecycle_is_refused(before: str, after: str) -> None:
    """A change docs/design.md does not name raises IllegalTransition, naming both states."""
    with pytest.raises(IllegalTransition, match=f"from {before} to {after}"):
        check_transition([before], after)


def test_one_refused_change_among_several_refuses_them_all() -> None:
    """From armed or sending to cleared is refused: sending cannot be cleared."""
    with pytest.raises(IllegalTransition, match="from sending to cleared"):
        check_transition(["armed", "sending"], "cleared")


def test_an_unknown_state_is_refused() -> None:
    """A state that is no MarkState is refused as a ValueError."""
    with pytest.raises(ValueError, match="'paused'"):
        check_transition(["armed"], "paused")


def test_final_live_and_outcome_states_are_as_designed() -> None:
    """Final: done, failed, superseded, logged, cleared, expired; live: armed, claimed,
    sending; a send ends in done, failed, uncertain, superseded or logged."""
    assert {str(state) for state in FINAL_STATES} == {
        "done", "failed", "superseded", "logged", "cleared", "expired",
    }  # fmt: skip
    assert [str(state) for state in LIVE_STATES] == ["armed", "claimed", "sending"]
    assert [str(state) for state in OUTCOME_STATES] == [
        "done", "failed", "uncertain", "superseded", "logged",
    ]  # fmt: skip


def test_an_executor_answers_exactly_the_states_a_send_may_move_to() -> None:
    """The executors' OutcomeState (a type, so written out) is the table's row for sending:
    an outcome the table refuses, or a move it allows that no executor can answer, fails."""
    assert set(get_args(OutcomeState)) == set(TRANSITIONS[MarkState.SENDING])


def test_every_state_is_reachable_from_armed() -> None:
    """Following the table from armed reaches every state: none is unused."""
    from rewake.marks.states import TRANSITIONS

    seen, todo = {MarkState.ARMED}, [MarkState.ARMED]
    while todo:
        for after in TRANSITIONS.get(todo.pop(), frozenset()):
            if after not in seen:
                seen.add(after)
                todo.append(after)
    assert seen == set(MarkState)


def test_the_live_index_covers_exactly_the_live_states() -> None:
    """The states of the one-live-mark-per-session index (rewake.db.models, which cannot import
    the marks layer) are the lifecycle's live states, in order."""
    from rewake.db import models

    assert tuple(str(state) for state in LIVE_STATES) == models.LIVE_STATES
