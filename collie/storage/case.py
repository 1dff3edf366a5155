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
    minimize_experiments, minimize_steps, minimized_from (``collie minimize --out`` only)

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

import dataclasses
import json
import math
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from collie.errors import InputError
from collie.mfs import MFS, OPS, Condition
from collie.model.features import Features
from collie.model.points import point_key
from collie.model.workload import Workload
from collie.oracle import Symptom, Verdict
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

_FEATURE_TYPES: Final = {f.name: str(f.type) for f in dataclasses.fields(Features)}


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
        d: dict[str, Any] = {"spec": self.spec}
        if self.fingerprint is not None:
            d["fingerprint"] = self.fingerprint.to_dict()
        return d


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
        return {"anomalous": self.anomalous, "signature": self.signature, "score": self.score,
                "throughput": self.throughput}


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
        return {"point": dict(self.point), "signature": self.signature, "verdict": self.verdict.to_dict(),
                "runs": [r.to_dict() for r in self.runs]}


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
        return {"point": dict(self.point), "found_at": self.found_at, "verdict": self.verdict.to_dict()}


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
        return d


class RunLog:
    """The verdicts of every run of each point, in order: what a case's own evidence is taken from.

    Watch a probe with :meth:`watch` (and :meth:`add` runs made outside it); :meth:`evidence` then gives the
    :class:`CaseEvidence` of whichever point became the case. It only records; it never runs anything.
    """

    def __init__(self) -> None:
        self._runs: dict[str, list[Verdict]] = {}

    def add(self, point: Mapping[str, Any], verdict: Verdict | None) -> None:
        """Record one run of ``point`` (None: it could not run, nothing to record)."""
        if verdict is not None:
            self._runs.setdefault(point_key(point), []).append(verdict)

    def watch(self, probe: Callable[[Mapping[str, Any]], Verdict | None]
              ) -> Callable[[Mapping[str, Any]], Verdict | None]:
        """``probe``, recording every verdict it returns (whatever it raises passes through)."""

        def watched(point: Mapping[str, Any]) -> Verdict | None:
            verdict = probe(point)
            self.add(point, verdict)
            return verdict

        return watched

    def evidence(self, point: Mapping[str, Any], leading: str) -> CaseEvidence | None:
        """The evidence of the runs of ``point`` so far (see :meth:`CaseEvidence.of`)."""
        return CaseEvidence.of(point, self._runs.get(point_key(point), []), leading)


# -- writing -----------------------------------------------------------------------------------------------


def write_case_folder(final: Path, record: CaseRecord) -> Path:
    """Write ``record`` as the folder ``final`` atomically: a temporary folder beside it, renamed into place over
    any older one. A case not minimized (``mfs`` None) has no ``mfs.json``.

    Raises:
        OSError: the folder could not be written (nothing is left at ``final`` but what was there before).
    """
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
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
    return evidence_from_dict(_json(ev_file), str(ev_file), workload, mfs)


def read_mfs(path: Path) -> MFS:
    """Read and validate an ``mfs.json`` (``{signature, conditions: [{feature, op, value}], text}``).

    Raises:
        InputError: one sentence naming the file and the field.
    """
    return mfs_from_dict(_json(path), str(path))


def mfs_from_dict(data: Any, file: str) -> MFS:
    """Validate an MFS in its JSON form (``file`` names it in messages)."""
    d = _Table(data, file, "", allowed=("signature", "conditions", "text"))
    signature = d.text("signature")
    conditions = []
    for i, raw in enumerate(d.items("conditions")):
        c = _Table(raw, file, f"conditions[{i}]", allowed=("feature", "op", "value"))
        feature, op = c.text("feature"), c.text("op")
        kind = _FEATURE_TYPES.get(feature)
        if kind is None:
            raise InputError(f"{c.field('feature')}: {feature!r} is not a workload feature")
        if op not in OPS:
            raise InputError(f"{c.field('op')}: {op!r} is not an operator; use one of {', '.join(OPS)}")
        value = c.get("value")
        values = c.items("value") if op == "in" else [value]
        for v in values:
            if not _is_feature_value(v, kind, numeric_only=op in (">=", "<=")):
                what = "a number" if op in (">=", "<=") or kind == "int" else \
                    ("true or false" if kind == "bool" else "a string")
                raise InputError(f"{c.field('value')}: expected {what} (feature {feature}), got {_shown(v)}")
        conditions.append(Condition(feature, op, tuple(values) if op == "in" else value))
    if "text" in d.data:
        d.text("text")
    return MFS(signature, tuple(conditions))


def _is_feature_value(value: Any, kind: str, numeric_only: bool) -> bool:
    if kind == "bool":
        return isinstance(value, bool) and not numeric_only
    if kind == "int":
        return _is_number(value) and math.isfinite(value)
    return isinstance(value, str) and not numeric_only


