"""The case record: one saved anomaly case, typed and versioned, and its folder on disk.

A case folder holds::

    case.toml       the minimal replayable workload (a plain workload file)
    mfs.json        its minimal feature set (absent when the case was not minimized)
    evidence.json   what is known about the case (format below)

``evidence.json`` (format 2; see docs/cases.md for every field)::

    format                 2
    anomaly_id, signature  the anomaly, as its campaign names it (``signature`` is the original find's, the
                           one ``mfs.json`` carries; the minimal case keeps its leading symptom)
    confirmed              the minimal case showed the anomaly in enough of its own runs
    target                 {spec, fingerprint}: where the case was found (absent: unknown)
    case                   {point, signature, verdict, runs}: case.toml's *own* runs (absent: unknown)
    original               {point, found_at, verdict}: the original find, as it was found
    minimize_experiments, minimize_steps, minimized_from, space (``collie minimize --out`` only; ``space``
                           absent: the default space, or a campaign's case, whose ``campaign.toml`` says)
    hits                   [{trial, kind, signature, experiments}]: later finds the anomaly explained (absent:
                           none)

Invariants:
    * ``case.verdict`` and ``case.runs`` are runs of exactly the workload in ``case.toml``: replaying the case
      on its target reproduces ``case.signature``; the original find (often a bigger workload) is only ever
      under ``original``;
    * a folder is written to a temporary name beside it and renamed into place, so a folder that exists is
      complete (:func:`write_case_folder`);
    * reading validates every file (:func:`read_case_folder`): a damaged file is one
      :class:`~collie.errors.InputError` naming the file and the field, never another exception;
    * folders written before format 2 (no ``format``, no ``target``, ``verdict`` and ``original_point`` at the
      top: the original find's) still read, with the target and the case's own runs unknown.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

from collie.codec import Reader, decode, encode_fields
from collie.errors import InputError
from collie.mfs import MFS
from collie.model.workload import Workload
from collie.oracle import Verdict
from collie.storage.files import temp_folder
from collie.targets.base import TargetInfo
from collie.tomlio import read_text

#: The ``evidence.json`` format this collie writes; it reads 1 (no ``format`` key) to this.
FORMAT: Final = 2
CASE_FILE: Final = "case.toml"
MFS_FILE: Final = "mfs.json"
EVIDENCE_FILE: Final = "evidence.json"

#: The fingerprint fields a replay on another target compares, with how a person names them.
FINGERPRINT_FIELDS: Final = (("nic_model", "NIC"), ("firmware", "firmware"), ("driver", "driver"),
                             ("kernel", "kernel"), ("line_rate_bps", "line rate"))

#: ``evidence.json``'s fields (format 2 on; format 1, without ``format``, had :data:`_LEGACY_FIELDS`).
_FIELDS: Final = ("format", "anomaly_id", "signature", "confirmed", "target", "case", "original",
                  "minimize_experiments", "minimize_steps", "minimized_from", "space", "hits")
_LEGACY_FIELDS: Final = ("anomaly_id", "signature", "confirmed", "found_at_experiment", "minimize_experiments",
                         "minimize_steps", "point", "original_point", "verdict", "minimized_from")


def _verdict(data: Any, reader: Reader) -> Verdict:
    """A :class:`Verdict` from its ``to_dict`` form, every field checked."""
    return decode(Verdict, data, reader)


@dataclass(frozen=True)
class TargetRecord:
    """Where a case was found.

    Attributes:
        spec: the target spec as the user gave it (``sim:p2100g-100g``, ``verbs:mlx5_0``); what ``replay`` and
            ``minimize`` open by default.
        fingerprint: the target's :class:`TargetInfo` then (None: not recorded).
    """

    spec: str
    fingerprint: TargetInfo | None = None

    def differences(self, spec: str, actual: TargetInfo) -> list[str]:
        """What differs between this target and ``actual`` (opened as ``spec``), one phrase per field, e.g.
        ``NIC ConnectX-6 Dx -> P2100G``; empty when nothing a person would care about differs."""
        out = [f"target {self.spec} -> {spec}"] if spec != self.spec else []
        if self.fingerprint is None:
            return out
        for name, label in FINGERPRINT_FIELDS:
            was, now = getattr(self.fingerprint, name), getattr(actual, name)
            if was != now:
                if name == "line_rate_bps":
                    was, now = f"{was / 1e9:g} Gb/s", f"{now / 1e9:g} Gb/s"
                out.append(f"{label} {was or '(unknown)'} -> {now or '(unknown)'}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{spec, fingerprint}`` (``fingerprint`` left out when not recorded)."""
        d: dict[str, Any] = {"spec": self.spec}
        if self.fingerprint is not None:
            d["fingerprint"] = self.fingerprint.to_dict()
        return d

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> TargetRecord:
        """Read :meth:`to_dict`'s form (raises ``reader``'s error)."""
        record = decode(cls, data, reader)
        if not record.spec.strip():
            reader.at("spec").wrong(record.spec, "a target spec like sim:cx6-200g")
        return record


