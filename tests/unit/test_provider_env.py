"""The provider variables a resumed CLI would not get: `rewake setup` writes a unit that loads
an environment file and names what of the shell's keys is missing there, and `rewake doctor`
says the same for the sweeper it can see."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewake.runner.clis import provider_env
from rewake.runner.commands.setup import credential_advice
from rewake.runner.setup import doctor
from rewake.runner.setup.sweeper_service import service_file


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A shell with Anthropic's key, Bedrock's region and a Codex provider reading its own."""
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text(
        '[model_providers.mock]\nname = "mock"\nenv_key = "MOCK_OPENAI_KEY"\n'
    )
    return {
        "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"), "PATH": "/usr/bin:/bin",
        "CODEX_HOME": str(codex), "ANTHROPIC_API_KEY": "sk-ant", "AWS_REGION": "eu-west-1",
        "MOCK_OPENAI_KEY": "sk-mock", "EDITOR": "vi",
    }  # fmt: skip


def test_the_provider_variables_include_a_codex_providers_env_key(env: dict[str, str]) -> None:
    """Known prefixes and the env_key of Codex's config; not every variable of the shell."""
    assert provider_env.provider_variables(env) == [
        "ANTHROPIC_API_KEY", "AWS_REGION", "CODEX_HOME", "MOCK_OPENAI_KEY",
    ]  # fmt: skip


def test_a_sweeper_from_this_shell_passes_the_allowlist_not_the_rest(env: dict[str, str]) -> None:
    """Started from this shell, a sweeper's resumed CLI gets ANTHROPIC_* and CODEX_*, not
    AWS_* or the Codex provider's key, until REWAKE_PASS_ENV names them."""
    assert provider_env.unreached(env, env) == ["AWS_REGION", "MOCK_OPENAI_KEY"]
    named = {**env, "REWAKE_PASS_ENV": "AWS_*,MOCK_OPENAI_KEY"}
    assert provider_env.unreached(env, named) == []


def test_setups_unit_loads_the_environment_file_and_setup_names_what_is_missing(
    env: dict[str, str],
) -> None:
    """The unit loads <config>/rewake/sweeper.env; until the keys are there, setup names them
    all and says where to put them; then only those REWAKE_PASS_ENV must also name."""
    path = Path(env["XDG_CONFIG_HOME"]) / "rewake" / "sweeper.env"
    unit = service_file("linux", env, uid=1000, rewake=["/opt/rewake"]).content.decode()
    assert f"EnvironmentFile=-{path}" in unit.splitlines()
    advice = credential_advice(env, "linux")
    assert "ANTHROPIC_API_KEY, AWS_REGION, CODEX_HOME, MOCK_OPENAI_KEY" in advice[0]
    assert str(path) in advice[0]
    path.parent.mkdir(parents=True)
    path.write_text(
        "# keys for resumed CLIs\nANTHROPIC_API_KEY=sk-ant\nAWS_REGION='eu-west-1'\n"
        f"CODEX_HOME={env['CODEX_HOME']}\nMOCK_OPENAI_KEY=sk-mock\n"
    )
    assert "AWS_REGION, MOCK_OPENAI_KEY" in credential_advice(env, "linux")[0]
    with path.open("a") as more:
        more.write("REWAKE_PASS_ENV=AWS_*,MOCK_OPENAI_KEY\n")
    assert credential_advice(env, "linux") == []


def test_doctor_names_the_variables_setups_sweeper_would_not_pass(env: dict[str, str]) -> None:
    """With setup's unit installed, doctor reads its environment file; without, the shell."""
    assert "AWS_REGION, MOCK_OPENAI_KEY" in doctor.resumed_cli_lines(env)[0]
    unit = Path(env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "rewake-sweeper.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")
    lines = doctor.resumed_cli_lines(env)
    assert "ANTHROPIC_API_KEY, AWS_REGION, CODEX_HOME, MOCK_OPENAI_KEY" in lines[0]
    assert "sweeper.env" in lines[0]


def test_doctor_checks_that_setups_sweeper_reports_back_to_this_shells_sessions(
    env: dict[str, str],
) -> None:
    """The unit setup wrote from this shell records where `rewake run` here does: ✓. Run from
    a shell with another state dir, doctor says the resumes would not report back, and fails."""
    service = service_file("linux", env, uid=1000, rewake=["/opt/rewake"])
    service.path.parent.mkdir(parents=True)
    service.path.write_bytes(service.content)
    lines, ok = doctor.report_back_lines(env)
    assert ok and lines == ["resumes: the sweeper `rewake setup` installed records them here ✓"]
    elsewhere = {**env, "REWAKE_STATE_DIR": "/srv/other state"}
    lines, ok = doctor.report_back_lines(elsewhere)
    assert not ok and "would not report back" in lines[0]
    assert "this shell's are in /srv/other state" in lines[0]
    assert "Run `rewake setup` again from this shell" in lines[0]
