"""The service's secrets: read from files, and never left in the environment of a process that
starts programs.

A process's environment is no place for a secret once it starts agents: any process of the
same user reads `/proc/<pid>/environ` of its parent, whatever environment the parent gave it.
So the service takes its secrets two ways:

- from files: `REWAKE_<NAME>_FILE` names a file holding `REWAKE_<NAME>` (the `_FILE`
  convention of official container images; with systemd, `LoadCredential=` and
  `REWAKE_<NAME>_FILE=%d/<credential>`). The file is read once, at start; its surrounding
  white space (the final newline an editor adds) is not part of the value.
- from the environment, as every existing deployment gives them. Then `seal_environment`, the
  first thing `rewake serve` and `rewake sweep` do, re-executes the same program (same pid,
  same arguments) with those variables removed, handing their values over in an anonymous
  memory file whose descriptor the new image reads once and closes before anything starts.
  After execve, `/proc/<pid>/environ` shows the new environment, without them.

Imports nothing of rewake: the settings read it.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence

#: The settings whose values are secrets: bearer secrets, the signing key, and URLs that carry
#: credentials in their user info or query. Each also has a `_FILE` variant.
SECRET_VARIABLES = (
    "REWAKE_API_TOKENS", "REWAKE_WEBHOOK_SECRET", "REWAKE_DATABASE_URL", "REWAKE_WEBHOOK_URL",
    "REWAKE_WEBHOOK_LOOKUP_URL", "REWAKE_NOTIFY_URL", "REWAKE_NOTIFY",
)  # fmt: skip
FILE_SUFFIX = "_FILE"
#: The descriptor of the memory file that carries the secrets across the re-execution.
HANDOVER_VAR = "REWAKE_SECRETS_FD"
#: The largest secret file read: a secret is a line, not a data set (and /dev/zero is no file).
MAX_FILE_BYTES = 64 * 1024
#: Without memfd_create (not Linux) the values go through a pipe, which must hold them whole.
PIPE_BYTES = 4096


class SecretError(Exception):
    """A secret that cannot be read; `code` is stable, the message names no secret."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

    def __str__(self) -> str:
        return f"{self.args[0]} ({self.code})"


#: The values handed over by the process this one re-executed from (`seal_environment`).
_handed: dict[str, str] = {}


def handed_over() -> dict[str, str]:
    """The secret variables this process took out of its environment, by name."""
    return dict(_handed)


def read_secret_files(environ: Mapping[str, str]) -> dict[str, str]:
    """The value of each secret whose `_FILE` variable is set, by the secret's name. A secret
    set both ways is `secret_conflict`; a file that cannot be read (missing, not readable, not
    text, larger than MAX_FILE_BYTES) `secret_file_unreadable`; an empty one `secret_file_empty`.
    """
    values = {}
    for name in SECRET_VARIABLES:
        path = environ.get(name + FILE_SUFFIX)
        if path is None:
            continue
        if name in environ or name in _handed:
            raise SecretError(
                "secret_conflict", f"{name} and {name}{FILE_SUFFIX} are both set: keep one"
            )
        values[name] = _read_file(name + FILE_SUFFIX, path)
    return values


def _read_file(variable: str, path: str) -> str:
    try:
        # Non-blocking: a FIFO named here is refused, never waited on.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SecretError("secret_file_unreadable", f"{variable}: {path} is not a file")
            data = os.read(fd, MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            raise SecretError(
                "secret_file_unreadable", f"{variable}: {path} is over {MAX_FILE_BYTES} bytes"
            )
        value = data.decode("utf-8").strip()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise SecretError(
            "secret_file_unreadable", f"{variable}: cannot read {path}: {reason}"
        ) from None
    except UnicodeDecodeError:
        raise SecretError(
            "secret_file_unreadable", f"{variable}: {path} is not UTF-8 text"
        ) from None
    if not value:
        raise SecretError("secret_file_empty", f"{variable}: {path} is empty")
    return value


def given_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every secret the service was given, by variable: from the environment, handed over at
    re-execution, or read from its file."""
    environ = os.environ if environ is None else environ
    given = {name: environ[name] for name in SECRET_VARIABLES if name in environ}
    given.update(_handed)
    given.update(read_secret_files(environ))
    return given


def seal_environment(
    environ: MutableMapping[str, str] | None = None,
    *,
    argv: Sequence[str] | None = None,
    executable: str | None = None,
    execve: Callable[[str, list[str], dict[str, str]], object] | None = None,
) -> None:
    """Take the secrets out of this process's environment. In the re-executed image: read the
    handed-over values and close their descriptor. Otherwise, when a secret variable is set:
    re-execute this very command without them (execve does not return). Raises SecretError
    (`secret_handover_failed`) when the values cannot be handed over or received."""
    environ = os.environ if environ is None else environ
    fd_text = environ.pop(HANDOVER_VAR, None)
    if fd_text is not None:
        _handed.update(_receive(fd_text))
        return
    present = {name: environ[name] for name in SECRET_VARIABLES if name in environ}
    if not present:
        return
    fd = _memory_file(json.dumps(present).encode("utf-8"))
    clean = {name: value for name, value in environ.items() if name not in present}
    clean[HANDOVER_VAR] = str(fd)
    command = list(sys.orig_argv if argv is None else argv)
    try:
        (execve or os.execve)(executable or sys.executable, command, clean)
    except OSError as error:
        os.close(fd)
        raise SecretError(
            "secret_handover_failed", f"cannot re-execute {command[0]!r}: {error.strerror}"
        ) from error


def _memory_file(data: bytes) -> int:
    """A descriptor, inherited across execve, from which `data` reads from its start."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("rewake-secrets", 0)  # no MFD_CLOEXEC: the new image reads it
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    else:
        if len(data) > PIPE_BYTES:
            raise SecretError(
                "secret_handover_failed",
                f"the secrets in the environment exceed {PIPE_BYTES} bytes: give them as files",
            )
        fd, write_end = os.pipe()
        os.write(write_end, data)
        os.close(write_end)
    os.set_inheritable(fd, True)
    return fd


def _receive(fd_text: str) -> dict[str, str]:
    try:
        fd = int(fd_text)
        chunks = []
        try:
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
        finally:
            os.close(fd)
        values = json.loads(b"".join(chunks))
    except (OSError, ValueError) as error:
        raise SecretError(
            "secret_handover_failed", f"{HANDOVER_VAR}: cannot read the handed-over settings"
        ) from error
    if not isinstance(values, dict) or not all(
        name in SECRET_VARIABLES and isinstance(value, str) for name, value in values.items()
    ):
        raise SecretError("secret_handover_failed", f"{HANDOVER_VAR}: not rewake's settings")
    return values
