"""The README's API section lists every error code; its requests and answers are checked against
a live `rewake serve` by tests/e2e/test_readme_http.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewake.errors import CODES

README = Path(__file__).resolve().parents[2] / "README.md"


def api_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("<!-- api:start -->") : text.index("<!-- api:end -->")]


@pytest.mark.parametrize("code", sorted(CODES))
def test_readme_lists_every_error_code(code: str) -> None:
    """Every problem code the service can answer with is in the README's error table."""
    assert f"`{code}`" in api_section()
