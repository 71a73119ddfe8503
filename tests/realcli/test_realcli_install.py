"""The install support of the real-CLI tier, without installing anything: how a pinned
version is recognised, and that a missing node/npm skips the tier, or fails it when
REWAKE_REQUIRE_REALCLI=1 says the CLIs must be there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realcli import realcli_drive, realcli_install
from tests.realcli.realcli_install import CLAUDE, CODEX, GEMINI, Unavailable, binary_path, ensure


@pytest.mark.parametrize(
    ("printed", "version", "matches"),
    [
        ("2.1.332 (Claude Code)", "2.1.332", True),
        ("2.1.197 (Claude Code)", "2.1.332", False),
        ("codex-cli 0.171.0", "0.171.0", True),
        ("codex-cli 0.171.01", "0.171.0", False),
        ("0.61.0", "0.61.0", True),
        ("", "0.61.0", False),
    ],
)
def test_version_matches_only_the_exact_pin(printed: str, version: str, matches: bool) -> None:
    """`--version` output matches a pin only when it names exactly that version."""
    assert realcli_install.version_matches(printed, version) is matches


def test_cache_is_outside_the_tree_and_overridable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each pin gets its own prefix under REWAKE_REALCLI_CACHE, named by package and version."""
    monkeypatch.setenv("REWAKE_REALCLI_CACHE", str(tmp_path))
    assert binary_path(CODEX) == tmp_path / "codex-0.171.0" / "node_modules" / ".bin" / "codex"
    assert binary_path(CLAUDE).parents[2].name == "claude-code-2.1.332"
    assert binary_path(GEMINI).name == "gemini"


def no_node(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REWAKE_REALCLI_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(realcli_install.shutil, "which", lambda name: None)
    realcli_drive._checked.cache_clear()


def test_missing_npm_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With an empty cache and no node/npm, ensure says why instead of trying an install."""
    no_node(monkeypatch, tmp_path)
    with pytest.raises(Unavailable, match="node and npm"):
        ensure(CODEX)


def test_missing_npm_skips_the_tier(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without REWAKE_REQUIRE_REALCLI, a CLI that cannot be had skips the test (a user's
    machine without node)."""
    no_node(monkeypatch, tmp_path)
    monkeypatch.delenv("REWAKE_REQUIRE_REALCLI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="node and npm"):
        realcli_drive.cli_binary(CODEX)
    realcli_drive._checked.cache_clear()


def test_required_tier_fails_instead(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With REWAKE_REQUIRE_REALCLI=1 (CI), the same missing CLI fails the test, saying why."""
    no_node(monkeypatch, tmp_path)
    monkeypatch.setenv("REWAKE_REQUIRE_REALCLI", "1")
    with pytest.raises(pytest.fail.Exception, match="REWAKE_REQUIRE_REALCLI=1"):
        realcli_drive.cli_binary(CODEX)
    realcli_drive._checked.cache_clear()
