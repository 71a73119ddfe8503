"""The cheaper ways the parser builds and measures things give what the plain ways give."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from rewake.parsers import Evidence, Refusal, Verdict
from rewake.parsers.structured import json_lines, may_hold_json
from rewake.parsers.text import normalize
from rewake.parsers.verdict import new_evidence, new_verdict


def test_bounded_line_looks_equal_line_bounds_capped_by_reach() -> None:
    """line_start_within and line_end_within are line_start and line_end capped at `reach`,
    at every offset of texts with long, short and empty lines."""
    rng = random.Random(11)
    for _ in range(300):
        original = "".join(rng.choice("ab \n") for _ in range(rng.randint(0, 60)))
        text = normalize(original)
        for reach in (0, 1, 3, 7, 240):
            for offset in range(len(text.norm) + 1):
                expected_start = max(text.line_start(offset), offset - reach)
                expected_end = min(text.line_end(offset), offset + reach)
                assert text.line_start_within(offset, reach) == expected_start
                assert text.line_end_within(offset, reach) == expected_end


def test_original_span_of_one_run_is_a_shift() -> None:
    """A text with one kept run (escapes only before it) maps spans by a shift, trimmed as
    before, and an empty or reversed span to its start."""
    text = normalize("\x1b[1m  usage limit  ")
    assert text.original_span(0, len(text.norm)) == (6, 17)
    assert text.original_span(3, 3) == (7, 7)
    assert text.original_span(5, 2) == (9, 9)


def test_may_hold_json_is_true_for_every_text_with_a_json_line() -> None:
    """The JSON shortcut skips only texts where no line starts with a brace."""
    for text in ('{"a":1}', 'x\n{"a":1}', "x {\n}", 'x\n {"a":1}', "", "{"):
        if list(json_lines(text)):
            assert may_hold_json(text)
    assert not may_hold_json('x {"a":1}')


def test_new_verdict_equals_the_constructor() -> None:
    """new_verdict builds the same Verdict the dataclass constructor builds."""
    at = datetime(2026, 7, 19, 15, 40, tzinfo=UTC)
    evidence = new_evidence("resets 5:40pm", 3, 16)
    assert evidence == Evidence(text="resets 5:40pm", start=3, end=16)
    fast = new_verdict(
        "provider_quota", "claude", at, 60, "named_zone", None, "five_hour", None, True, None,
        evidence,
    )  # fmt: skip
    slow = Verdict(
        kind="provider_quota",
        provider="claude",
        reset_at=at,
        resolution_s=60,
        form="named_zone",
        scope="five_hour",
        native_auto_continue=True,
        evidence=evidence,
    )
    assert fast == slow
    assert fast.to_json() == slow.to_json()
    assert hash(fast) == hash(slow)


def test_new_verdict_checks_what_the_constructor_checks() -> None:
    """A provider_quota verdict without reset_at or refusal is refused by both ways."""
    with pytest.raises(ValueError, match="needs a refusal"):
        new_verdict(
            "provider_quota", "codex", None, None, None, None, None, None, False, None, None
        )
    refusal = Refusal("not_stated", "try again later")
    verdict = new_verdict(
        "provider_quota", "codex", None, None, None, refusal, None, None, False, None, None
    )
    assert verdict.refusal == refusal
