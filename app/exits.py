"""The exit statuses of every `rewake` command: one table, so a number means one thing.

A supervised CLI's own status passes through `rewake run` unchanged (1 when it failed with 0 or
died by a signal); these are rewake's own.
"""

from __future__ import annotations

from enum import IntEnum


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
