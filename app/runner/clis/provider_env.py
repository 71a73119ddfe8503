"""Which of the user's provider variables a resumed CLI would get.

A CLI that a sweeper resumes runs with the sweeper's environment filtered through the agent's
allowlist (`rewake.spawn_env.agent_environment`): a key set in the user's shell reaches it only
when the sweeper has it (a user unit has only what it was written with, and the environment
file it loads) and the allowlist or REWAKE_PASS_ENV lets it through. `rewake setup` and `rewake
doctor` name the variables that would not, so that a resume does not fail hours later on a
"missing environment variable".
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

from rewake.spawn_env import agent_environment

#: Where the CLIs (and the clouds they run on) take credentials and endpoints from: Claude Code
#: (Anthropic, Bedrock, Vertex), Codex (OpenAI, Azure), Gemini (Google).
PROVIDER_PREFIXES = (
    "ANTHROPIC_", "CLAUDE_CODE_", "OPENAI_", "AZURE_OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_",
    "AWS_", "VERTEX_",
)  # fmt: skip
#: The environment file the sweeper's user unit loads (`rewake setup`), under the config dir.
ENV_FILE = Path("rewake") / "sweeper.env"


def codex_env_keys(env: Mapping[str, str]) -> set[str]:
    """The variables Codex's configured providers read their keys from (`env_key` in
    $CODEX_HOME/config.toml, default ~/.codex): a name of the user's choosing."""
    home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else _home(env) / ".codex"
    try:
        config = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    providers = config.get("model_providers")
    if not isinstance(providers, dict):
        return set()
    keys = {p.get("env_key") for p in providers.values() if isinstance(p, dict)}
    return {key for key in keys if isinstance(key, str) and key}


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def provider_variables(env: Mapping[str, str]) -> list[str]:
    """The provider variables set in `env`, sorted."""
    extra = codex_env_keys(env)
    return sorted(name for name in env if name.startswith(PROVIDER_PREFIXES) or name in extra)


def unreached(shell: Mapping[str, str], sweeper: Mapping[str, str]) -> list[str]:
    """The provider variables of `shell` that a CLI resumed by a sweeper running with
    `sweeper` would not get."""
    passed = agent_environment(sweeper)
    return [name for name in provider_variables(shell) if name not in passed]


def env_file(env: Mapping[str, str]) -> Path:
    """The environment file of the sweeper's user unit."""
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else None
    return (config or _home(env) / ".config") / ENV_FILE


def read_env_file(path: Path) -> dict[str, str]:
    """`NAME=value` lines as systemd's EnvironmentFile= reads the simple ones (comments and
    blank lines skipped, one level of quotes removed); {} when the file is not there."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    values = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")) or "=" not in stripped:
            continue
        name, _, value = stripped.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def advice(missing: list[str], where: str) -> list[str]:
    """What to tell the user about `missing`; `where` says how the sweeper gets variables."""
    if not missing:
        return []
    return [
        f"! a resumed CLI would not get {', '.join(missing)} from this shell: {where}",
        "  (a name outside ANTHROPIC_*, CLAUDE_*, OPENAI_*, CODEX_*, GEMINI_*, GOOGLE_* must also"
        " be in REWAKE_PASS_ENV, e.g. REWAKE_PASS_ENV=AWS_*); else the resume fails on it",
    ]


def current_user_sweeper_env(env: Mapping[str, str]) -> dict[str, str]:
    """What a sweeper installed by `rewake setup` runs with, as far as variables go: its
    environment file (the unit's own settings are PATH and REWAKE_* only)."""
    return read_env_file(env_file(env))
