"""Debian's chromium driven by Playwright by executable path: no browser download.

Where no browser can start, the tests skip, saying why; with REWAKE_REQUIRE_BROWSER=1 (as
.ci/run sets it, after installing chromium) they fail instead, so that CI never passes
without having run them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

#: Where a distribution puts chromium, in the order tried.
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Flags for a headless run as root in a container: nothing phones home or updates itself.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


#: Set to 1 where a browser that cannot start must fail the tests rather than skip them.
REQUIRE_ENV = "REWAKE_REQUIRE_BROWSER"


class BrowserUnavailable(Exception):
    """No chromium here, or Playwright could not start it; the message says which."""


def chromium_path() -> str:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserUnavailable(f"no chromium executable found (tried {', '.join(CANDIDATES)})")


@contextmanager
def launch_chromium() -> Iterator[Any]:
    """A headless chromium (Playwright gives each launch a fresh profile), closed afterwards."""
    executable = chromium_path()
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError as missing:
        raise BrowserUnavailable(f"playwright is not installed: {missing}") from missing
    manager = sync_playwright().start()
    try:
        try:
            browser = manager.chromium.launch(executable_path=executable, args=ARGS, headless=True)
        except Error as failed:
            raise BrowserUnavailable(f"{executable} did not start: {failed}") from failed
        try:
            yield browser
        finally:
            browser.close()
    finally:
        manager.stop()


@contextmanager
def chromium_for_tests() -> Iterator[Any]:
    """`launch_chromium` for a test fixture: no browser skips the tests, or fails them when
    REWAKE_REQUIRE_BROWSER=1 says a browser must be there."""
    try:
        with launch_chromium() as browser:
            yield browser
    except BrowserUnavailable as why:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but the browser is unavailable: {why}")
        pytest.skip(str(why))
