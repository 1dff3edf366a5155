"""Output files and folders: the rules a folder given to write into follows, and atomic writes.

Invariants:
    * a folder collie writes a campaign or a case into (``--out``) is new or empty (a campaign folder only to
      resume it, which :class:`~collie.storage.campaign.CampaignStore` checks), and is refused before anything
      runs, in one sentence naming it, when it cannot be made or written;
    * every file and folder collie makes has the permissions the user's umask gives (``0o666`` and ``0o777``
      less the umask), as a file the user makes any other way: a shared CI artifact folder stays readable. The
      temporary names are made with those modes directly (``tempfile``'s are ``0o600`` and ``0o700``), so the
      process-wide umask is never read or changed;
    * a file is written atomically and durably: a temporary file beside it, fsynced, then renamed over it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

from collie.errors import InputError

T = TypeVar("T")

#: The disk space a campaign needs free to start.
MIN_FREE_BYTES: Final = 16 << 20
#: Names tried for a temporary file or folder before giving up (each one random: a clash is a freak).
_TRIES: Final = 100
#: Entries named when refusing a folder that is not empty.
_NAMED: Final = 3


def check_new_folder(root: Path) -> None:
    """Refuse ``root`` as a folder to write into unless it is new or empty and can be made and written; nothing
    is created.

    Raises:
        InputError: it is a file, or a folder that is not empty, or it cannot be made (an ancestor is a file
            or cannot be written), or written, or its disk is full.
    """
    if root.exists():
        if not root.is_dir():
            raise InputError(f"{root} is a file; give --out a new or empty folder")
        entries = sorted(p.name for p in root.iterdir())
        if entries:
            named = ", ".join(entries[:_NAMED]) + (f" and {len(entries) - _NAMED} more" if len(entries) > _NAMED
                                                   else "")
            raise InputError(f"{root} is not empty (it holds {named}); give --out a new or empty folder")
        check_writable(root)
        return
    ancestor = next(p for p in root.absolute().parents if p.exists())
    if not ancestor.is_dir():
        raise InputError(f"cannot create the output folder {root}: {ancestor} is a file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"cannot create the output folder {root}: {ancestor} cannot be written")


def check_writable(root: Path) -> None:
    """Fail early, with one sentence, when the folder ``root`` cannot take a campaign (read-only, or disk full).

    Raises:
        InputError: naming the folder.
    """
    try:
        fd, name = tempfile.mkstemp(prefix=".collie-write-test.", dir=root)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise InputError(f"cannot write to the output folder {root}: {exc.strerror}") from None
    free = shutil.disk_usage(root).free
    if free < MIN_FREE_BYTES:
        raise InputError(f"the disk holding {root} has only {free >> 20} MiB free; collie needs at least "
                         f"{MIN_FREE_BYTES >> 20} MiB for a campaign")


def temp_folder(parent: Path, prefix: str) -> Path:
    """Make a new folder in ``parent`` named ``prefix`` and a random tail, with the umask's permissions.

    Raises:
        OSError: it could not be made.
    """
    return _fresh(parent, prefix, lambda p: p.mkdir())[0]


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` (UTF-8; bytes as they are) atomically and durably, with the umask's permissions:
    a temporary file beside it, fsynced, renamed over it.

    Raises:
        OSError: it could not be written (``path`` is left as it was, and no temporary file stays).
    """
    tmp, fd = _fresh(path.parent, f".{path.name}.", lambda p: os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text if isinstance(text, bytes) else text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _fresh(parent: Path, prefix: str, make: Callable[[Path], T]) -> tuple[Path, T]:
    """``make`` a new entry of ``parent`` named ``prefix`` and a random tail (``make`` raises FileExistsError
    when the name is taken: another is tried)."""
    for _ in range(_TRIES):
        path = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            return path, make(path)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name {prefix}* in {parent}")