def evidence_from_dict(data: Any, file: str, workload: Workload, mfs: MFS | None) -> CaseRecord:
    """The :class:`CaseRecord` of an ``evidence.json`` (any format this collie reads) and the other files.

    Raises:
        InputError: a wrong, missing or unknown field, or a format newer than :data:`FORMAT`.
    """
    if not isinstance(data, dict):
        raise InputError(f"{file}: expected a JSON object, got {_shown(data)}")
    if "format" not in data:
        return _legacy(data, file, workload, mfs)
    version = data["format"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 2:
        raise InputError(f"{file}: format: expected an integer from 2 to {FORMAT}, got {_shown(version)}")
    if version > FORMAT:
        raise InputError(f"{file}: format: written by a newer collie (format {version}); this collie reads "
                         f"formats up to {FORMAT}")
    d = _Table(data, file, "", allowed=("format", "anomaly_id", "signature", "confirmed", "target", "case",
                                        "original", "minimize_experiments", "minimize_steps", "minimized_from"))
    return CaseRecord(
        anomaly_id=d.text("anomaly_id"), signature=d.text("signature"), confirmed=d.flag("confirmed"),
        workload=workload, mfs=mfs,
        target=_target(d.sub("target", ("spec", "fingerprint"))) if "target" in data else None,
        evidence=_case_evidence(d.sub("case", ("point", "signature", "verdict", "runs"))) if "case" in data
        else None,
        original=_original(d.sub("original", ("point", "found_at", "verdict"))) if "original" in data else None,
        minimize_experiments=d.count("minimize_experiments"), minimize_steps=d.count("minimize_steps"),
        minimized_from=d.text("minimized_from", default=""), format=version)


def _legacy(data: dict[str, Any], file: str, workload: Workload, mfs: MFS | None) -> CaseRecord:
    """Format 1: ``verdict`` (the original find's), ``point`` (the case's), ``original_point``; no target."""
    d = _Table(data, file, "", allowed=("anomaly_id", "signature", "confirmed", "found_at_experiment",
                                        "minimize_experiments", "minimize_steps", "point", "original_point",
                                        "verdict", "minimized_from"))
    point = d.table("point")
    found_at = d.count("found_at_experiment") if "found_at_experiment" in data else None
    original = OriginalFind(d.table("original_point", default=point), _verdict(d.sub("verdict", _VERDICT)),
                            found_at)
    return CaseRecord(
        anomaly_id=d.text("anomaly_id"), signature=d.text("signature"), confirmed=d.flag("confirmed"),
        workload=workload, mfs=mfs, original=original, minimize_experiments=d.count("minimize_experiments"),
        minimize_steps=d.count("minimize_steps"), minimized_from=d.text("minimized_from", default=""), format=1)


def _target(d: _Table) -> TargetRecord:
    spec = d.text("spec")
    if not spec.strip():
        raise InputError(f"{d.field('spec')}: expected a target spec like sim:cx6-200g, got ''")
    if "fingerprint" not in d.data:
        return TargetRecord(spec)
    return TargetRecord(spec, fingerprint_from_dict(d.get("fingerprint"), d.file, d.at("fingerprint")))


def fingerprint_from_dict(data: Any, file: str, path: str) -> TargetInfo:
    """Validate a :class:`TargetInfo` in its ``to_dict`` form, found at dotted ``path`` of ``file``.

    Raises:
        InputError: one sentence naming the file and the field.
    """
    f = _Table(data, file, path, tuple(TargetInfo.__dataclass_fields__))
    hosts = f.items("hosts")
    for i, h in enumerate(hosts):
        if not isinstance(h, str):
            raise InputError(f"{f.field(f'hosts[{i}]')}: expected a host name, got {_shown(h)}")
    details = f.table("details", default={})
    for k, v in details.items():
        if not isinstance(v, str):
            raise InputError(f"{f.field('details')}.{k}: expected a string, got {_shown(v)}")
    return TargetInfo(
        name=f.text("name"), kind=f.text("kind"), nic_model=f.text("nic_model"), firmware=f.text("firmware"),
        driver=f.text("driver"), kernel=f.text("kernel"), counter_dialect=f.text("counter_dialect"),
        line_rate_bps=f.number("line_rate_bps"), msg_rate_pps=f.number("msg_rate_pps"), hosts=tuple(hosts),
        details=dict(details))


def _case_evidence(d: _Table) -> CaseEvidence:
    runs = []
    for i, _ in enumerate(d.items("runs")):
        r = _Table(d.data["runs"][i], d.file, d.at(f"runs[{i}]"),
                   allowed=("anomalous", "signature", "score", "throughput"))
        throughput = None if r.get("throughput") is None else r.number("throughput")
        runs.append(CaseRun(r.flag("anomalous"), r.text("signature"), r.number("score"), throughput))
    return CaseEvidence(d.table("point"), d.text("signature"), _verdict(d.sub("verdict", _VERDICT)), tuple(runs))


def _original(d: _Table) -> OriginalFind:
    found_at = None if d.get("found_at") is None else d.count("found_at")
    return OriginalFind(d.table("point"), _verdict(d.sub("verdict", _VERDICT)), found_at)


_VERDICT: Final = ("anomalous", "symptoms", "score", "signature", "metrics", "evidence", "levels")


def _verdict(d: _Table) -> Verdict:
    """A :class:`Verdict` from its ``to_dict`` form, every field checked."""
    symptoms = []
    for i, raw in enumerate(d.items("symptoms")):
        s = _Table(raw, d.file, d.at(f"symptoms[{i}]"), allowed=tuple(Symptom.__dataclass_fields__))
        symptoms.append(Symptom(kind=s.text("kind"), host=s.text("host"), end=s.text("end"), value=s.number("value"),
                                threshold=s.number("threshold"), counter=s.text("counter", default=""),
                                estimate=s.flag("estimate", default=False), source=s.text("source", default="")))
    return Verdict(anomalous=d.flag("anomalous"), symptoms=tuple(symptoms), score=d.number("score"),
                   signature=d.text("signature"), metrics=d.numbers("metrics"), evidence=d.table("evidence"),
                   levels=d.numbers("levels"))


def _json(path: Path) -> Any:
    text = read_text(path, "a JSON file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise InputError(f"{path}: not valid JSON (nested too deeply)") from None


_MISSING: Final = object()


class _Table:
    """Typed access to one JSON object, every failure one sentence naming the file and the field.

    Args:
        data: the object.
        file: the file it came from.
        path: its dotted path in the file (``""``: the whole file).
        allowed: the fields it may have.
    """

    def __init__(self, data: Any, file: str, path: str, allowed: tuple[str, ...]) -> None:
        self.file, self.path = file, path
        if not isinstance(data, dict):
            raise InputError(f"{self.where}: expected a JSON object, got {_shown(data)}")
        for key in data:
            if key not in allowed:
                raise InputError(f"{self.where}: unknown field {key!r}; allowed fields are "
                                 f"{', '.join(sorted(allowed))}")
        self.data: dict[str, Any] = data

    @property
    def where(self) -> str:
        """The file and this object's path, for messages."""
        return f"{self.file}: {self.path}" if self.path else self.file

    def at(self, key: str) -> str:
        """The dotted path of field ``key``."""
        return f"{self.path}.{key}" if self.path else key

    def sub(self, key: str, allowed: tuple[str, ...]) -> _Table:
        """Field ``key``, itself an object."""
        return _Table(self.get(key), self.file, self.at(key), allowed)

    def field(self, key: str) -> str:
        """How messages name field ``key``."""
        return f"{self.file}: {self.at(key)}"

    def get(self, key: str, default: Any = _MISSING) -> Any:
        if key in self.data:
            return self.data[key]
        if default is _MISSING:
            raise InputError(f"{self.where}: missing field {key!r}")
        return default

    def text(self, key: str, default: Any = _MISSING) -> str:
        value = self.get(key, default)
        if not isinstance(value, str):
            raise InputError(f"{self.field(key)}: expected a string, got {_shown(value)}")
        return value

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise InputError(f"{self.field(key)}: expected true or false, got {_shown(value)}")
        return value

    def number(self, key: str) -> float:
        value = self.get(key)
        if not _is_number(value):
            raise InputError(f"{self.field(key)}: expected a number, got {_shown(value)}")
        return float(value)

    def count(self, key: str) -> int:
        value = self.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InputError(f"{self.field(key)}: expected a whole number >= 0, got {_shown(value)}")
        return value

    def items(self, key: str) -> list[Any]:
        value = self.get(key)
        if not isinstance(value, list):
            raise InputError(f"{self.field(key)}: expected a list, got {_shown(value)}")
        return value

    def table(self, key: str, default: Any = _MISSING) -> dict[str, Any]:
        value = self.get(key, default)
        if not isinstance(value, dict):
            raise InputError(f"{self.field(key)}: expected a JSON object, got {_shown(value)}")
        return value

    def numbers(self, key: str) -> dict[str, float]:
        """A JSON object of numbers (metrics, levels)."""
        out = {}
        for k, v in self.table(key).items():
            if not _is_number(v):
                raise InputError(f"{self.field(key)}.{k}: expected a number, got {_shown(v)}")
            out[k] = float(v)
        return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _shown(value: Any) -> str:
    """A short rendering of a wrong value for a message (long values cut)."""
    text = "null" if value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
