"""Executors deliver a resume: `webhook` (POST to the host), `command` (spawn a program) and
`log` (record only). The sweeper picks one from REWAKE_EXECUTOR."""

from __future__ import annotations

from rewake.executors.base import DEFAULT_PROMPT, Delivery, Executor, Lookup, Outcome
from rewake.executors.command import CommandExecutor
from rewake.executors.log import LogExecutor
from rewake.executors.webhook import WebhookExecutor

__all__ = [
    "DEFAULT_PROMPT",
    "CommandExecutor",
    "Delivery",
    "Executor",
    "LogExecutor",
    "Lookup",
    "Outcome",
    "WebhookExecutor",
]
