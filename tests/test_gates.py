"""The gates' invariant: a gate only saves time, it never changes a verdict.

Before running a pattern the scanners test its literal needles (rewake.parsers.grammar.GateIndex,
Gated); a text with none of them skips the regex. That is sound only if every text the regex
can match holds a needle. A regex that allows a line break or a run of spaces where its
needle has one space ("You're out of Codex\\nmessages") is hidden by its own gate in wrapped
output. So every corpus case, and variants of it shaped the way terminals and transcripts
reshape text (wrapped at many widths, lines joined, spaces re-spaced, CRLF, box borders), is
parsed with the gates on and with every gate open, and the two verdicts must be identical.
With the gates on, every text is read only in the stretches around its needles, as long
scrollback is (rewake.parsers.grammar.Gated.finditer); with every gate open, whole.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from rewake.parsers import claude, codex, gemini, grammar, parse
from rewake.parsers.grammar import Gated, GateIndex
from tests.support import corpus
from tests.support.corpus import Case

ALL_GATES: tuple[Gated, ...] = (*claude.GATES, *codex.GATES, *gemini.GATES)
# A text holding every needle opens every gate of any index: the gates-off switch below asks
# the real GateIndex.open about it, so it needs no knowledge of the index's insides.
EVERY_NEEDLE = "\n".join(sorted({needle for gate in ALL_GATES for needle in gate.needles}))
# Long scrollback gets fewer random variants: the deterministic ones already reshape it whole.
LONG_TEXT = 20_000
RANDOM_VARIANTS = 6


@contextmanager
def gates_open(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every gated pattern runs on every text, as if the parser had no gates."""
    with monkeypatch.context() as patch:
        open_needles = GateIndex.open
        patch.setattr(GateIndex, "open", lambda index, text: open_needles(index, EVERY_NEEDLE))
        patch.setattr(Gated, "finditer", lambda gate, text: gate.pattern.finditer(text))
        yield


# ---- how terminals and transcripts reshape text ----------------------------------------


def word_wrap(text: str, width: int, indent: str = "") -> str:
    """Lines longer than width broken at their last space before it, as Ink and most TUIs do;
    continuation lines start with indent."""
    out = []
    for line in text.split("\n"):
        # A break inside a continuation's indent would make no progress: look past it.
        lead = 1
        while len(line) > width:
            cut = line.rfind(" ", lead, width + 1)
            if cut < lead:
                break
            out.append(line[:cut])
            line = indent + line[cut + 1 :]
            lead = len(indent) + 1
        out.append(line)
    return "\n".join(out)


def hard_wrap(text: str, width: int) -> str:
    """Lines cut every width characters, wherever that falls, as a raw terminal does."""
    out: list[str] = []
    for line in text.split("\n"):
        out.extend(line[i : i + width] for i in range(0, max(len(line), 1), width))
    return "\n".join(out)


def boxed(text: str) -> str:
    """Each line inside a box-drawn border, padded to the widest, as Claude draws panels."""
    lines = text.split("\n")
    width = max(len(line) for line in lines)
    rows = [f"│ {line.ljust(width)} │" for line in lines]
    return "\n".join([f"╭{'─' * (width + 2)}╮", *rows, f"╰{'─' * (width + 2)}╯"])


def respaced(text: str, rng: random.Random) -> str:
    """Single spaces widened and runs of spaces narrowed, at random."""
    return re.sub(r" +", lambda run: " " * rng.choice((1, 2, 3)) if len(run[0]) == 1 else " ", text)


def joined(text: str, rng: random.Random) -> str:
    """Some line breaks removed, as a log that strips them or a copy from a narrow pane."""
    parts = text.split("\n")
    out = parts[0]
    for part in parts[1:]:
        out += rng.choice((" ", "", "\n")) + part
    return out


