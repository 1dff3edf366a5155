"""The campaign folder: configuration, an append-only trial journal, and one folder per anomaly.

Layout::

    DIR/campaign.toml              config + target fingerprint + calibrated ceilings (written once)
    DIR/trials.jsonl               one JSON object per line, appended, flushed and fsynced per record
    DIR/anomalies/<id>/case.toml   the minimal replayable workload
    DIR/anomalies/<id>/mfs.json    its minimal feature set
    DIR/anomalies/<id>/evidence.json  verdicts and counters from both ends, the original point, costs

Invariants:
    * the journal is only appended to; a crash loses at most the record being written, and a truncated last
      line is skipped with a warning when the journal is read back;
    * anomaly folders are written to a temporary name and renamed into place, so a folder that exists is
      complete;
    * a write that fails during a campaign (a full disk) raises :class:`~collie.errors.StoreError`, whose
      sentence says how to continue: what was written before it stays readable.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import tomli_w

from collie.case_record import CaseRecord, write_case_folder
from collie.errors import InputError, StoreError
from collie.tomlio import read_toml

CONFIG: Final = "campaign.toml"
JOURNAL: Final = "trials.jsonl"
ANOMALIES: Final = "anomalies"
_MIN_FREE_BYTES: Final = 16 << 20


@dataclass(frozen=True)
class JournalRead:
    """Records read back from a journal, and what had to be skipped."""

    records: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...]


class CampaignStore:
    """One campaign folder. Use :meth:`create` for a new campaign and :meth:`open` to resume one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._journal: IO[str] | None = None

    @classmethod
    def create(cls, root: Path, config: Mapping[str, Any]) -> CampaignStore:
        """Make a new campaign folder (it must not hold a campaign already) and write its config.

        Raises:
            InputError: the folder holds a campaign, cannot be created or written, or its disk is full.
        """
        if (root / CONFIG).exists() or (root / JOURNAL).exists():
            raise InputError(f"{root} already holds a campaign; use --resume to continue it or choose another "
                             "--out folder")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the output folder {root}: {exc.strerror}") from None
        check_writable(root)
        store = cls(root)
        _atomic_write(root / CONFIG, tomli_w.dumps(_toml_safe(config)))
        return store

    @classmethod
    def open(cls, root: Path) -> CampaignStore:
        """Open an existing campaign folder for resuming.

        Raises:
            InputError: the folder has no campaign, or is not writable.
        """
        if not (root / CONFIG).is_file():
            raise InputError(f"{root} holds no campaign (no {CONFIG}); start one without --resume")
        check_writable(root)
        return cls(root)

    def config(self) -> dict[str, Any]:
        return read_toml(self.root / CONFIG)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a failed write into one sentence that says how to go on."""
        try:
            yield
        except OSError as exc:
            raise StoreError(f"cannot write to the campaign folder {self.root} ({exc.strerror or exc}); what "
                             f"was saved before is kept: make room, then continue with collie campaign --resume "
                             f"--out {self.root}") from None

    def update_config(self, config: Mapping[str, Any]) -> None:
        with self._writing():
            _atomic_write(self.root / CONFIG, tomli_w.dumps(_toml_safe(config)))

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record to the journal, flushed and fsynced before returning."""
        with self._writing():
            if self._journal is None:
                self._journal = open(self.root / JOURNAL, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._journal.write(json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n")
            self._journal.flush()
            os.fsync(self._journal.fileno())

    def read_journal(self) -> JournalRead:
        """Every complete record in order; a truncated or garbled last line is skipped with a warning."""
        path = self.root / JOURNAL
        if not path.exists():
            return JournalRead((), ())
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        records: list[dict[str, Any]] = []
        warnings: list[str] = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                if i >= len(lines) - 2:
                    warnings.append(f"{path}: line {i + 1} is truncated (a crash while writing); skipped it")
                    self._truncate_to_complete(path, lines[:i])
                else:
                    raise InputError(f"{path}: line {i + 1} is not valid JSON; the journal is damaged") from None
        return JournalRead(tuple(records), tuple(warnings))

    @staticmethod
    def _truncate_to_complete(path: Path, good_lines: list[str]) -> None:
        text = "\n".join(line for line in good_lines if line.strip())
        _atomic_write(path, text + "\n" if text else "")

    def save_anomaly(self, record: CaseRecord) -> Path:
        """Write ``anomalies/<id>/`` (see :func:`~collie.case_record.write_case_folder`)."""
        base = self.root / ANOMALIES
        with self._writing():
            base.mkdir(exist_ok=True)
            return write_case_folder(base / record.anomaly_id, record)

    def update_mfs(self, anomaly_id: str, mfs: Mapping[str, Any], case_toml: str, cost: int = 0) -> None:
        """Rewrite a saved anomaly's ``mfs.json`` and ``case.toml`` (whose description names the MFS) atomically,
        file by file (its MFS was widened or its edges finished), adding ``cost`` experiments to the
        ``minimize_experiments`` of its ``evidence.json``."""
        folder = self.root / ANOMALIES / anomaly_id
        with self._writing():
            _atomic_write(folder / "mfs.json", json.dumps(mfs, indent=2))
            _atomic_write(folder / "case.toml", case_toml)
            if cost:
                evidence = json.loads((folder / "evidence.json").read_text(encoding="utf-8"))
                evidence["minimize_experiments"] = evidence.get("minimize_experiments", 0) + cost
                _atomic_write(folder / "evidence.json", json.dumps(evidence, indent=2))

    def anomaly_dirs(self) -> Iterator[Path]:
        base = self.root / ANOMALIES
        if base.is_dir():
            yield from sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))

    def close(self) -> None:
        journal, self._journal = self._journal, None
        if journal is not None:
            with self._writing():
                journal.close()


def check_writable(root: Path) -> None:
    """Fail early, with one sentence, when ``root`` cannot take a campaign (read-only, or disk full)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".collie-write-test.", dir=root)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise InputError(f"cannot write to the output folder {root}: {exc.strerror}") from None
    free = shutil.disk_usage(root).free
    if free < _MIN_FREE_BYTES:
        raise InputError(f"the disk holding {root} has only {free >> 20} MiB free; collie needs at least "
                         f"{_MIN_FREE_BYTES >> 20} MiB for a campaign")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _toml_safe(value: Any) -> Any:
    """TOML has no null: drop None values recursively."""
    if isinstance(value, Mapping):
        return {k: _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_toml_safe(v) for v in value if v is not None]
    return value
