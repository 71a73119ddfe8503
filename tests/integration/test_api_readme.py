"""docs/api.md's examples section lists every error code; its requests and answers are checked
against a live `rewake serve` by tests/e2e/test_readme_http.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewake.errors import CODES

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def api_section() -> str:
    text = API_DOC.read_text(encoding="utf-8")
    return text[text.index("<!-- api:start -->") : text.index("<!-- api:end -->")]


@pytest.mark.parametrize("code", sorted(CODES))
def test_readme_lists_every_error_code(code: str) -> None:
    """Every problem code the service can answer with is in docs/api.md's error table."""
    assert f"`{code}`" in api_section()
