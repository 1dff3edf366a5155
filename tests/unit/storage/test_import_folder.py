"""The import folder: logs kept byte for byte, read back parsed as they were; a folder written only when every
log parses; what does not match its record refused in one sentence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.storage.imports import IMPORT_FILE, ImportTool, import_logs, is_import_folder, read_import

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SWEEP = next((FIXTURES / "perftest").glob("07-*"))
NCCL = next((FIXTURES / "nccl_tests").glob("02-*"))


def test_a_folder_reads_back_what_was_imported(tmp_path: Path) -> None:
    made = import_logs(ImportTool.NCCL_TESTS, [NCCL], tmp_path / "imp")
    assert is_import_folder(tmp_path / "imp") and not is_import_folder(tmp_path)
    back = read_import(tmp_path / "imp")
    assert back.tool is ImportTool.NCCL_TESTS and back.imported_at == made.imported_at
    assert [c.rows for c in back.logs[0].parsed.collectives] == \
        [c.rows for c in made.logs[0].parsed.collectives]  # type: ignore[union-attr]
    assert (back.logs[0].origin, back.logs[0].name) == (str(NCCL), NCCL.name)


def test_nothing_is_written_unless_every_log_parses(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("hello\n")
    with pytest.raises(InputError, match=r"bad\.txt:1: not perftest output"):
        import_logs(ImportTool.PERFTEST, [SWEEP, bad], tmp_path / "imp")
    assert not (tmp_path / "imp").exists()
    with pytest.raises(InputError, match="give at least one perftest log"):
        import_logs(ImportTool.PERFTEST, [], tmp_path / "imp")


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d | {"schema": 2}, "schema 2 is not one this collie reads"),
    (lambda d: d | {"tool": "iperf"}, "tool"),
    (lambda d: d | {"logs": [d["logs"][0] | {"name": "../x"}]}, "'../x' is not a file name under logs/"),
    (lambda d: d | {"logs": [d["logs"][0] | {"name": "gone.txt"}]}, "gone.txt: no such file"),
    (lambda d: {k: v for k, v in d.items() if k != "logs"}, "logs"),
])
def test_a_record_that_does_not_match_is_refused(tmp_path: Path, edit: object, says: str) -> None:
    import_logs(ImportTool.PERFTEST, [SWEEP], tmp_path / "imp")
    record = tmp_path / "imp" / IMPORT_FILE
    record.write_text(json.dumps(edit(json.loads(record.read_text()))))  # type: ignore[operator]
    with pytest.raises(InputError, match=re.escape(says)):
        read_import(tmp_path / "imp")
