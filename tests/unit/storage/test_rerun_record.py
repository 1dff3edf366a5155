"""rerun.json: written and read back field for field; absent in a campaign of its own; damage refused in one
sentence naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.storage.rerun import RERUN_FILE, RerunRecord, RerunRow, SkippedRow, is_rerun_folder, read_rerun, write_rerun


def _record() -> RerunRecord:
    rows = (RerunRow("a.txt", 3, "k1"), RerunRow("a.txt", 4, "k2"), RerunRow("b.txt", 3, "k1"))
    return RerunRecord("/imports/sweep", "sim:cx6-200g", 0.2, 2, True, rows,
                       (SkippedRow("c.txt", 9, "the log names no verb (no test title)"),))


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    assert read_rerun(tmp_path) is None and not is_rerun_folder(tmp_path)
    write_rerun(tmp_path, _record())
    assert is_rerun_folder(tmp_path) and read_rerun(tmp_path) == _record()


def test_its_keys_are_each_workload_once_in_the_order_of_its_first_row() -> None:
    assert _record().keys == ("k1", "k2")


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d.update(repeat=0), r"/rerun.json: repeat: must be at least 1"),
    (lambda d: d.update(duration=0), "duration: must be above 0"),
    (lambda d: d.update(schema=7), "schema 7 is not one this collie reads"),
    (lambda d: d["rows"][0].pop("workload_key"), r"rerun.json: rows\[0\]: workload_key: missing"),
    (lambda d: d.update(surprise=1), "surprise"),
])
def test_a_damaged_record_is_one_sentence(tmp_path: Path, edit: object, says: str) -> None:
    doc = _record().to_dict()
    edit(doc)  # type: ignore[operator]
    (tmp_path / RERUN_FILE).write_text(json.dumps(doc))
    with pytest.raises(InputError, match=says):
        read_rerun(tmp_path)


def test_a_record_that_is_not_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / RERUN_FILE).write_text("{")
    with pytest.raises(InputError, match=r"rerun\.json: cannot be read as JSON"):
        read_rerun(tmp_path)
