"""The log executor: records what a resume would have been; the mark ends `logged`."""

from __future__ import annotations

import json
import logging
from datetime import datetime

from rewake.executors.base import DEFAULT_PROMPT, Delivery, Lookup, Outcome, audit_note
from rewake.logs import log_event
from rewake.marks.states import MarkState

logger = logging.getLogger("rewake.executor.log")


class LogExecutor:
    """Sends nothing: writes the resume it would have sent to the log and the mark."""

    name = "log"

    def __init__(self, prompt: str = DEFAULT_PROMPT) -> None:
        self.prompt = prompt

    def deliver(self, delivery: Delivery) -> Outcome:
        would_send = {
            "message": self.prompt,
            "note": audit_note(delivery),
            "expected_attempt": delivery.attempt,
            "mark": delivery.mark_json(),
        }
        log_event(
            logger, "resume_logged", root_id=delivery.root_id, run_id=delivery.run_id,
            attempt=delivery.attempt, attempt_key=delivery.attempt_key,
        )  # fmt: skip
        return Outcome(MarkState.LOGGED, "logged", json.dumps(would_send, sort_keys=True))

    def lookup(self, delivery: Delivery, now: datetime) -> Lookup | None:
        return None

    def close(self) -> None:
        return None
