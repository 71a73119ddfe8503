"""The gate index opens exactly the patterns that testing each pattern's needles would open."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from rewake.parsers import claude, codex, gemini, general, pipeline
from rewake.parsers.findings import Observation
from rewake.parsers.grammar import Gated, GateIndex
from rewake.parsers.text import normalize
from tests.support import corpus

ALL_GATES = (*claude.GATES, *codex.GATES, *gemini.GATES, *general.GATES)


def _opened_one_by_one(text: str) -> set[Gated]:
    return {gate for gate in ALL_GATES if any(needle in text for needle in gate.needles)}


def _texts() -> list[str]:
    texts = [normalize(case.text).norm for case in corpus.cases()]
    # Every needle alone, and pieces of needles glued together: nested needles ("spend",
    # "spend cap") and needles filed under a character the text lacks.
    needles = sorted({needle for gate in ALL_GATES for needle in gate.needles})
    texts.extend(needles)
    rng = random.Random(11)
    for _ in range(2000):
        picked = rng.sample(needles, rng.randint(1, 4))
        texts.append(" ".join(needle[: rng.randint(1, len(needle))] for needle in picked))
    return texts


def test_index_opens_what_each_gate_opens() -> None:
    """GateIndex.open gives the patterns with a needle in the text, on corpus and made-up
    texts, for the index over all scanners, for each scanner's own, and for the ones parse
    uses for a given CLI (its scanner's and the shared one's)."""
    modules = (claude, codex, gemini, general)
    indexes = [
        (GateIndex(ALL_GATES), set(ALL_GATES)),
        (pipeline._gates(None), set(ALL_GATES)),
        *((GateIndex(module.GATES), set(module.GATES)) for module in modules),
        *(
            (pipeline._gates(name), {*module.GATES, *general.GATES})
            for name, module in (("claude", claude), ("codex", codex), ("gemini", gemini))
        ),
    ]
    for text in _texts():
        expected = _opened_one_by_one(text)
        for index, gates in indexes:
            assert index.open(text) == expected & gates, text


def test_scanners_read_the_same_with_a_shared_index() -> None:
    """A scanner finds the same with the gates parse opens for all scanners at once as with
    its own index."""
    context = Observation(observed_at=datetime(2026, 7, 25, tzinfo=UTC), zone=None)
    for case in corpus.cases():
        text = normalize(case.text)
        opened = pipeline._ALL_GATES.open(text.norm)
        for module in (claude, codex, gemini, general):
            assert module.scan(text, context, opened) == module.scan(text, context), case.id
