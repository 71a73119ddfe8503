"""The executor REWAKE_EXECUTOR names, built from the settings (refusing what cannot work)."""

from __future__ import annotations

import os
from typing import Any

from rewake.executors.base import DEFAULT_PROMPT, Executor
from rewake.executors.command import CommandExecutor, MarkStore
from rewake.executors.log import LogExecutor
from rewake.executors.webhook import WebhookExecutor
from rewake.secret_env import given_secrets


class ExecutorConfigError(ValueError):
    """The configured executor cannot start: the message says which setting is missing."""


def build_executor(settings: Any, *, store: MarkStore | None = None) -> Executor:
    """`log`, `webhook` (needs REWAKE_WEBHOOK_URL and REWAKE_WEBHOOK_SECRET) or `command`
    (needs REWAKE_COMMAND; `store` is where its program records the resume)."""
    prompt = settings.resume_prompt or DEFAULT_PROMPT
    try:
        if settings.executor == "webhook":
            return WebhookExecutor(
                settings.webhook_url,
                settings.webhook_secret,
                lookup_template=settings.webhook_lookup_url,
                timeout_s=settings.webhook_timeout_s,
                prompt=prompt,
            )
        if settings.executor == "command":
            if not settings.command:
                raise ExecutorConfigError("REWAKE_COMMAND is required by the command executor")
            # The secrets no longer sit in this process's environment (rewake.secret_env):
            # the program's allowlist picks what it needs of them from what was given.
            return CommandExecutor(
                settings.command,
                prompt=prompt,
                grace_s=settings.command_grace_s,
                env={**os.environ, **given_secrets()},
                store=store,
            )
    except ValueError as error:
        raise ExecutorConfigError(str(error)) from error
    return LogExecutor(prompt=prompt)
