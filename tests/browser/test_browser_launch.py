"""The rule for a browser that cannot start: the browser tests skip, saying why, unless
REWAKE_REQUIRE_BROWSER=1 says they must run, when they fail."""

from __future__ import annotations

import pytest

from tests.browser import browser_launch

MISSING = "/nonexistent/chromium"


@pytest.fixture
def missing_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser_launch, "chromium_path", lambda: MISSING)


def _launch() -> None:
    with browser_launch.chromium_for_tests():
        raise AssertionError("a browser at a missing path started")


@pytest.mark.usefixtures("missing_browser")
def test_an_unavailable_browser_skips_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without REWAKE_REQUIRE_BROWSER, a browser that cannot start skips the tests."""
    monkeypatch.delenv(browser_launch.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception):
        _launch()


@pytest.mark.usefixtures("missing_browser")
def test_an_unavailable_browser_fails_where_one_is_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With REWAKE_REQUIRE_BROWSER=1, a browser that cannot start fails them, saying why."""
    monkeypatch.setenv(browser_launch.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="REWAKE_REQUIRE_BROWSER=1"):
        _launch()


def test_no_chromium_on_the_path_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no chromium on PATH, the browser is unavailable (and the rule above applies)."""
    monkeypatch.setattr(browser_launch, "CANDIDATES", ("no-such-chromium",))
    monkeypatch.setenv(browser_launch.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="no chromium executable found"):
        _launch()
