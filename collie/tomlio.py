"""Read TOML files and check tables field by field, with errors a person can act on.

Every failure is an :class:`~collie.errors.InputError` whose message is one sentence naming the file, the
field (as a dotted path) and what is allowed.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from collie.errors import InputError


def read_text(path: str | Path, expected: str = "a text file") -> str:
    """Read a file a user named, as UTF-8 text.

    Args:
        path: the file.
        expected: what it should be, for the message when it is a folder (e.g. ``a TOML file``).

    Raises:
        InputError: missing, a folder, unreadable or not UTF-8 (one sentence naming the file).
    """
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a folder, expected {expected}") from None
    except PermissionError:
        raise InputError(f"{p}: permission denied") from None
    except UnicodeDecodeError:
        raise InputError(f"{p}: not a UTF-8 text file, expected {expected}") from None


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


def check_fields(
    table: Mapping[str, Any],
    where: str,
    allowed: Iterable[str],
    required: Iterable[str] = (),
) -> None:
    """Reject unknown and missing fields of one table.

    Args:
        table: the parsed table.
        where: dotted path of the table for messages (e.g. ``demo.toml: flows[0]``).
        allowed: every field name the table may have.
        required: the names it must have.
    """
    allowed_set = set(allowed)
    for key in table:
        if key not in allowed_set:
            raise InputError(
                f"{where}: unknown field {key!r}; allowed fields are {', '.join(sorted(allowed_set))}"
            )
    for key in required:
        if key not in table:
            raise InputError(f"{where}: missing required field {key!r}")


def expect_type(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    """Return ``value`` if it is of ``kind`` (bools are never ints), else raise with ``what`` it should be."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise InputError(f"{where}: expected {what}, got {value!r}")
    if not isinstance(value, kinds):
        raise InputError(f"{where}: expected {what}, got {value!r}")
    return value