def fixed_variants(text: str) -> dict[str, str]:
    """The reshapings every case gets: each hides a needle that a too-literal gate expects."""
    return {
        "every-space-a-break": text.replace(" ", "\n"),
        "every-space-a-break-indented": text.replace(" ", "\n  "),
        "every-space-doubled": text.replace(" ", "  "),
        "lines-joined": text.replace("\n", " "),
        "crlf": text.replace("\n", "\r\n"),
        "boxed": boxed(text),
    }


def random_variants(text: str, rng: random.Random) -> dict[str, str]:
    shapes: list[tuple[str, Callable[[str], str]]] = [
        ("word-wrap", lambda t: word_wrap(t, rng.randint(8, 100), rng.choice(("", "  ", "    ")))),
        ("hard-wrap", lambda t: hard_wrap(t, rng.randint(12, 120))),
        ("respaced", lambda t: respaced(t, rng)),
        ("joined", lambda t: joined(t, rng)),
        ("boxed-wrap", lambda t: boxed(word_wrap(t, rng.randint(20, 80)))),
        ("wrap-crlf", lambda t: word_wrap(t, rng.randint(10, 90)).replace("\n", "\r\n")),
    ]
    count = RANDOM_VARIANTS if len(text) <= LONG_TEXT else 1
    variants = {}
    for n in range(count):
        name, shape = shapes[rng.randrange(len(shapes))]
        variants[f"{name}-{n}"] = shape(text)
    return variants


def variants_of(case: Case) -> dict[str, str]:
    rng = random.Random(case.id)  # seeded per case: the same variants on every run
    return {
        "as-captured": case.text,
        **fixed_variants(case.text),
        **random_variants(case.text, rng),
    }


def verdicts(case: Case, texts: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {
        name: parse(
            text, observed_at=case.observed_at, zone=case.zone, provider=case.provider
        ).to_json()
        for name, text in texts.items()
    }


@pytest.mark.parametrize("case", corpus.params(corpus.cases()))
def test_gates_never_change_a_verdict(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """A corpus case and its wrapped, joined, re-spaced, CRLF and boxed variants get the same
    verdict with the gates on, each text read only around its needles, as with every gated
    pattern run over the whole text."""
    texts = variants_of(case)
    with monkeypatch.context() as patch:
        patch.setattr(grammar, "_SHARED_STRETCH_GAP", 0)  # every text read in stretches
        gated = verdicts(case, texts)
    with gates_open(monkeypatch):
        ungated = verdicts(case, texts)
    differing = {
        name: {
            field: (gated[name][field], ungated[name][field])
            for field in gated[name]
            if gated[name][field] != ungated[name][field]
        }
        for name in texts
        if gated[name] != ungated[name]
    }
    # Each entry: variant -> {field: (with the gates, with every gate open)}.
    assert differing == {}


def test_gates_open_opens_every_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch the invariant test uses really opens every gated pattern, for each
    scanner's index, on a text that holds no needle at all."""
    indexes = [GateIndex(claude.GATES), GateIndex(codex.GATES), GateIndex(gemini.GATES)]
    assert all(index.open("-") == set() for index in indexes)
    with gates_open(monkeypatch):
        for gates, index in zip((claude.GATES, codex.GATES, gemini.GATES), indexes, strict=True):
            assert index.open("-") == set(gates)
        assert all(list(gate.finditer("")) == list(gate.pattern.finditer("")) for gate in ALL_GATES)


def test_variants_reshape_the_text() -> None:
    """The variants differ from the captured text where it has spaces and lines, and only in
    white space and borders: the words stay."""
    text = "You're out of Codex messages · resets 3pm\nnext line here"
    variants = fixed_variants(text)
    assert "You're\nout\nof\nCodex\nmessages" in variants["every-space-a-break"]
    assert all(variant != text for variant in variants.values())
    for variant in variants.values():
        words = re.sub(r"[\s│╭╮╰╯─]+", " ", variant).split()
        assert words == text.split()
    assert word_wrap("aaaa bbbb cccc", 9) == "aaaa bbbb\ncccc"
    assert hard_wrap("abcdefg", 3) == "abc\ndef\ng"
