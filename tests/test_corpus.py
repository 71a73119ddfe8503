"""Every corpus case: parse the captured text and compare with the verdict worked out by hand."""

from __future__ import annotations

import pytest

from rewake.parsers import parse
from tests.support import corpus


@pytest.mark.parametrize("case", corpus.params(corpus.cases()))
def test_corpus_case(case: corpus.Case) -> None:
    """The parser's verdict on a captured or synthetic message equals the hand-worked one."""
    verdict = parse(
        case.text, observed_at=case.observed_at, zone=case.zone, provider=case.provider
    ).to_json()
    expected = case.expected

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