@dataclass(frozen=True)
class CaseRun:
    """One run of a case's own workload, in brief (its full verdict is kept for one run only)."""

    anomalous: bool
    signature: str
    score: float
    throughput: float | None

    @classmethod
    def of(cls, verdict: Verdict) -> CaseRun:
        return cls(verdict.anomalous, verdict.signature, verdict.score, verdict.metrics.get("throughput"))

    def to_dict(self) -> dict[str, Any]:
        """Every field (``throughput`` null when the run had none)."""
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> CaseRun:
        """Read :meth:`to_dict`'s form, every field required (raises ``reader``'s error)."""
        return decode(cls, data, reader)


@dataclass(frozen=True)
class CaseEvidence:
    """What the case's own workload showed in the runs made of it (while minimizing and confirming it).

    Attributes:
        point: the case's point in the search space (``case.toml`` is its workload).
        signature: the signature most of its runs that showed the anomaly had (see :meth:`of`).
        verdict: the first run with that signature, in full (symptoms, per-host counters, levels).
        runs: every run of it, in order.
    """

    point: Mapping[str, Any]
    signature: str
    verdict: Verdict
    runs: tuple[CaseRun, ...]

    @classmethod
    def of(cls, point: Mapping[str, Any], verdicts: Sequence[Verdict], leading: str) -> CaseEvidence | None:
        """The evidence of runs ``verdicts`` of ``point`` of an anomaly leading with ``leading`` (None: no runs).

        The signature is the most frequent one among the runs that showed ``leading`` (ties: the earliest),
        or among all runs if none did: the weaker symptoms of a run near a threshold come and go with noise.
        """
        if not verdicts:
            return None
        showing = [v for v in verdicts if v.anomalous and v.leading == leading] or list(verdicts)
        counts = Counter(v.signature for v in showing)
        best = max(counts.values())
        verdict = next(v for v in showing if counts[v.signature] == best)
        return cls(dict(point), verdict.signature, verdict, tuple(CaseRun.of(v) for v in verdicts))

    def to_dict(self) -> dict[str, Any]:
        """``{point, signature, verdict, runs}``."""
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> CaseEvidence:
        """Read :meth:`to_dict`'s form, every field required (raises ``reader``'s error)."""
        return decode(cls, data, reader)


