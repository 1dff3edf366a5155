"""An import folder: logs of another tool (perftest, nccl-tests) kept as they were, read into collie.

``collie import perftest LOG... -o DIR`` makes one::

    DIR/import.json      what was imported: the tool, when, and each log's name, origin and SHA-256
    DIR/logs/NAME        each log, byte for byte

Reading the folder parses its logs again (the parsers are pure and fast), so the folder holds the evidence itself
and no second copy of it in another form.

Invariants:
    * every log is parsed before anything is written: a log collie cannot read is refused (one sentence naming
      the file and line, :class:`~collie.errors.InputError`) and the folder is not made;
    * the folder is new or empty (:func:`~collie.storage.files.check_new_folder`); each file is written
      atomically, ``import.json`` last, so a folder without it is not an import folder;
    * reading checks each log against its SHA-256: a log changed since it was imported is refused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, Final

from collie.codec import Reader
from collie.errors import InputError
from collie.importers.nccl_tests import NcclTestsLog, parse_nccl_tests
from collie.importers.perftest import PerftestLog, parse_perftest
from collie.importers.text import decode_log
from collie.storage.files import check_new_folder, write_atomic
from collie.tomlio import read_bytes

IMPORT_FILE: Final = "import.json"
LOGS: Final = "logs"
SCHEMA: Final = 1


class ImportTool(Enum):
    """The tool whose logs a folder holds."""

    PERFTEST = "perftest"
    NCCL_TESTS = "nccl-tests"


@dataclass(frozen=True)
class ImportedLog:
    """One log of an import folder.

    Attributes:
        name: its file name under ``logs/``.
        origin: the path it was imported from, as given.
        sha256: its bytes' SHA-256.
        parsed: what the tool's parser read from it.
    """

    name: str
    origin: str
    sha256: str
    parsed: PerftestLog | NcclTestsLog


@dataclass(frozen=True)
class ImportFolder:
    """An import folder, read (see the module docstring).

    Attributes:
        root: the folder.
        tool: whose logs it holds.
        imported_at: when (UTC, ISO 8601).
        logs: its logs, in the order they were given.
    """

    root: Path
    tool: ImportTool
    imported_at: str
    logs: tuple[ImportedLog, ...]

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every log's warnings, in order."""
        return tuple(w for log in self.logs for w in log.parsed.warnings)


def is_import_folder(root: Path) -> bool:
    """Whether ``root`` is an import folder (it has ``import.json``)."""
    return (root / IMPORT_FILE).is_file()


def parse_log(tool: ImportTool, data: bytes, source: str) -> PerftestLog | NcclTestsLog:
    """``data`` read by ``tool``'s parser; ``source`` names it in every error and warning.

    Raises:
        InputError: the log cannot be read (one sentence naming ``source`` and the line).
    """
    text = decode_log(data)
    return parse_perftest(text, source) if tool is ImportTool.PERFTEST else parse_nccl_tests(text, source)


def import_logs(tool: ImportTool, paths: list[Path], root: Path) -> ImportFolder:
    """Make the import folder ``root`` of the logs at ``paths`` (see the module docstring).

    Raises:
        InputError: no log given, a log that cannot be read or parsed, two logs of one name, or a folder that
            is not new or empty (one sentence naming it).
    """
    if not paths:
        raise InputError(f"give at least one {tool.value} log to import")
    check_new_folder(root)
    logs: list[tuple[ImportedLog, bytes]] = []
    names: set[str] = set()
    for path in paths:
        data = read_bytes(path, "a log file")
        if path.name in names:
            raise InputError(f"{path}: two logs are named {path.name}; rename one (the folder keeps them by name)")
        names.add(path.name)
        parsed = parse_log(tool, data, str(path))
        logs.append((ImportedLog(path.name, str(path), hashlib.sha256(data).hexdigest(), parsed), data))
    try:
        (root / LOGS).mkdir(parents=True, exist_ok=True)
        for log, data in logs:
            write_atomic(root / LOGS / log.name, data)
        imported_at = datetime.now(UTC).isoformat(timespec="seconds")
        doc = {"schema": SCHEMA, "tool": tool.value, "imported_at": imported_at,
               "logs": [{"name": log.name, "origin": log.origin, "sha256": log.sha256} for log, _ in logs]}
        write_atomic(root / IMPORT_FILE, json.dumps(doc, indent=2) + "\n")
    except OSError as exc:
        raise InputError(f"{root}: cannot be written ({exc.strerror or exc}); import into another folder") from None
    return ImportFolder(root, tool, imported_at, tuple(log for log, _ in logs))


def read_import(root: Path) -> ImportFolder:
    """The import folder ``root``, its logs parsed again.

    Raises:
        InputError: ``import.json`` is missing or malformed, a log is missing, changed since it was imported or
            cannot be parsed (one sentence naming the file).
    """
    where = root / IMPORT_FILE
    try:
        doc: Any = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{root} is not an import folder (it has no {IMPORT_FILE})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{where}: cannot be read as JSON ({exc})") from None
    table = Reader(str(where)).table(doc, ("schema", "tool", "imported_at", "logs"), ("schema", "tool", "logs"))
    if table.integer("schema") != SCHEMA:
        table.at("schema").fail(f"schema {doc['schema']} is not one this collie reads ({SCHEMA})")
    tool = table.choice("tool", ImportTool, "a tool")
    logs = []
    for i, item in enumerate(table.items("logs", what="a list of logs")):
        entry = table.at("logs").at(i).table(item, ("name", "origin", "sha256"), ("name", "sha256"))
        name = entry.text("name")
        if "/" in name or name in ("", ".", ".."):
            entry.at("name").fail(f"{name!r} is not a file name under {LOGS}/")
        data = read_bytes(root / LOGS / name, "a log file")
        if hashlib.sha256(data).hexdigest() != entry.text("sha256"):
            raise InputError(f"{root / LOGS / name}: changed since it was imported (its SHA-256 differs); import "
                             f"the log again into a new folder")
        logs.append(ImportedLog(name, entry.text("origin", ""), entry.text("sha256"), parse_log(tool, data, name)))
    return ImportFolder(root, tool, table.text("imported_at", ""), tuple(logs))
