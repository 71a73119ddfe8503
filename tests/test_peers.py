"""The peer vectors (tests/corpus/peers/): other projects' test inputs, each judged by hand.

Each vector carries the verdict docs/design.md's rules give it (not the peer's expectation, not what
the parser prints): the reset instant and its resolution, or the refusal or the kind, the rule
that decides, and `read`, which says what the parser may answer:

- `required`: the message states a time the rules allow reading; the parser must read it.
- `allowed`: wording no CLI prints, or liveness the rules leave open; the parser need not read
  it, but a reset it gives must be the judged one.
- `forbidden`: not a live stop, or a stop whose reset the rules refuse; no reset may come back
  as a stop.

One check per acceptance line of issue 14: no wrong instant, no false stop carrying a time,
every readable vector read. Run this module (`python -m tests.test_peers`) for a tally of each
check against the current parser.
"""

from __future__ import annotations

import sys
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from rewake.parsers import parse
from tests.support import corpus
from tests.support.corpus import Vector

CHECKS = ("wrong_instant", "false_stop", "unread")
VECTORS = corpus.vectors()


def _instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def verdict_of(vector: Vector) -> dict[str, Any]:
    spec = vector.spec
    return parse(
        vector.text,
        observed_at=datetime.fromisoformat(spec["observed_at"]),
        zone=spec["zone"],
        provider=spec["provider"],
    ).to_json()


def problems(vector: Vector, verdict: dict[str, Any]) -> dict[str, str]:
    """The checks the verdict fails, each with what went wrong."""
    expected = vector.expected
    read = vector.spec["read"]
    found: dict[str, str] = {}
    reset = verdict["reset_at"]
    is_stop = verdict["kind"] == "provider_quota"
    if reset is not None and expected["reset_at"] is not None:
        # The true reset lies anywhere in the judged interval: the verdict's interval must
        # hold all of it, or a resume may come before the reset (early) or be wrong.
        earliest = _instant(expected["reset_at"])
        latest = earliest + timedelta(seconds=expected["resolution_s"] or 0)
        start = _instant(reset)
        end = start + timedelta(seconds=verdict["resolution_s"] or 0)
        if not (start <= earliest and latest <= end):
            found["wrong_instant"] = (
                f"read {reset} +{verdict['resolution_s']}s, judged {expected['reset_at']}"
                f" +{expected['resolution_s']}s"
            )
    elif reset is not None and is_stop and expected["kind"] == "provider_quota":
        found["wrong_instant"] = f"read {reset}, judged refusal {expected['refusal']}"
    if (
        reset is not None
        and is_stop
        and expected["kind"] != "provider_quota"
        and read == "forbidden"
    ):
        found["false_stop"] = f"read a stop at {reset}, judged {expected['kind']}"
    if read == "required" and reset is None:
        refusal = verdict["refusal"]["code"] if verdict["refusal"] else None
        found["unread"] = f"kind {verdict['kind']}, refusal {refusal}: the rules read it"
    return found


@pytest.mark.parametrize("vector", corpus.params(VECTORS))
def test_peer_vector(vector: Vector) -> None:
    """A peer vector is read as judged: no wrong or early instant, no false stop, no refusal
    of a time the rules allow reading."""
    found = problems(vector, verdict_of(vector))
    assert found == {}, f"{vector.spec['rule']}: {vector.spec['why']}"


def test_vectors_are_judged_whole() -> None:
    """Every vector has a judgment the checks can use: a kind, an instant with its resolution
    or none, a deciding rule, and a read mode that fits the judgment."""
    kinds = {"provider_quota", "login_required", "transient", "other_failure", "none"}
    for vector in VECTORS:
        spec, expected = vector.spec, vector.expected
        assert expected["kind"] in kinds, vector.id
        assert spec["rule"], vector.id
        assert spec["class"] in ("real_cli", "synthetic", "other_cli"), vector.id
        assert (expected["reset_at"] is None) == (expected["resolution_s"] is None), vector.id
        if expected["kind"] == "provider_quota" and expected["reset_at"] is None:
            assert expected["refusal"], vector.id
        if spec["read"] == "required":
            assert expected["reset_at"] is not None, vector.id
            assert spec["class"] != "other_cli", vector.id
        if spec["class"] == "other_cli":
            assert spec["read"] == "forbidden", vector.id


def test_problems_catches_each_fault() -> None:
    """The checks themselves: an early instant, an invented reset, a false stop and an unread
    time are each reported, and a verdict equal to the judgment passes."""
    judged = Vector(
        id="judged",
        spec={
            "input": "text",
            "text": "",
            "read": "required",
            "expected": {"kind": "provider_quota", "reset_at": "2026-07-05T15:00:00Z",
                         "resolution_s": 60, "refusal": None},
        },
    )  # fmt: skip
    right = {"kind": "provider_quota", "reset_at": "2026-07-05T15:00:00Z", "resolution_s": 60,
             "refusal": None}  # fmt: skip
    assert problems(judged, right) == {}
    early = {**right, "resolution_s": 0}
    assert set(problems(judged, early)) == {"wrong_instant"}
    assert set(problems(judged, {**right, "reset_at": None})) == {"unread"}
    refused = Vector(
        id="refused",
        spec={**judged.spec, "read": "forbidden",
              "expected": {"kind": "provider_quota", "reset_at": None, "resolution_s": None,
                           "refusal": "stale"}},
    )  # fmt: skip
    assert set(problems(refused, right)) == {"wrong_instant"}
    not_a_stop = Vector(
        id="not-a-stop",
        spec={**refused.spec,
              "expected": {"kind": "none", "reset_at": None, "resolution_s": None,
                           "refusal": None}},
    )  # fmt: skip
    assert set(problems(not_a_stop, right)) == {"false_stop"}


def report() -> int:
    """How many vectors pass each check against the current parser, and which fail."""
    failing: dict[str, list[str]] = {check: [] for check in CHECKS}
    kinds_agree = 0
    by_class: Counter[str] = Counter()
    passing_by_class: Counter[str] = Counter()
    for vector in VECTORS:
        verdict = verdict_of(vector)
        found = problems(vector, verdict)
        for check, detail in found.items():
            failing[check].append(f"{vector.id}: {detail}")
        kinds_agree += verdict["kind"] == vector.expected["kind"]
        by_class[vector.spec["class"]] += 1
        passing_by_class[vector.spec["class"]] += not found
    total = len(VECTORS)
    applicable = {
        "wrong_instant": total,
        "false_stop": sum(vector.spec["read"] == "forbidden" for vector in VECTORS),
        "unread": sum(vector.spec["read"] == "required" for vector in VECTORS),
    }
    print(f"{total} peer vectors")
    for check in CHECKS:
        print(f"  {check:14} {applicable[check] - len(failing[check])}/{applicable[check]} pass")
    for name, count in sorted(by_class.items()):
        print(f"  class {name:9} {passing_by_class[name]}/{count} pass every check")
    print(f"  kind as judged  {kinds_agree}/{total} (informative)")
    for check in CHECKS:
        for line in failing[check]:
            print(f"{check}: {line}")
    return 0 if not any(failing.values()) else 1


if __name__ == "__main__":
    sys.exit(report())