@dataclass(frozen=True)
class OriginalFind:
    """The run that found the anomaly, as it was found (often a bigger workload than the minimal case).

    Attributes:
        point: its point in the search space.
        verdict: its verdict.
        found_at: experiments the campaign had spent when it was found (None: not found by a campaign).
    """

    point: Mapping[str, Any]
    verdict: Verdict
    found_at: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{point, found_at, verdict}`` (``found_at`` null when not found by a campaign)."""
        return {"point": dict(self.point), "found_at": self.found_at, "verdict": self.verdict.to_dict()}

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> OriginalFind:
        """Read :meth:`to_dict`'s form, ``found_at`` required (null or a whole number; raises ``reader``'s
        error)."""
        t = reader.table(data, ("point", "found_at", "verdict"))
        found_at = t.get("found_at", what="a whole number >= 0 or null")
        return cls(t.table("point").data, _verdict(t.get("verdict", what="a table"), t.at("verdict")),
                   None if found_at is None else t.integer("found_at", what="a whole number >= 0", minimum=0))


class HitKind(StrEnum):
    """How a later find was recognised as an anomaly already known (see docs/search.md, "the same anomaly")."""

    #: its workload lies inside the anomaly's MFS: recognised before confirming, nothing spent on it
    INSIDE = "inside"
    #: confirmed just past an edge of the MFS, and the anomaly's own case moved there still showed it: the MFS
    #: was widened to take it in
    WIDENED = "widened"
    #: confirmed and minimized to an MFS equal to, inside or around this anomaly's (on the same symptom)
    NESTED = "nested"


@dataclass(frozen=True)
class Hit:
    """A later find of a campaign that this anomaly explained (one more sighting, not a new anomaly).

    Attributes:
        trial: the journal's trial that found it.
        kind: how it was recognised.
        signature: its verdict's signature.
        experiments: what confirming (and minimizing) it cost before it was recognised (0 for ``INSIDE``).
    """

    trial: int
    kind: HitKind
    signature: str
    experiments: int = 0

    def to_dict(self) -> dict[str, Any]:
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> Hit:
        """Read :meth:`to_dict`'s form, every field required (raises ``reader``'s error)."""
        return decode(cls, data, reader)


@dataclass(frozen=True)
class CaseRecord:
    """One case folder (see the module docstring for the files and the invariants).

    Attributes:
        anomaly_id: the folder's name in its campaign (``A001-pause``).
        signature: the anomaly's signature, as found (``""`` for a bare workload file).
        confirmed: the minimal case showed the anomaly in enough of its own runs.
        workload: ``case.toml``.
        mfs: ``mfs.json`` (None: not minimized).
        target: where it was found (None: unknown, e.g. a folder written before format 2).
        evidence: the case's own runs (None: unknown).
        original: the original find (None: unknown).
        minimize_experiments, minimize_steps: what confirming and minimizing cost.
        minimized_from: the case ``collie minimize --out`` started from (``""`` for a campaign's case).
        space: the space file (absolute) ``collie minimize --out`` walked, which the points are points of
            (``""``: the default space, or a campaign's case, whose ``campaign.toml`` records its space).
        hits: the campaign's later finds this anomaly explained, in order.
        format: the ``evidence.json`` format it was read from (0: the folder has none; written: always
            :data:`FORMAT`).
    """

    anomaly_id: str
    signature: str
    confirmed: bool
    workload: Workload
    mfs: MFS | None = None
    target: TargetRecord | None = None
    evidence: CaseEvidence | None = None
    original: OriginalFind | None = None
    minimize_experiments: int = 0
    minimize_steps: int = 0
    minimized_from: str = ""
    space: str = ""
    hits: tuple[Hit, ...] = ()
    format: int = FORMAT

    def evidence_dict(self) -> dict[str, Any]:
        """``evidence.json``'s content (always the current format)."""
        d: dict[str, Any] = {"format": FORMAT, "anomaly_id": self.anomaly_id, "signature": self.signature,
                             "confirmed": self.confirmed}
        if self.target is not None:
            d["target"] = self.target.to_dict()
        if self.evidence is not None:
            d["case"] = self.evidence.to_dict()
        if self.original is not None:
            d["original"] = self.original.to_dict()
        d["minimize_experiments"] = self.minimize_experiments
        d["minimize_steps"] = self.minimize_steps
        if self.minimized_from:
            d["minimized_from"] = self.minimized_from
        if self.space:
            d["space"] = self.space
        if self.hits:
            d["hits"] = [h.to_dict() for h in self.hits]
        return d

    @classmethod
    def from_evidence(cls, data: Any, reader: Reader, workload: Workload, mfs: MFS | None) -> CaseRecord:
        """The record of an ``evidence.json`` (any format this collie reads) and the folder's other files.

        Raises:
            ``reader``'s error: a wrong, missing or unknown field, or a format newer than :data:`FORMAT`.
        """
        if isinstance(data, dict) and "format" not in data:
            return cls._legacy(data, reader, workload, mfs)
        d = reader.table(data, _FIELDS)
        version = d.integer("format", what=f"an integer from 2 to {FORMAT}")
        if version < 2:
            d.at("format").wrong(version, f"an integer from 2 to {FORMAT}")
        if version > FORMAT:
            d.at("format").fail(f"written by a newer collie (format {version}); this collie reads formats up to "
                                f"{FORMAT}")
        return cls(
            anomaly_id=d.text("anomaly_id"), signature=d.text("signature"), confirmed=d.flag("confirmed"),
            workload=workload, mfs=mfs,
            target=TargetRecord.from_dict(d.data["target"], d.at("target")) if "target" in d else None,
            evidence=CaseEvidence.from_dict(d.data["case"], d.at("case")) if "case" in d else None,
            original=OriginalFind.from_dict(d.data["original"], d.at("original")) if "original" in d else None,
            minimize_experiments=d.integer("minimize_experiments", what="a whole number >= 0", minimum=0),
            minimize_steps=d.integer("minimize_steps", what="a whole number >= 0", minimum=0),
            minimized_from=d.text("minimized_from", ""), space=d.text("space", ""),
            hits=tuple(Hit.from_dict(h, d.at("hits").at(i)) for i, h in enumerate(d.items("hits", default=[]))),
            format=version)

    @classmethod
    def _legacy(cls, data: dict[str, Any], reader: Reader, workload: Workload, mfs: MFS | None) -> CaseRecord:
        """Format 1: ``verdict`` (the original find's), ``point`` (the case's), ``original_point``; no target."""
        d = reader.table(data, _LEGACY_FIELDS)
        point = d.table("point").data
        found_at = d.integer("found_at_experiment", what="a whole number >= 0", minimum=0) \
            if "found_at_experiment" in d else None
        original = OriginalFind(d.table("original_point", default=point).data,
                                _verdict(d.get("verdict", what="a table"), d.at("verdict")), found_at)
        return cls(
            anomaly_id=d.text("anomaly_id"), signature=d.text("signature"), confirmed=d.flag("confirmed"),
            workload=workload, mfs=mfs, original=original,
            minimize_experiments=d.integer("minimize_experiments", what="a whole number >= 0", minimum=0),
            minimize_steps=d.integer("minimize_steps", what="a whole number >= 0", minimum=0),
            minimized_from=d.text("minimized_from", ""), format=1)


# -- writing -----------------------------------------------------------------------------------------------


def write_case_folder(final: Path, record: CaseRecord) -> Path:
    """Write ``record`` as the folder ``final`` atomically: a temporary folder beside it (its parents made if
    missing), renamed into place over any older one; files and folders get the umask's permissions. A case not
    minimized (``mfs`` None) has no ``mfs.json``.

    Raises:
        OSError: the folder could not be written (nothing is left at ``final`` but what was there before).
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_folder(final.parent, f".{final.name}.")
    try:
        (tmp / CASE_FILE).write_text(record.workload.to_toml(), encoding="utf-8")
        if record.mfs is not None:
            (tmp / MFS_FILE).write_text(json.dumps(record.mfs.to_dict(), indent=2), encoding="utf-8")
        (tmp / EVIDENCE_FILE).write_text(json.dumps(record.evidence_dict(), indent=2), encoding="utf-8")
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


# -- reading -----------------------------------------------------------------------------------------------


def read_case_folder(folder: Path) -> CaseRecord:
    """Read and validate a case folder (``case.toml`` required, ``mfs.json`` and ``evidence.json`` optional).

    Raises:
        InputError: a missing ``case.toml`` or any damaged file: one sentence naming the file and the field.
    """
    case_file = folder / CASE_FILE
    if not case_file.is_file():
        raise InputError(f"{folder}: not a case folder (no {CASE_FILE})")
    workload = Workload.load(case_file)
    mfs_file = folder / MFS_FILE
    mfs = read_mfs(mfs_file) if mfs_file.exists() else None
    ev_file = folder / EVIDENCE_FILE
    if not ev_file.exists():
        return CaseRecord(folder.name, mfs.signature if mfs else "", False, workload, mfs, format=0)
    return CaseRecord.from_evidence(_json(ev_file), Reader(str(ev_file)), workload, mfs)


def read_mfs(path: Path) -> MFS:
    """Read and validate an ``mfs.json`` (``{signature, conditions: [{feature, op, value}], text}``).

    Raises:
        InputError: one sentence naming the file and the field.
    """
    return MFS.from_dict(_json(path), Reader(str(path)))


def _json(path: Path) -> Any:
    text = read_text(path, "a JSON file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise InputError(f"{path}: not valid JSON (nested too deeply)") from None
