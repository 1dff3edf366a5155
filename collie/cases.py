"""Saved anomaly cases: find one on disk, and judge re-runs of it on a target.

A case is either an anomaly folder of a campaign (``DIR/anomalies/<id>/`` with ``case.toml``, ``mfs.json`` and
``evidence.json``) or a bare workload file; a corpus is a folder of cases a campaign replays first. Judging
needs the target's ceilings: they come from the campaign when the case is in a campaign folder made on the
same target, otherwise from a fresh calibration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collie import calibrate
from collie.errors import InputError
from collie.mfs import MFS
from collie.oracle import Ceilings, Oracle, Thresholds
from collie.targets.base import Target
from collie.tomlio import read_toml
from collie.workload import Workload


@dataclass(frozen=True)
class Case:
    """A case on disk: its workload, and what its campaign knew about it (if anything)."""

    path: Path
    workload: Workload
    evidence: dict[str, Any]
    campaign: Path | None

    @property
    def signature(self) -> str:
        return str(self.evidence.get("signature", ""))


def load_case(path: Path) -> Case:
    """Read a case folder or workload file.

    Raises:
        InputError: nothing readable there.
    """
    if path.is_dir():
        case_file = path / "case.toml"
        if not case_file.is_file():
            raise InputError(f"{path}: not a case folder (no case.toml)")
        evidence: dict[str, Any] = {}
        ev = path / "evidence.json"
        if ev.is_file():
            try:
                evidence = json.loads(ev.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                raise InputError(f"{ev}: not valid JSON") from None
        campaign = path.parent.parent if (path.parent.parent / "campaign.toml").is_file() else None
        return Case(path, Workload.load(case_file), evidence, campaign)
    return Case(path, Workload.load(path), {}, None)


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

    The cases are ``*/case.toml`` (a campaign's anomaly folders, or ``collie minimize --out`` ones; the MFS in
    ``mfs.json`` beside each) and ``*.toml`` (the MFS, if any, in ``*.mfs.json``), in name order.

    Raises:
        InputError: a case or MFS file that cannot be read, naming the file.
    """
    found = [(p, p.parent / "mfs.json", p.parent.name) for p in sorted(folder.glob("*/case.toml"))]
    found += [(p, p.with_suffix(".mfs.json"), p.stem) for p in sorted(folder.glob("*.toml"))]
    out: list[CorpusCase] = []
    for path, mfs_file, name in found:
        mfs = None
        if mfs_file.exists():
            try:
                mfs = MFS.from_dict(json.loads(mfs_file.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{mfs_file}: not a minimal feature set ({type(exc).__name__}: {exc})") from None
        out.append(CorpusCase(name, path, Workload.load(path), mfs))
    return tuple(out)


def oracle_for(case: Case, target: Target, target_spec: str, thresholds: Thresholds) -> tuple[Oracle, int]:
    """An oracle for re-running ``case`` on ``target``; returns it and the calibration runs it cost."""
    info = target.describe()
    catalog = calibrate.catalog_of(info)
    if case.campaign is not None:
        cfg = read_toml(case.campaign / "campaign.toml")
        if cfg.get("target") == target_spec and "ceilings" in cfg:
            return Oracle(catalog, Ceilings.from_dict(cfg["ceilings"]), thresholds, cfg.get("baseline", {})), 0
    runs = 0

    def run(workload: Workload) -> Any:
        nonlocal runs
        runs += 1
        return target.run(workload, calibrate.CALIBRATION_SECONDS)

    return calibrate.calibrated_oracle(run, catalog, info, thresholds), runs
