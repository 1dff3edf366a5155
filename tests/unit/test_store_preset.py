from __future__ import annotations

import json
from pathlib import Path

import pytest

from collie.case_record import CaseRecord
from collie.errors import InputError
from collie.mfs import MFS
from collie.preset import load_preset
from collie.store import CampaignStore
from collie.workload import Workload
from tests.conftest import EXAMPLES


def test_journal_append_and_truncated_last_line(tmp_path: Path) -> None:
    s = CampaignStore.create(tmp_path / "c", {"target": "sim", "seed": 1, "none": None})
    for i in range(3):
        s.append({"trial": i + 1, "status": "COMPLETE"})
    s.close()
    with open(tmp_path / "c" / "trials.jsonl", "a") as fh:
        fh.write('{"trial": 4, "sta')
    read = CampaignStore.open(tmp_path / "c").read_journal()
    assert [r["trial"] for r in read.records] == [1, 2, 3]
    assert read.warnings and "truncated" in read.warnings[0]
    # the damaged tail is cut off, so appending goes on cleanly
    again = CampaignStore.open(tmp_path / "c")
    again.append({"trial": 4, "status": "COMPLETE"})
    again.close()
    assert [r["trial"] for r in again.read_journal().records] == [1, 2, 3, 4]
    assert "none" not in s.config()


def test_damage_in_the_middle_is_an_error(tmp_path: Path) -> None:
    s = CampaignStore.create(tmp_path / "c", {})
    (tmp_path / "c" / "trials.jsonl").write_text('{"trial": 1}\nxx\n{"trial": 3}\n{"trial": 4}\n')
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        s.read_journal()


def test_anomaly_folders_are_complete_or_absent(tmp_path: Path) -> None:
    s = CampaignStore.create(tmp_path / "c", {})
    workload = Workload.load(EXAMPLES / "rc-write-64k.toml")
    folder = s.save_anomaly(CaseRecord("A001-pause", "pause@receiver", True, workload, MFS("pause@receiver", ())))
    assert sorted(p.name for p in folder.iterdir()) == ["case.toml", "evidence.json", "mfs.json"]
    assert json.loads((folder / "evidence.json").read_text())["anomaly_id"] == "A001-pause"
    assert [p.name for p in s.anomaly_dirs()] == ["A001-pause"]


def test_create_refuses_an_existing_campaign_and_open_needs_one(tmp_path: Path) -> None:
    CampaignStore.create(tmp_path / "c", {})
    with pytest.raises(InputError, match="already holds a campaign"):
        CampaignStore.create(tmp_path / "c", {})
    with pytest.raises(InputError, match="holds no campaign"):
        CampaignStore.open(tmp_path / "other")


def test_builtin_presets_load() -> None:
    for name in ("collie", "random", "bayes", "quick"):
        p = load_preset(name)
        assert p.budget > 0 and p.duration > 0
    assert load_preset("random").minimize is None and not load_preset("random").exclude_known
    assert load_preset("collie").minimize is not None and load_preset("collie").exclude_known


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('strategy = "genetic"\n', "not a strategy"),
        ("budget = 0\n", "must be at least 1"),
        ("speed = 3\n", "unknown field 'speed'"),
        ("[oracle]\npause = 0.1\n", "unknown field 'pause'"),
        ('[oracle]\npause_ratio = "high"\n', "expected a number"),
        ("[minimize]\nruns = 2\nrequired = 3\n", "must be between 1 and runs"),
        ("[minimize]\nfar_side = 1\n", "expected true or false"),
        ("[minimize]\nruns = 2.5\n", "expected an integer"),
        ('[minimize]\nrecheck_margin = "some"\n', "expected a number"),
        ("[minimize]\nrecheck_margin = -0.1\n", "recheck_margin (-0.1) must be 0 or more"),
        ("[minimize]\nsearch_bisect_steps = -1\n", "search_bisect_steps (-1) must be 0 or more"),
        ("[minimize]\nsearch_bisect_steps = 1.5\n", "expected"),
    ],
)
def test_bad_presets(tmp_path: Path, text: str, fragment: str) -> None:
    p = tmp_path / "p.toml"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        load_preset(str(p))
    assert fragment in str(err.value)


def test_a_numeric_minimize_setting_takes_an_int_or_a_float(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    for value in ("0", "0.25"):
        p.write_text(f"[minimize]\nrecheck_margin = {value}\n")
        minimize = load_preset(str(p)).minimize
        assert minimize is not None and minimize.recheck_margin == float(value)


def test_unknown_builtin_preset() -> None:
    with pytest.raises(InputError, match="unknown preset 'turbo'; use one of bayes, collie, quick, random"):
        load_preset("turbo")
