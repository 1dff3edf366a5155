"""What both log parsers need of a log's lines: numbering, the launcher's tags, numbers, and quoting a line.

Logs come from terminals, documentation pages and job schedulers, so a line may be indented (a code block),
end in blanks or ``\\r``, hold tabs, or carry mpirun's ``--tag-output`` prefix (``[1,0]<stdout>:``). A
:class:`Line` is one line with all of that taken off and its number in the file kept for messages.

Invariants:
    * lines are numbered from 1 by ``\\n`` alone, as an editor numbers them (form feeds, ``\\x1c`` and the
      Unicode line separators inside a line do not start a new one);
    * a number is ASCII digits only (``١٢`` and ``1_000`` are not numbers) and finite; an integer has at most
      :data:`MAX_DIGITS` digits, so reading one never hits Python's integer-string limit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from collie.codec import shown

#: mpirun's ``--tag-output`` prefix: ``[job,rank]<stdout>:``
_TAG: Final = re.compile(r"^\s*\[[0-9]+,[0-9]+\]<(?:stdout|stderr)>:")
MAX_DIGITS: Final = 30
_INTEGER: Final = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
_SIGNED: Final = re.compile(rf"[-+]?[0-9]{{1,{MAX_DIGITS}}}")
_NUMBER: Final = re.compile(r"[-+]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][-+]?[0-9]{1,3})?")


@dataclass(frozen=True)
class Line:
    """One line of a log.

    Attributes:
        number: its line number in the file (from 1).
        text: the line without a launcher's tag and without leading and trailing white space.
    """

    number: int
    text: str

    @property
    def tokens(self) -> list[str]:
        """The line's words, split at any run of white space."""
        return self.text.split()


def log_lines(text: str) -> list[Line]:
    """The lines of ``text``, numbered, each stripped of a launcher's tag and of surrounding white space."""
    out: list[Line] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        tag = _TAG.match(raw)
        out.append(Line(number, (raw[tag.end():] if tag else raw).strip()))
    return out


def decode_log(data: bytes) -> str:
    """A log file's bytes as text: UTF-8, a byte that is not replaced by U+FFFD (logs are ASCII in practice)."""
    return data.decode("utf-8", errors="replace")


def quoted(text: str) -> str:
    """``text`` as a message quotes it: its repr, cut to 60 characters."""
    return shown(text)


def integer_token(token: str) -> int | None:
    """``token`` as a non-negative integer (ASCII digits only), or None."""
    return int(token) if _INTEGER.fullmatch(token) else None


def signed_token(token: str) -> int | None:
    """``token`` as an integer with an optional sign, or None."""
    return int(token) if _SIGNED.fullmatch(token) else None


def number_token(token: str) -> float | None:
    """``token`` as a finite number (``12``, ``-0.5``, ``1.0e+07``), or None."""
    if not _NUMBER.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def numeric(token: str) -> bool:
    """Whether ``token`` reads as a number."""
    return number_token(token) is not None


def looks_like_row(tokens: list[str], least: int = 3) -> bool:
    """Whether a line of these words is meant as a row of numbers: it starts with a number, or holds at least
    ``least`` of them (a row whose first column was garbled is still a row, and then an error, not noise)."""
    return bool(tokens) and (numeric(tokens[0]) or sum(map(numeric, tokens)) >= least)
