"""Corpus folders: every case read and checked up front, named after its folder or file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.storage.corpus import load_corpus
from tests.conftest import EXAMPLES

MFS_JSON = {"signature": "pause@receiver", "conditions": [{"feature": "opcode", "op": "==", "value": "READ"}]}


def test_a_corpus_holds_case_folders_and_bare_workload_files_each_with_its_mfs(tmp_path: Path) -> None:
    example = EXAMPLES / "bi-rc-read-80qp.toml"
    (tmp_path / "A001-pause").mkdir()
    shutil.copy(example, tmp_path / "A001-pause" / "case.toml")
    (tmp_path / "A001-pause" / "mfs.json").write_text(json.dumps(MFS_JSON))
    shutil.copy(example, tmp_path / "first.toml")
    (tmp_path / "first.mfs.json").write_text(json.dumps(MFS_JSON))
    shutil.copy(example, tmp_path / "second.toml")
    cases = load_corpus(tmp_path)
    assert [c.name for c in cases] == ["A001-pause", "first", "second"]  # distinct names, folder cases first
    assert [c.mfs is not None for c in cases] == [True, True, False]
    assert cases[0].mfs is not None and cases[0].mfs.describe() == "opcode == READ"


def test_a_bad_case_or_mfs_is_named_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "junk.toml").write_text("x = 1\n")
    with pytest.raises(InputError, match=r"junk\.toml"):
        load_corpus(tmp_path)
    (tmp_path / "junk.toml").unlink()
    shutil.copy(EXAMPLES / "bi-rc-read-80qp.toml", tmp_path / "case.toml")
    (tmp_path / "case.mfs.json").write_text('{"signature": "pause@receiver"}')
    with pytest.raises(InputError, match=r"case\.mfs\.json: conditions: missing \(a list of conditions\)"):
        load_corpus(tmp_path)
    (tmp_path / "case.mfs.json").write_text("{not json")
    with pytest.raises(InputError, match=r"case\.mfs\.json: not valid JSON"):
        load_corpus(tmp_path)


def test_an_empty_folder_is_an_empty_corpus(tmp_path: Path) -> None:
    assert load_corpus(tmp_path) == ()
