"""The README's API section: every request shown is sent, and the answer shown comes back."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import migrate, serve_api

from rewake.errors import CODES

README = Path(__file__).resolve().parents[2] / "README.md"
CUT = "…"


def api_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("<!-- api:start -->") : text.index("<!-- api:end -->")]


def exchanges() -> list[tuple[str, str]]:
    """The section's ```http blocks, paired: a request, then its answer."""
    blocks = re.findall(r"```http\n(.*?)```", api_section(), flags=re.DOTALL)
    assert len(blocks) % 2 == 0 and blocks
    return list(zip(blocks[::2], blocks[1::2], strict=True))


def split(block: str) -> tuple[str, dict[str, str], str]:
    head, _, body = block.partition("\n\n")
    first, *header_lines = head.strip().splitlines()
    headers = dict(line.split(": ", 1) for line in header_lines)
    return first, headers, body.strip()


def contains(actual: Any, shown: Any, where: str = "") -> None:
    """`shown` is `actual` with fields cut: dicts may leave keys out (marked "…"), and "…"
    stands for any value."""
    if shown == CUT:
        return
    if isinstance(shown, dict):
        assert isinstance(actual, dict), where
        for key, value in shown.items():
            if key != CUT:
                assert key in actual, f"{where}.{key} missing"
                contains(actual[key], value, f"{where}.{key}")
        return
    if isinstance(shown, list):
        assert isinstance(actual, list) and len(actual) == len(shown), where
        for index, (got, want) in enumerate(zip(actual, shown, strict=True)):
            contains(got, want, f"{where}[{index}]")
        return
    assert actual == shown, f"{where}: {actual!r} != {shown!r}"


def test_readme_examples_answer_as_shown(tmp_path: Path) -> None:
    """Each README API request, sent in order, gets the status, type and body shown under it."""
    url = f"sqlite:///{tmp_path / 'readme.db'}"
    migrate(url)
    with serve_api(url) as api, api.client({}) as client:
        for request, answer in exchanges():
            line, headers, body = split(request)
            method, target = line.split(" ", 1)
            sent = client.request(
                method, target, headers=headers, content=body.encode() if body else None
            )
            status_line, answer_headers, shown = split(answer)
            assert sent.status_code == int(status_line.split()[1]), (line, sent.text)
            kind = answer_headers["Content-Type"]
            assert sent.headers["content-type"].startswith(kind), line
            if kind.endswith("json"):
                contains(sent.json(), json.loads(shown), line)
            else:
                for expected in shown.splitlines():
                    assert expected in sent.text.splitlines(), (line, expected)


@pytest.mark.parametrize("code", sorted(CODES))
def test_readme_lists_every_error_code(code: str) -> None:
    """Every problem code the service can answer with is in the README's error table."""
    assert f"`{code}`" in api_section()
