"""Read the text and TOML files a user names, with errors a person can act on.

Every failure is an :class:`~collie.errors.InputError` whose message is one sentence naming the file and what
is wrong. Checking what a file holds, field by field, is :mod:`collie.codec`'s job.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from collie.errors import InputError


def read_bytes(path: str | Path, expected: str = "a file") -> bytes:
    """Read a file a user named, as it is.

    Args:
        path: the file.
        expected: what it should be, for the message when it is a folder (e.g. ``a log file``).

    Raises:
        InputError: missing, a folder or unreadable (one sentence naming the file).
    """
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a folder, expected {expected}") from None
    except PermissionError:
        raise InputError(f"{p}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot be read ({exc.strerror or exc})") from None


def read_text(path: str | Path, expected: str = "a text file") -> str:
    """Read a file a user named, as UTF-8 text.

    Args:
        path: the file.
        expected: what it should be, for the message when it is a folder (e.g. ``a TOML file``).

    Raises:
        InputError: missing, a folder, unreadable or not UTF-8 (one sentence naming the file).
    """
    try:
        return read_bytes(path, expected).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{Path(path)}: not a UTF-8 text file, expected {expected}") from None


def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file.

    Raises:
        InputError: the file is missing, unreadable, not UTF-8, or not valid TOML (the message has the line).
    """
    return parse_toml(read_text(path, "a TOML file"), str(path))


def parse_toml(text: str, source: str = "<string>") -> dict[str, Any]:
    """Parse TOML text; ``source`` names it in error messages."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: malformed TOML: {exc}") from None
