"""The exit statuses of every `rewake` command: one table, so a number means one thing.

A supervised CLI's own status passes through `rewake run` unchanged (1 when it failed with 0 or
died by a signal); these are rewake's own.
"""

from __future__ import annotations

import os
from enum import IntEnum

#: The command executor hands `rewake run --resume-of` one end of a pipe, by its number in this
#: variable, so that a resume's look (did the conversation move on? does an open CLI hold it?)
#: is told apart from a resume that runs: `LOOKING` is written as the program starts, `STARTING`
#: just before it starts a CLI or types into one. A program that said `LOOKING` is waited for
#: until it says `STARTING` or exits (its 7 or 8 then count), not only the executor's grace;
#: any other program is judged by the grace as before (rewake.executors.command).
LOOK_FD_ENV = "REWAKE_LOOK_FD"
LOOKING = b"L"
STARTING = b"S"


def tell_executor(word: bytes, *, last: bool = False) -> None:
    """Write `word` to the command executor's pipe when this process was given one (nothing
    otherwise, and nothing when the executor has stopped listening); `last` closes it."""
    value = os.environ.get(LOOK_FD_ENV, "")
    if not value.isdigit():
        return
    fd = int(value)
    try:
        os.write(fd, word)
        if last:
            os.close(fd)
            os.environ.pop(LOOK_FD_ENV, None)
    except OSError:
        os.environ.pop(LOOK_FD_ENV, None)


class Exit(IntEnum):
    OK = 0
    #: `rewake doctor` found a needed flag, CLI or store missing; `rewake sweep` was stopped
    #: before the schema became current; `rewake setup` wrote the sweeper's service but could
    #: not start (or stop) it: no user service manager answered, or it refused.
    PROBLEM = 1
    #: Bad usage or configuration (a name that is no valid id, an invalid setting, a schema
    #: this version cannot use; for `serve` and `migrate`, a database that cannot be used; for
    #: `setup`, a settings file that is no JSON object, or a platform it knows no service
    #: manager of): nothing was done.
    USAGE = 2
    #: The hook's one non-zero status. The number is Claude Code's, not ours: its hook protocol
    #: reads exit 2 as "block" (a UserPromptSubmit prompt is blocked and erased and stderr shown
    #: to the user; on SessionStart stderr is only shown), any other non-zero status as an error
    #: that blocks nothing. So it is USAGE's number, and declared as USAGE's alias on purpose:
    #: `Exit.HOOK_BLOCK is Exit.USAGE`, and it prints as `Exit.USAGE`.
    HOOK_BLOCK = USAGE
    #: The store refused by its rules: auto-resume for a failure that offers none, a resume by
    #: hand while an automatic one is (or may be) under way, or after a cancel.
    REFUSED = 3
    #: No such session, or no conversation id on record to resume.
    NOT_FOUND = 4
    #: The store cannot be used: an unreachable service, or a local database, state directory
    #: or record that cannot be opened or read.
    STORE = 5
    #: Another `rewake run` holds the session's lock: nothing was run.
    BUSY = 6
    #: `rewake run --resume-of` for a mark whose attempt has moved on: nothing was run, so the
    #: attempt is not resumed twice.
    SUPERSEDED = 7
    #: `rewake run --resume-of` sent nothing and the mark should wait: an open interactive CLI
    #: holds the conversation, and either rewake cannot reach its terminal or it said it
    #: continues by itself and has not yet. The command executor takes this status (only this
    #: one) to put the mark back to armed, to be looked at again (docs/design.md#states).
    DEFERRED = 8
    #: The CLI to run is not on PATH (a shell's status for a command not found).
    PROGRAM_NOT_FOUND = 127
    #: Stopped by Ctrl-C (128 + SIGINT).
    INTERRUPTED = 130
    #: The reader of the output went away (`| head`): 128 + SIGPIPE, as a shell reports it.
    BROKEN_PIPE = 141
