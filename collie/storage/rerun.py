"""What a rerun of an import is: the record ``collie import rerun`` keeps beside a campaign's files.

A rerun is a campaign folder (``campaign.toml``, ``trials.jsonl``: :mod:`collie.storage.campaign`) whose trials
are the imported perftest rows' workloads, each run ``repeat`` times as ``replay`` trials after the calibration.
``DIR/rerun.json`` says which import folder it reran, with which options, and which rows: each row the workload
key it ran, or why it has none. A report comparing the import with the campaign matches rows by workload key;
this record lets it say which import the campaign reran and lets ``--resume`` check it is the same one.

Invariants:
    * ``rerun.json`` is written once, atomically, before the campaign's first file (a folder that has
      ``campaign.toml`` but no ``rerun.json`` is a campaign, not a rerun);
    * ``rows`` and ``skipped`` hold every perftest row of the import, in the logs' order, each once;
    * :attr:`RerunRecord.keys` is the order the workloads run in (each distinct key once, first row first).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from collie.codec import Reader, decode, encode_fields
from collie.errors import InputError
from collie.storage.files import write_atomic
from collie.tomlio import read_text

RERUN_FILE: Final = "rerun.json"
RERUN_SCHEMA: Final = 1


@dataclass(frozen=True)
class RerunRow:
    """An imported row that was rerun.

    Attributes:
        log: its log's name in the import folder.
        line: its line in the log.
        workload_key: the key of the workload it ran as.
    """

    log: str
    line: int
    workload_key: str


@dataclass(frozen=True)
class SkippedRow:
    """An imported row that was not rerun, and why (one sentence: the model cannot express its run's header).

    Attributes:
        log: its log's name in the import folder.
        line: its line in the log.
        reason: why it has no workload.
    """

    log: str
    line: int
    reason: str


@dataclass(frozen=True)
class RerunRecord:
    """``rerun.json`` (see the module docstring).

    Attributes:
        import_folder: the import folder it reran (absolute).
        target: the target spec it ran on, as the campaign records it.
        duration: seconds of measured traffic per run.
        repeat: runs per workload.
        verdict: the campaign calibrated first and judged each run.
        rows: the rows rerun, in the logs' order.
        skipped: the rows without a workload, in the logs' order.
        schema: this file's layout version.
    """

    import_folder: str
    target: str
    duration: float
    repeat: int
    verdict: bool
    rows: tuple[RerunRow, ...]
    skipped: tuple[SkippedRow, ...] = ()
    schema: int = RERUN_SCHEMA

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise InputError(f"{RERUN_FILE}: repeat: must be at least 1, got {self.repeat}")
        if self.duration <= 0:
            raise InputError(f"{RERUN_FILE}: duration: must be above 0, got {self.duration}")

    @property
    def keys(self) -> tuple[str, ...]:
        """Each distinct workload key once, in the order of its first row: the order the workloads run in."""
        return tuple(dict.fromkeys(r.workload_key for r in self.rows))

    def to_dict(self) -> dict[str, Any]:
        """The ``rerun.json`` document."""
        return encode_fields(self)


def is_rerun_folder(root: Path) -> bool:
    """Whether ``root`` holds a rerun record."""
    return (root / RERUN_FILE).is_file()


def write_rerun(root: Path, record: RerunRecord) -> None:
    """Write ``record`` as ``root/rerun.json`` (atomically; the folder exists).

    Raises:
        OSError: the file cannot be written.
    """
    write_atomic(root / RERUN_FILE, json.dumps(record.to_dict(), indent=2) + "\n")


def read_rerun(root: Path) -> RerunRecord | None:
    """The rerun record of the campaign folder ``root``; None when it has none (a campaign of its own).

    Raises:
        InputError: the file cannot be read, or is not a rerun record this collie reads (one sentence naming it).
    """
    where = root / RERUN_FILE
    if not where.is_file():
        return None
    try:
        doc: Any = json.loads(read_text(where, "a rerun record"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: cannot be read as JSON ({exc})") from None
    reader = Reader(str(where))
    if isinstance(doc, dict) and doc.get("schema", RERUN_SCHEMA) != RERUN_SCHEMA:
        reader.at("schema").fail(f"schema {doc['schema']} is not one this collie reads ({RERUN_SCHEMA})")
    try:
        return decode(RerunRecord, doc, reader)
    except InputError as exc:  # a value out of range (the record's own check): name the file
        raise InputError(str(exc).replace(RERUN_FILE, str(where), 1) if str(exc).startswith(RERUN_FILE)
                         else str(exc)) from None
