"""Every corpus case: parse the captured text and compare with the verdict worked out by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from rewake.parsers import parse

CORPUS = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    spec: dict[str, Any]


def load_cases() -> list[Case]:
    cases = []
    for spec_path in sorted(CORPUS.glob("*/*.json")):
        if spec_path.parent.name == "templates":
            continue  # message templates read from the CLIs' code: tests/test_templates.py
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        text_path = spec_path.with_suffix(".txt")
        text = text_path.read_bytes().decode("utf-8")
        cases.append(Case(id=f"{spec_path.parent.name}/{spec_path.stem}", text=text, spec=spec))
    return cases


CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_corpus_case(case: Case) -> None:
    """The parser's verdict on a captured or synthetic message equals the hand-worked one."""
    spec = case.spec
    verdict = parse(
        case.text,
        observed_at=datetime.fromisoformat(spec["observed_at"]),
        zone=spec["zone"],
        provider=spec["provider"],
    ).to_json()
    expected = dict(spec["expected"])

    evidence_part = expected.pop("evidence")
    evidence = verdict.pop("evidence")
    if evidence_part is None:
        assert evidence is None
    else:
        assert evidence is not None, "expected evidence"
        assert case.text[evidence["start"] : evidence["end"]] == evidence["text"]
        assert evidence_part in evidence["text"]

    expected_refusal = expected.pop("refusal")
    refusal = verdict.pop("refusal")
    if expected_refusal is None:
        assert refusal is None, refusal
    else:
        assert refusal is not None, "expected a refusal"
        assert refusal["code"] == expected_refusal["code"], refusal
        assert expected_refusal.get("detail_contains", "") in refusal["detail"]

    expected_retry = expected.pop("retry_after_s")
    retry = verdict.pop("retry_after_s")
    if expected_retry is None:
        assert retry is None
    else:
        assert retry == pytest.approx(expected_retry, abs=1e-3)

    assert verdict == expected
