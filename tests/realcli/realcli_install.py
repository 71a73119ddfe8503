"""The real CLIs, pinned to exact versions, installed with npm into a cache outside the tree.

Each (package, version) gets its own npm prefix under `REWAKE_REALCLI_CACHE` (default
`~/.cache/rewake/realcli/<name>-<version>`), reused when its binary prints the pinned version
and installed again otherwise: a plain `npm install` of a package has been seen to give an
older release than the registry's latest tag, so only an exact pin and a `--version` check
prove which CLI a test drove. No `--ignore-scripts`: Claude Code's native binary arrives
through its install script.

Where node or npm is missing, or the install fails, the tests skip saying why; with
REWAKE_REQUIRE_REALCLI=1 (as .ci/run sets it) they fail instead.

`python tests/realcli/realcli_install.py` installs every pin (what .ci/run calls).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REQUIRE_ENV = "REWAKE_REQUIRE_REALCLI"
CACHE_ENV = "REWAKE_REALCLI_CACHE"
#: npm's own timeout for one install; the CLIs' tarballs are up to ~190 MB.
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class Pin:
    """One CLI release: the npm package, its exact version and the binary it puts on PATH."""

    cli: str
    package: str
    version: str
    binary: str

    @property
    def slug(self) -> str:
        return f"{self.package.rsplit('/', 1)[-1]}-{self.version}"


CLAUDE = Pin("claude", "@anthropic-ai/claude-code", "2.1.332", "claude")
CLAUDE_OLD = Pin("claude", "@anthropic-ai/claude-code", "2.1.197", "claude")
CODEX = Pin("codex", "@openai/codex", "0.171.0", "codex")
GEMINI = Pin("gemini", "@google/gemini-cli", "0.61.0", "gemini")
PINS = (CLAUDE, CLAUDE_OLD, CODEX, GEMINI)


class Unavailable(Exception):
    """The CLI cannot be had here; the message says why."""


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "rewake" / "realcli"


def required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1"


def _node_env() -> dict[str, str]:
    """npm's environment: no update notice, no funding or audit calls."""
    env = dict(os.environ)
    env.update(
        NPM_CONFIG_UPDATE_NOTIFIER="false",
        NPM_CONFIG_FUND="false",
        NPM_CONFIG_AUDIT="false",
        DISABLE_AUTOUPDATER="1",
    )
    return env


def installed_version(binary: Path) -> str:
    """What `binary --version` prints (first line), or "" when it does not run."""
    try:
        process = subprocess.Popen(
            [str(binary), "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**_node_env(), "TERM": "dumb", "NO_COLOR": "1"},
        )  # fmt: skip
    except OSError:
        return ""
    try:
        out, _ = process.communicate(timeout=60)
    except BaseException as failed:
        # Gemini's launcher relaunches itself in a child node process, which killing the
        # launcher alone would leave running: the whole group it started in goes.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        if isinstance(failed, subprocess.TimeoutExpired):
            return ""
        raise
    lines = (out or "").strip().splitlines()
    return lines[0] if lines and process.returncode == 0 else ""


def version_matches(printed: str, version: str) -> bool:
    """`claude` prints "2.1.332 (Claude Code)", codex "codex-cli 0.171.0", gemini "0.61.0"."""
    return version in printed.replace("(", " ").split()


def binary_path(pin: Pin) -> Path:
    return cache_root() / pin.slug / "node_modules" / ".bin" / pin.binary


def ensure(pin: Pin) -> Path:
    """The pinned CLI's binary, installed if it is not in the cache yet (or is another version).

    Raises Unavailable when node/npm are missing or the install fails."""
    binary = binary_path(pin)
    if binary.exists() and version_matches(installed_version(binary), pin.version):
        return binary
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise Unavailable("node and npm are needed to install the real CLIs")
    prefix = binary.parents[2]
    prefix.mkdir(parents=True, exist_ok=True)
    # Two test processes (or CI and a developer) may install the same pin at once.
    with (prefix.parent / f"{pin.slug}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists() and version_matches(installed_version(binary), pin.version):
            return binary
        try:
            done = subprocess.run(
                ["npm", "install", "--prefix", str(prefix), "--no-save", "--no-fund",
                 "--no-audit", f"{pin.package}@{pin.version}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False,
                env=_node_env(),
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as failed:
            raise Unavailable(f"npm install {pin.package}@{pin.version}: {failed}") from failed
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise Unavailable(
                f"npm install {pin.package}@{pin.version} exited {done.returncode}: "
                + " | ".join(tail)
            )
    printed = installed_version(binary)
    if not version_matches(printed, pin.version):
        raise Unavailable(
            f"{pin.package}@{pin.version} installed, but `{pin.binary} --version` printed "
            f"{printed!r}"
        )
    return binary


def main() -> int:
    status = 0
    for pin in PINS:
        try:
            binary = ensure(pin)
        except Unavailable as why:
            print(f"✗ {pin.package}@{pin.version}: {why}", file=sys.stderr)
            status = 1
            continue
        print(f"✓ {pin.package}@{pin.version}: {binary}")
    return status


if __name__ == "__main__":
    sys.exit(main())
