"""Screenshots of the web page for docs/web.md, on the seeded sessions.

    python tests/browser/make_screenshots.py         # writes docs/screenshots/*.png
    python tests/browser/make_screenshots.py DIR     # writes them to DIR instead

tests/browser/test_web_browser.py runs it into a temporary folder, so a change that breaks it
fails the suite; the committed pictures are the ones it wrote last.

Uses Debian's chromium by path, as the browser tests do; no browser download.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rewake.security.browser import COOKIE  # noqa: E402
from tests.browser.browser_launch import launch_chromium  # noqa: E402
from tests.browser.web_seed import SECRET, seeded_site  # noqa: E402

OUT = ROOT / "docs" / "screenshots"
#: (file, path, viewport width, whole page?)
SHOTS = [
    ("sessions-desktop.png", "/", 1200, True),
    ("sessions-phone.png", "/", 375, False),
    ("session-page.png", "/sessions/billing-refactor", 1000, True),
]


def main(out: Path = OUT) -> list[Path]:
    """Write every SHOTS picture to `out`; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with (
        tempfile.TemporaryDirectory() as directory,
        seeded_site(Path(directory)) as api,
        launch_chromium() as browser,
    ):
        for name, path, width, whole in SHOTS:
            context = browser.new_context(
                viewport={"width": width, "height": 900 if width > 400 else 812},
                locale="en-GB",
                timezone_id="Europe/Berlin",
                device_scale_factor=1,
            )
            context.add_cookies([{"name": COOKIE, "value": SECRET, "url": api.url}])
            page = context.new_page()
            page.goto(api.url + path)
            page.wait_for_function(
                "document.querySelector('[data-zone]').textContent.includes('browser')"
            )
            page.screenshot(path=out / name, full_page=whole)
            context.close()
            written.append(out / name)
    return written


if __name__ == "__main__":
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(path)
