"""Waivers: known anomalies a team has accepted for a while, each with a reason and an expiry date.

A waiver file is a small TOML file::

    [[waiver]]
    signature = "pause@receiver"          # the anomaly's signature, as collie prints it
    reason = "vendor ticket 1234, fixed in firmware 22.x"
    expires = 2027-01-31                  # a TOML date: it waives through that day
    case = "f03-read-mtu1k"               # optional: only this known case of the corpus

Invariants:
    * reading validates every field: a mistake is one :class:`~collie.errors.InputError` naming the file, the
      waiver and the field (an unknown key, a missing reason, a date that is not one);
    * a waiver matches a find as collie compares re-runs of one anomaly, by its leading symptom (``kind@end``):
      the weaker symptoms of a run near a threshold come and go with noise;
    * an expired waiver (its date before today) never waives; :meth:`Waivers.match` still returns it so the
      gate can say so;
    * a waiver's ``case`` names a case of the corpus (:meth:`Waivers.check_cases`): a typo would waive nothing,
      silently.
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from collie.codec import Reader
from collie.errors import InputError
from collie.oracle import SYMPTOM_ORDER, leading_symptom
from collie.tomlio import read_toml

FIELDS: Final = ("signature", "reason", "expires", "case")
REQUIRED: Final = ("signature", "reason", "expires")
ENDS: Final = ("receiver", "sender", "victim", "host", "link", "fabric")


@dataclass(frozen=True)
class Waiver:
    """One accepted anomaly.

    Attributes:
        signature: the anomaly's signature (``pause@receiver+low_throughput@receiver``); matched by its leading
            symptom.
        reason: why it is accepted (shown wherever it waives).
        expires: the last day it waives.
        case: the known case of the corpus it is limited to (``""``: any known case or new anomaly).
        index: its place in the file (``waiver[0]`` is the first), for messages.
    """

    signature: str
    reason: str
    expires: dt.date
    case: str = ""
    index: int = 0

    @property
    def leading(self) -> str:
        return leading_symptom(self.signature)

    def expired(self, today: dt.date) -> bool:
        """Whether it no longer waives on ``today`` (it waives through its expiry day)."""
        return today > self.expires

    def covers(self, signature: str, case: str | None) -> bool:
        """Whether it is about a find of ``signature`` (known case ``case``; None: a new anomaly), expired or not."""
        if self.case and self.case != case:
            return False
        return bool(signature) and leading_symptom(signature) == self.leading

    def describe(self) -> str:
        where = f" (case {self.case})" if self.case else ""
        return f"waiver {self.signature}{where} until {self.expires.isoformat()}: {self.reason}"

    @classmethod
    def from_dict(cls, data: Any, reader: Reader, index: int = 0) -> Waiver:
        """Read one ``[[waiver]]`` table (the ``index``-th of its file).

        Raises:
            ``reader``'s error: an unknown or missing field, an empty string, a signature that is not
            ``kind@end`` tags, or a date that is not one.
        """
        w = reader.table(data, FIELDS)
        signature = w.text("signature", what="a non-empty string", blank=False).strip()
        for tag in signature.split("+"):
            kind, _, end = tag.partition("@")
            if kind not in SYMPTOM_ORDER or end not in ENDS:
                w.at("signature").fail(f"{tag!r} is not a symptom; write kind@end with kind one of "
                                       f"{', '.join(SYMPTOM_ORDER)} and end {', '.join(ENDS)}, e.g. pause@receiver")
        reason = w.text("reason", what="a non-empty string", blank=False).strip()
        case = w.text("case", "", "a non-empty string", blank=False).strip()
        return cls(signature, reason, w.date("expires"), case, index)


@dataclass(frozen=True)
class WaiverMatch:
    """The waivers about one find: the one that waives it (None: none does) and an expired one (None: none)."""

    active: Waiver | None
    expired: Waiver | None


@dataclass(frozen=True)
class Waivers:
    """Every waiver of one file (empty: no file given)."""

    waivers: tuple[Waiver, ...] = ()
    source: str = ""

    def match(self, signature: str, case: str | None, today: dt.date) -> WaiverMatch:
        """The first waiver still in force about the find, and the first expired one (see :class:`WaiverMatch`)."""
        about = [w for w in self.waivers if w.covers(signature, case)]
        active = next((w for w in about if not w.expired(today)), None)
        expired = next((w for w in about if w.expired(today)), None)
        return WaiverMatch(active, expired)

    def check_cases(self, names: Sequence[str], corpus: str) -> None:
        """Refuse a waiver whose ``case`` is none of ``names``, the cases of the corpus folder ``corpus``.

        Raises:
            InputError: one sentence naming the file, the waiver, its case and the closest case name.
        """
        for w in self.waivers:
            if w.case and w.case not in names:
                close = difflib.get_close_matches(w.case, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; the corpus holds {', '.join(names) or 'none'}"
                raise InputError(f"{self.source}: waiver[{w.index}]: case: {w.case!r} is no case of the corpus "
                                 f"{corpus}{hint}")


def load_waivers(path: Path) -> Waivers:
    """Read and validate a waiver file.

    Raises:
        InputError: missing, not TOML, or a field that is wrong: one sentence naming the file, the waiver and
            the field.
    """
    data = Reader(str(path)).table(read_toml(path), ("waiver",))
    raw = data.items("waiver", [], "[[waiver]] tables")
    waivers = data.at("waiver")
    return Waivers(tuple(Waiver.from_dict(w, waivers.at(i), i) for i, w in enumerate(raw)), str(path))
