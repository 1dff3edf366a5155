"""Saved anomaly cases: find one on disk and know where it was found; a corpus of them.

A case is either a case folder (``case.toml``, ``mfs.json``, ``evidence.json``: a campaign's
``DIR/anomalies/<id>/`` or a ``collie minimize --out`` folder, read as a :class:`~collie.storage.case.CaseRecord`)
or a bare workload file; a corpus is a folder of cases a campaign replays first. A case knows the target it was
found on (its record's, or for a folder written before records had one, its campaign's). This module only
reads: judging a re-run (its calibration, or the campaign's ceilings from :func:`campaign_config`) is
:mod:`collie.services`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collie.mfs import MFS
from collie.model.workload import Workload
from collie.storage.campaign import holds_campaign, read_config
from collie.storage.case import CaseRecord, TargetRecord, read_case_folder, read_mfs
from collie.storage.records import CampaignConfig


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
        campaign = parent if holds_campaign(parent) else None
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
    config = campaign_config(case)
    if config is None:
        return None
    return RecordedTarget(TargetRecord(config.target, config.target_info), "its campaign")


def campaign_config(case: Case) -> CampaignConfig | None:
    """The configuration of the campaign folder ``case`` sits in (None: it is not in one).

    Raises:
        InputError: its campaign.toml is damaged (naming the file and the field).
    """
    return read_config(case.campaign) if case.campaign is not None else None


@dataclass(frozen=True)
class CorpusCase:
    """A known case a campaign replays before it searches, the MFS that keeps the search out of its region
    (None: it was never minimized), and the target it was found on (None: nothing records it, e.g. a bare
    workload file)."""

    name: str
    path: Path
    workload: Workload
    mfs: MFS | None
    target: TargetRecord | None = None


def load_corpus(folder: Path) -> tuple[CorpusCase, ...]:
    """Every case of a corpus folder, read and checked before any experiment runs.

    The cases are ``*/case.toml`` (case folders: a campaign's anomaly folders or ``collie minimize --out``
    ones, every file of them validated, the MFS in ``mfs.json``, the target as :func:`recorded_target` finds it)
    and ``*.toml`` (the MFS, if any, in ``*.mfs.json``; no target), in name order.

    Raises:
        InputError: a case or MFS file that cannot be read, naming the file and the field.
    """
    out: list[CorpusCase] = []
    for case_file in sorted(folder.glob("*/case.toml")):
        case = load_case(case_file.parent)
        recorded = recorded_target(case)
        out.append(CorpusCase(case_file.parent.name, case_file, case.workload, case.record.mfs,
                              recorded.target if recorded is not None else None))
    for path in sorted(folder.glob("*.toml")):
        mfs_file = path.with_suffix(".mfs.json")
        mfs = read_mfs(mfs_file) if mfs_file.exists() else None
        out.append(CorpusCase(path.stem, path, Workload.load(path), mfs))
    return tuple(out)
