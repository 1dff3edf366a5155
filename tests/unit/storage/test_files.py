"""Output folders and atomic writes: the ``--out`` rules, and the umask's permissions on what collie makes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.storage.files import check_new_folder, temp_folder, write_atomic


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_files_and_folders_get_the_umasks_permissions(tmp_path: Path, umask_027: None) -> None:
    write_atomic(tmp_path / "r.md", "# report\n")
    folder = temp_folder(tmp_path, ".case.")
    assert (tmp_path / "r.md").read_text() == "# report\n"
    assert oct((tmp_path / "r.md").stat().st_mode & 0o777) == "0o640"
    assert oct(folder.stat().st_mode & 0o777) == "0o750" and folder.name.startswith(".case.")
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name, "r.md"]  # no temporary file stays


def test_a_failed_write_leaves_what_was_there_and_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "r.md").mkdir()  # a folder stands where the file goes: the rename fails
    (tmp_path / "r.md" / "keep").write_text("old\n")
    with pytest.raises(OSError):
        write_atomic(tmp_path / "r.md", "new\n")
    assert (tmp_path / "r.md" / "keep").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]


def test_an_out_folder_is_new_or_empty(tmp_path: Path) -> None:
    check_new_folder(tmp_path / "new" / "deeper")  # new: its parents are made later
    (tmp_path / "empty").mkdir()
    check_new_folder(tmp_path / "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # nothing created
    full = tmp_path / "full"
    full.mkdir()
    for name in ("a", "b", "c", "d", "e"):
        (full / name).write_text("")
    with pytest.raises(InputError, match=r"full is not empty \(it holds a, b, c and 2 more\); give --out a new"):
        check_new_folder(full)
    with pytest.raises(InputError, match=r"full/a is a file; give --out a new or empty folder"):
        check_new_folder(full / "a")
    with pytest.raises(InputError, match=r"cannot create the output folder .*full/a/x: .*full/a is a file"):
        check_new_folder(full / "a" / "x")
