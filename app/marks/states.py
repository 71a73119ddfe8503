"""A mark's lifecycle as data (docs/design.md#states): its states, and the one table of the
changes between them that every write of a mark's state is checked against.

    armed ──claim──> claimed ──start──> sending ──outcome──> done | failed | uncertain
      │                 │                  │                  | superseded | logged
      │                 │                  └──deferred (proved nothing sent)──> armed
      │                 └──lease lost, released──> armed
      ├──────┴──manual resume, new failure, cancel, delete, disabled──> cleared
      └──too late, host unseen──> expired
    uncertain ──host lookup, a later attempt's report, the resolve route──> done | failed

Live means armed, claimed or sending: at most one live mark per session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum


class MarkState(StrEnum):
    """A mark's state, stored as its value."""

    ARMED = "armed"
    CLAIMED = "claimed"
    SENDING = "sending"
    DONE = "done"
    FAILED = "failed"
    UNCERTAIN = "uncertain"
    SUPERSEDED = "superseded"
    LOGGED = "logged"
    CLEARED = "cleared"
    EXPIRED = "expired"


#: The states a mark can leave each state for. A state missing here is final.
TRANSITIONS: Mapping[MarkState, frozenset[MarkState]] = {
    MarkState.ARMED: frozenset({MarkState.CLAIMED, MarkState.CLEARED, MarkState.EXPIRED}),
    MarkState.CLAIMED: frozenset({MarkState.SENDING, MarkState.ARMED, MarkState.CLEARED}),
    MarkState.SENDING: frozenset(
        {
            MarkState.DONE,
            MarkState.FAILED,
            MarkState.UNCERTAIN,
            MarkState.SUPERSEDED,
            MarkState.LOGGED,
            # Deferred: the resume program proved it sent nothing (an open CLI it cannot reach
            # holds the conversation), so the mark waits again (rewake.marks.lifecycle.defer).
            MarkState.ARMED,
        }
    ),
    MarkState.UNCERTAIN: frozenset({MarkState.DONE, MarkState.FAILED}),
}

#: At most one mark of a session is in one of these (a partial unique index).
LIVE_STATES: tuple[MarkState, ...] = (MarkState.ARMED, MarkState.CLAIMED, MarkState.SENDING)
#: States in which a mark may still change on its own: live, or uncertain.
OPEN_STATES: tuple[MarkState, ...] = (*LIVE_STATES, MarkState.UNCERTAIN)
#: Where a send may end (back to armed is a deferral, not an end: `lifecycle.defer` writes it).
OUTCOME_STATES: tuple[MarkState, ...] = tuple(
    sorted(TRANSITIONS[MarkState.SENDING] - set(LIVE_STATES), key=list(MarkState).index)
)
#: States a mark can still be taken back from (cleared): nothing was sent.
CLEARABLE_STATES: tuple[MarkState, ...] = tuple(
    state for state in MarkState if MarkState.CLEARED in TRANSITIONS.get(state, frozenset())
)
#: States with no way out.
FINAL_STATES: frozenset[MarkState] = frozenset(MarkState) - TRANSITIONS.keys()


class IllegalTransition(ValueError):
    """A write would move a mark along a change the lifecycle does not have."""


def check_transition(from_states: Iterable[str], to_state: str) -> MarkState:
    """`to_state` as a MarkState, once every move from `from_states` to it is in TRANSITIONS;
    IllegalTransition (naming the change) otherwise."""
    target = MarkState(to_state)
    for state in from_states:
        if target not in TRANSITIONS.get(MarkState(state), frozenset()):
            raise IllegalTransition(f"a mark cannot go from {state} to {target}")
    return target
