"""The campaign folder: configuration, an append-only trial journal, and one folder per anomaly.

Layout::

    DIR/campaign.toml              a :class:`CampaignConfig`: config + target fingerprint + calibrated ceilings
    DIR/trials.jsonl               one :class:`TrialRecord` per line, appended, flushed and fsynced per record
    DIR/anomalies/<id>/case.toml   the minimal replayable workload
    DIR/anomalies/<id>/mfs.json    its minimal feature set
    DIR/anomalies/<id>/evidence.json  verdicts and counters from both ends, the original point, costs

Invariants:
    * nothing is written before :meth:`CampaignStore.begin` (which a campaign calls once its target is open),
      except through :meth:`CampaignStore.create`, which makes the folder at once;
    * the journal is only appended to; a crash loses at most the record being written. Reading it
      (:meth:`CampaignStore.read_journal`) never writes; a resume first calls
      :meth:`CampaignStore.repair_journal`, which cuts the trace of a crash off its end: a truncated last line
      (no newline at its end) with a warning, and the RUNNING rows that end it (the trials in flight; a
      campaign of K chains may have had K, and the RUNNING row of one journaled before another trial ended
      stays where it is); anything else wrong in it (a damaged row, a row of the wrong type, a gap in the trial
      numbers) is an :class:`~collie.errors.InputError` naming the file, the line and the field, and the file
      is left as is;
    * every row and ``campaign.toml`` are checked on read (see :mod:`collie.storage.records`);
    * anomaly folders are written to a temporary name and renamed into place, so a folder that exists is
      complete;
    * a write that fails during a campaign (a full disk) raises :class:`~collie.errors.StoreError`, whose
      sentence says how to continue: what was written before it stays readable.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Final

import tomli_w

from collie.errors import InputError, StoreError
from collie.mfs import MFS
from collie.model.workload import Workload
from collie.storage.case import CaseEvidence, CaseRecord, Hit, read_case_folder, write_case_folder
from collie.storage.files import check_new_folder, check_writable, write_atomic
from collie.storage.records import CampaignConfig, TrialRecord, TrialState, check_sequence
from collie.targets.base import TargetInfo
from collie.tomlio import read_toml

__all__ = ["ANOMALIES", "CONFIG", "JOURNAL", "CampaignConfig", "CampaignStore", "JournalRead", "JournalRepair",
           "TrialRecord", "TrialState", "holds_campaign", "read_config", "write_case_folder"]

CONFIG: Final = "campaign.toml"
JOURNAL: Final = "trials.jsonl"
ANOMALIES: Final = "anomalies"
#: Suffixes tried after a default folder name that is taken (``campaign-20260101-120000-2``, ...).
_MAX_SUFFIX: Final = 1000


@dataclass(frozen=True)
class JournalRepair:
    """What :meth:`CampaignStore.repair_journal` changes in a journal a crash left behind.

    Attributes:
        cut: the byte offset the file is truncated to (None: nothing is cut).
        newline: the last record lacks its newline, which is added (only when nothing is cut).
    """

    cut: int | None
    newline: bool


@dataclass(frozen=True)
class JournalRead:
    """Records read back from a journal (with the line each came from), what was wrong with its end, and how
    to repair that (None: nothing to repair)."""

    records: tuple[TrialRecord, ...]
    lines: tuple[int, ...]
    warnings: tuple[str, ...]
    repair: JournalRepair | None = None


class CampaignStore:
    """One campaign folder.

    :meth:`create` makes a new campaign folder at once (the library's simple path); :meth:`prepare` plans one that
    :meth:`begin` makes once the target is open; :meth:`open` reads an existing one to resume it.
    """

    def __init__(self, root: Path, config: CampaignConfig, *, exists: bool, unique: bool = False) -> None:
        self.root = root
        self._config = config
        self._exists = exists
        self._unique = unique
        self._dirty = not exists
        self._journal: IO[str] | None = None
        #: what the last :meth:`read_journal` found to repair and :meth:`repair_journal` has not repaired yet
        self._unrepaired: JournalRepair | None = None

    @classmethod
    def create(cls, root: Path, config: CampaignConfig) -> CampaignStore:
        """Make a new campaign folder (it must not hold a campaign already) and write its config.

        Raises:
            InputError: the folder holds a campaign, cannot be created or written, or its disk is full.
        """
        store = cls.prepare(root, config)
        store.begin(None)
        return store

    @classmethod
    def prepare(cls, root: Path, config: CampaignConfig, *, unique: bool = False) -> CampaignStore:
        """Plan a new campaign folder without writing anything; :meth:`begin` makes it.

        Args:
            root: the folder.
            config: the campaign's configuration.
            unique: ``root`` is a default name: if it is taken when the folder is made, ``-2``, ``-3``, ... is
                appended (two campaigns started in the same second get two folders).

        Raises:
            InputError: ``root`` holds a campaign already, or is not a new or empty folder that can be made and
                written (see :func:`~collie.storage.files.check_new_folder`; unless ``unique``).
        """
        if not unique:
            _refuse_existing(root)
            check_new_folder(root)
        return cls(root, config, exists=False, unique=unique)

    @classmethod
    def open(cls, root: Path) -> CampaignStore:
        """Open an existing campaign folder for resuming; its ``campaign.toml`` is read and checked.

        Raises:
            InputError: the folder has no campaign, its ``campaign.toml`` is damaged, or it is not writable.
        """
        if not holds_campaign(root):
            raise InputError(f"{root} holds no campaign (no {CONFIG}); start one without --resume")
        config = read_config(root)
        check_writable(root)
        return cls(root, config, exists=True)

    def config(self) -> CampaignConfig:
        """The campaign's configuration (as it will be written, before :meth:`begin`)."""
        return self._config

    def stage(self, config: CampaignConfig) -> None:
        """Replace the configuration; it is written by :meth:`begin` (a resume that extends the budget)."""
        self._config = config
        self._dirty = True

    def begin(self, info: TargetInfo | None) -> None:
        """Make the folder if it is new and write the configuration with the target's fingerprint ``info`` (kept
        when the configuration has one already). Called once the target is open.

        Raises:
            InputError: the folder holds a campaign, or cannot be created or written, or its disk is full.
        """
        if info is not None and self._config.target_info is None:
            self._config = replace(self._config, target_info=info)
            self._dirty = True
        if not self._exists:
            self.root = self._make_folder()
            self._exists = True
        if self._dirty:
            with self._writing():
                write_atomic(self.root / CONFIG, tomli_w.dumps(self._config.to_toml_dict()))
            self._dirty = False

    def _make_folder(self) -> Path:
        candidates = [self.root] + ([self.root.with_name(f"{self.root.name}-{i}") for i in range(2, _MAX_SUFFIX)]
                                    if self._unique else [])
        for root in candidates:
            if self._unique:
                try:
                    root.parent.mkdir(parents=True, exist_ok=True)
                    root.mkdir()
                except FileExistsError:
                    continue
                except OSError as exc:
                    raise InputError(f"cannot create the output folder {root}: {exc.strerror}") from None
            else:
                _refuse_existing(root)
                try:
                    root.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise InputError(f"cannot create the output folder {root}: {exc.strerror}") from None
            check_writable(root)
            return root
        raise InputError(f"every folder name from {self.root} to {candidates[-1].name} is taken; give --out")

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a failed write into one sentence that says how to go on."""
        try:
            yield
        except OSError as exc:
            raise StoreError(f"cannot write to the campaign folder {self.root} ({exc.strerror or exc}); what "
                             f"was saved before is kept: make room, then continue with collie campaign --resume "
                             f"--out {self.root}") from None

    def update_config(self, config: CampaignConfig) -> None:
        """Write ``config`` now (the folder exists)."""
        self._config = config
        with self._writing():
            write_atomic(self.root / CONFIG, tomli_w.dumps(config.to_toml_dict()))
        self._dirty = False

    def append(self, record: TrialRecord) -> None:
        """Append one record to the journal, flushed and fsynced before returning.

        Raises:
            StoreError: the disk refused the write.
            RuntimeError: :meth:`read_journal` found the trace of a crash that :meth:`repair_journal` has not cut
                off yet (appending would glue the record to a torn line, or leave trials in flight twice).
        """
        if self._unrepaired is not None:
            raise RuntimeError(f"{self.root / JOURNAL} ends in the trace of a crash: call repair_journal() before "
                               "appending to it")
        with self._writing():
            if self._journal is None:
                self._journal = open(self.root / JOURNAL, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._journal.write(json.dumps(record.to_json(), separators=(",", ":"), sort_keys=True) + "\n")
            self._journal.flush()
            os.fsync(self._journal.fileno())

    def read_journal(self) -> JournalRead:
        """Every record in order, each checked (see the module's invariants), less the trace of a crash; the file
        is only read, never written (:meth:`repair_journal` cuts that trace off it; until it does, this store
        refuses to :meth:`append`).

        The trace of a crash is a last line without its newline that is not a whole record (a crash while
        writing it: left out, with a warning; a whole one is read, with a warning that its newline is missing),
        and the RUNNING rows that end the journal (the trials in flight at a crash or a Ctrl-C, left out
        silently: a resumed campaign runs them again and journals them anew, so its journal is the uninterrupted
        one's). A campaign of ``parallel`` chains may have had several trials in flight: the RUNNING row of one
        that was journaled before another trial ended stays where it is (the rows' order is checked with
        :func:`~collie.storage.records.check_sequence` for ``parallel`` trials in flight), and the trial is
        journaled RUNNING again when it runs again. :attr:`JournalRead.repair` says what
        :meth:`repair_journal` would change.
        A journal without trials beside a ``campaign.toml`` that holds calibrated ceilings has lost them (the
        ceilings come from the first trials): an error, not a fresh start.

        Raises:
            InputError: a damaged row or a gap in the trial numbers (the file, the line and the field).
        """
        path = self.root / JOURNAL
        data = path.read_bytes() if path.exists() else b""
        raw_lines = data.split(b"\n")
        records: list[TrialRecord] = []
        numbers: list[int] = []
        warnings: list[str] = []
        cut: int | None = None
        starts: list[int] = []
        offset = 0
        for i, raw in enumerate(raw_lines):
            start, offset = offset, offset + len(raw) + 1
            if not raw.strip():
                continue
            where = f"{path}: line {i + 1}"
            torn = i == len(raw_lines) - 1  # no newline after it: the record being written at a crash
            try:
                row = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                if torn:
                    warnings.append(f"{where} is truncated (a crash while writing it); cut it off the journal")
                    cut = start
                    break
                raise InputError(f"{where}: not a valid JSON record; the journal is damaged") from None
            records.append(TrialRecord.from_json(row, where))
            numbers.append(i + 1)
            starts.append(start)
        check_sequence(records, numbers, str(path), self._config.parallel)
        if not any(r.state.finished for r in records) and self._config.ceilings is not None:
            raise InputError(f"{path}: holds no finished trial, but {self.root / CONFIG} holds the ceilings its "
                             "calibration trials measured: the journal was lost or emptied, and resuming would "
                             "start the campaign over; restore it, or start a new campaign with another --out")
        tail = raw_lines[-1]  # what follows the last newline: b"" unless a crash cut the last write short
        if cut is None and tail and not tail.strip():
            cut = len(data) - len(tail)
        while records and records[-1].state is TrialState.RUNNING:  # the trials in flight: they run again
            cut = starts.pop()
            records.pop()
            numbers.pop()
        missing_newline = cut is None and bool(tail)  # a whole last record without its newline
        if missing_newline:
            warnings.append(f"{path}: line {numbers[-1]} lacks its newline (a crash while writing it); added it")
        repair = JournalRepair(cut, missing_newline) if cut is not None or missing_newline else None
        self._unrepaired = repair
        return JournalRead(tuple(records), tuple(numbers), tuple(warnings), repair)

    def repair_journal(self) -> JournalRead:
        """Read the journal (:meth:`read_journal`) and cut the trace of a crash off the file, so that the next
        record appended starts a line of its own after the last finished one: what a resume does before its
        campaign reads the journal. The file is truncated (or gets its last newline) and fsynced in place;
        a journal with nothing to repair is not written.

        Returns:
            the journal as read before the repair (its warnings say what was repaired; a campaign that reads the
            journal after the repair gets the same records and no warnings).

        Raises:
            InputError: the journal is damaged beyond a crash's trace (it is left as is).
            StoreError: the repair could not be written.
        """
        read = self.read_journal()
        repair = read.repair
        if repair is not None:
            with self._writing(), open(self.root / JOURNAL, "r+b") as fh:
                if repair.cut is not None:
                    fh.truncate(repair.cut)
                else:
                    fh.seek(0, os.SEEK_END)
                    fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            self._unrepaired = None
        return read

    def save_anomaly(self, record: CaseRecord) -> Path:
        """Write ``anomalies/<id>/`` (see :func:`~collie.storage.case.write_case_folder`)."""
        base = self.root / ANOMALIES
        with self._writing():
            base.mkdir(exist_ok=True)
            return write_case_folder(base / record.anomaly_id, record)

    def update_mfs(self, anomaly_id: str, mfs: MFS, case: Workload, cost: int = 0,
                   evidence: CaseEvidence | None = None) -> None:
        """Rewrite a saved anomaly's folder with a new MFS and ``case.toml`` (whose description names the MFS),
        adding ``cost`` experiments to its ``minimize_experiments`` (its MFS was widened or its edges finished);
        ``evidence``: the runs of ``case`` when the case moved (None: the case's point is the same). The folder
        is rewritten as a whole, so it is the old one or the new one, never a mix."""
        self._rewrite(anomaly_id, lambda r: replace(r, mfs=mfs, workload=case,
                                                    evidence=evidence or r.evidence,
                                                    minimize_experiments=r.minimize_experiments + cost))

    def add_hit(self, anomaly_id: str, hit: Hit) -> None:
        """Record in a saved anomaly's folder that a later find was that anomaly (rewritten as a whole)."""
        self._rewrite(anomaly_id, lambda r: replace(r, hits=(*r.hits, hit)))

    def remove_anomaly(self, anomaly_id: str) -> None:
        """Remove a saved anomaly's folder (it joined another anomaly as a further hit)."""
        with self._writing():
            shutil.rmtree(self.root / ANOMALIES / anomaly_id)

    def merge_anomaly(self, anomaly_id: str, into: str, hit: Hit) -> None:
        """Fold saved anomaly ``anomaly_id`` into ``into`` as a further ``hit`` (costing what minimizing it
        cost), with the hits it had; the hits are recorded before its folder goes, so a crash between the two
        loses none."""
        joining = read_case_folder(self.root / ANOMALIES / anomaly_id)
        hits = (replace(hit, experiments=joining.minimize_experiments), *joining.hits)
        self._rewrite(into, lambda r: replace(r, hits=tuple(sorted((*r.hits, *hits), key=lambda h: h.trial))))
        self.remove_anomaly(anomaly_id)

    def _rewrite(self, anomaly_id: str, change: Callable[[CaseRecord], CaseRecord]) -> None:
        folder = self.root / ANOMALIES / anomaly_id
        with self._writing():
            write_case_folder(folder, change(read_case_folder(folder)))

    def anomaly_dirs(self) -> Iterator[Path]:
        base = self.root / ANOMALIES
        if base.is_dir():
            yield from sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))

    def keep_anomalies(self, ids: set[str]) -> list[str]:
        """Remove every anomaly folder not named in ``ids`` and any half-written one a crash left; returns the
        names of the complete folders removed (a resumed campaign's summary lists exactly what stays)."""
        base = self.root / ANOMALIES
        removed: list[str] = []
        if not base.is_dir():
            return removed
        with self._writing():
            for p in sorted(base.iterdir()):
                if p.is_dir() and (p.name.startswith(".") or p.name not in ids):
                    shutil.rmtree(p)
                    if not p.name.startswith("."):
                        removed.append(p.name)
        return removed

    def close(self) -> None:
        journal, self._journal = self._journal, None
        if journal is not None:
            with self._writing():
                journal.close()


def holds_campaign(root: Path) -> bool:
    """Whether the folder ``root`` holds a campaign (its ``campaign.toml``)."""
    return (root / CONFIG).is_file()


def read_config(root: Path) -> CampaignConfig:
    """The checked configuration of the campaign in ``root`` (read only; see
    :meth:`~collie.storage.records.CampaignConfig.from_toml`).

    Raises:
        InputError: no readable ``campaign.toml``, or a damaged one (naming the file and the field).
    """
    return CampaignConfig.from_toml(read_toml(root / CONFIG), str(root / CONFIG))


def _refuse_existing(root: Path) -> None:
    if (root / CONFIG).exists() or (root / JOURNAL).exists():
        raise InputError(f"{root} already holds a campaign; use --resume to continue it or choose another "
                         "--out folder")
