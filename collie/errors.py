"""Errors a user can cause, each carrying one sentence that says what is wrong and what is allowed.

The CLI turns every :class:`CollieError` into that sentence on stderr and exit code 2; nothing else
a user can do should produce a traceback.
"""

from __future__ import annotations


class CollieError(Exception):
    """Base class of every error caused by user input (files, options, targets)."""


class InputError(CollieError):
    """A file or value given by the user is malformed, unknown or out of range."""


class ConstraintError(InputError):
    """A workload or search point breaks a named constraint.

    Attributes:
        constraint: the constraint's name (e.g. ``ud_send_only``).
    """

    def __init__(self, constraint: str, message: str) -> None:
        super().__init__(message)
        self.constraint = constraint


class TargetError(CollieError):
    """A target name is unknown or the target cannot be opened."""


class TargetUnavailable(TargetError):
    """The target cannot run anything any more, or could not be reached at all (remote hosts unreachable, or
    taken out with none to stand in). A campaign stops instead of failing every remaining trial; the CLI exits
    with status 3 (the journal stays resumable)."""


class CollieWarning(UserWarning):
    """Something the user should know that does not stop the work (the library warns, the CLI prints one line
    ``collie: warning: ...``)."""


class StoreError(CollieError):
    """The campaign folder could not be written during a campaign (a full disk, a vanished mount)."""
