"""Saved anomaly cases: find one on disk, know where it was found, and judge re-runs of it on a target.

A case is either a case folder (``case.toml``, ``mfs.json``, ``evidence.json``: a campaign's
``DIR/anomalies/<id>/`` or a ``collie minimize --out`` folder, read as a :class:`~collie.storage.case.CaseRecord`)
or a bare workload file; a corpus is a folder of cases a campaign replays first. A case knows the target it was
found on (its record's, or for a folder written before records had one, its campaign's). Judging needs the
target's ceilings: they come from the campaign when the case is in a campaign folder made on the same target,
otherwise from a fresh calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collie import calibrate
from collie.codec import Reader
from collie.errors import InputError
from collie.mfs import MFS
from collie.model.workload import Workload
from collie.oracle import Ceilings, Oracle, Thresholds
from collie.storage.case import CaseRecord, TargetRecord, read_case_folder, read_mfs
from collie.targets.base import Target, TargetInfo
from collie.tomlio import read_toml

CAMPAIGN_CONFIG = "campaign.toml"


@dataclass(frozen=True)
class Case:
    """A case on disk: its record, and the campaign folder holding it (None: it is not in one).

    Attributes:
        path: the folder or workload file named by the user.
        record: what the files say (a bare workload file: its workload only).
        campaign: the campaign folder the case folder sits in (``DIR`` of ``DIR/anomalies/<id>``).
    """

    path: Path
    record: CaseRecord
    campaign: Path | None

    @property
    def workload(self) -> Workload:
        return self.record.workload

    @property
    def signature(self) -> str:
        return self.record.signature


def load_case(path: Path) -> Case:
    """Read and validate a case folder or workload file.

    Raises:
        InputError: nothing readable there, or a damaged file (one sentence naming the file and the field).
    """
    if path.is_dir():
        record = read_case_folder(path)
        parent = path.resolve().parent.parent
        campaign = parent if (parent / CAMPAIGN_CONFIG).is_file() else None
        return Case(path, record, campaign)
    return Case(path, CaseRecord(path.stem, "", False, Workload.load(path), format=0), None)


@dataclass(frozen=True)
class RecordedTarget:
    """Where a case was found, and who says so.

    Attributes:
        target: the spec and (if known) the fingerprint.
        source: ``the case`` (its evidence.json) or ``its campaign`` (the campaign.toml above a case folder
            written before cases recorded their target).
    """

    target: TargetRecord
    source: str


def recorded_target(case: Case) -> RecordedTarget | None:
    """The target ``case`` was found on (None: nothing records it, e.g. a bare workload file).

    Raises:
        InputError: the campaign.toml it falls back to is damaged (naming the file and the field).
    """
    if case.record.target is not None:
        return RecordedTarget(case.record.target, "the case")
    if case.campaign is None:
        return None
    file = case.campaign / CAMPAIGN_CONFIG
    cfg = read_toml(file)
    spec = cfg.get("target")
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"{file}: target: expected the campaign's target spec, got {spec!r}")
    info = TargetInfo.from_dict(cfg["target_info"], Reader(str(file)).at("target_info")) if "target_info" in cfg \
        else None
    return RecordedTarget(TargetRecord(spec, info), "its campaign")


@dataclass(frozen=True)
class CorpusCase:
    """A known case a campaign replays before it searches, and the MFS that keeps the search out of its region
    (None: it was never minimized)."""

    name: str
    path: Path
    workload: Workload
    mfs: MFS | None


def load_corpus(folder: Path) -> tuple[CorpusCase, ...]:
    """Every case of a corpus folder, read and checked before any experiment runs.

    The cases are ``*/case.toml`` (case folders: a campaign's anomaly folders or ``collie minimize --out``
    ones, every file of them validated, the MFS in ``mfs.json``) and ``*.toml`` (the MFS, if any, in
    ``*.mfs.json``), in name order.

    Raises:
        InputError: a case or MFS file that cannot be read, naming the file and the field.
    """
    out: list[CorpusCase] = []
    for case_file in sorted(folder.glob("*/case.toml")):
        record = read_case_folder(case_file.parent)
        out.append(CorpusCase(case_file.parent.name, case_file, record.workload, record.mfs))
    for path in sorted(folder.glob("*.toml")):
        mfs_file = path.with_suffix(".mfs.json")
        mfs = read_mfs(mfs_file) if mfs_file.exists() else None
        out.append(CorpusCase(path.stem, path, Workload.load(path), mfs))
    return tuple(out)


def oracle_for(case: Case, target: Target, target_spec: str, thresholds: Thresholds) -> tuple[Oracle, int]:
    """An oracle for re-running ``case`` on ``target``; returns it and the calibration runs it cost.

    Raises:
        InputError: the campaign.toml whose ceilings it takes is damaged.
    """
    info = target.describe()
    catalog = calibrate.catalog_of(info)
    if case.campaign is not None:
        file = case.campaign / CAMPAIGN_CONFIG
        cfg = read_toml(file)
        if cfg.get("target") == target_spec and "ceilings" in cfg:
            baseline = cfg.get("baseline", {})
            if not isinstance(baseline, dict):
                raise InputError(f"{file}: baseline: expected a table, got {baseline!r}")
            try:
                ceilings = Ceilings.from_dict(cfg["ceilings"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise InputError(f"{file}: ceilings: not the calibrated ceilings ({type(exc).__name__}: "
                                 f"{exc})") from None
            return Oracle(catalog, ceilings, thresholds, baseline), 0
    runs = 0

    def run(workload: Workload) -> Any:
        nonlocal runs
        runs += 1
        return target.run(workload, calibrate.CALIBRATION_SECONDS)

    return calibrate.calibrated_oracle(run, catalog, info, thresholds), runs
