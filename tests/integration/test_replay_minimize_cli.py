"""``collie replay`` and ``collie minimize`` on saved cases and plain workload files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_cli


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("camp") / "c"
    r = run_cli("campaign", "--budget", "150", "--target", "sim:cx6-200g-amd", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_replay_exit_codes(campaign_dir: Path) -> None:
    case = sorted((campaign_dir / "anomalies").iterdir())[0]
    r = run_cli("replay", str(case), "--target", "sim:cx6-200g-amd", "--format", "json")
    assert r.returncode == 1 and "reproduces" in r.stderr
    assert all(row["anomalous"] for row in json.loads(r.stdout))
    clean = run_cli("replay", str(EXAMPLES / "rc-write-64k.toml"), "--runs", "2")
    assert clean.returncode == 0 and "does not reproduce" in clean.stderr


def test_minimize_a_saved_case_and_a_workload_file(campaign_dir: Path) -> None:
    case = sorted((campaign_dir / "anomalies").iterdir())[0]
    r = run_cli("minimize", str(case), "--target", "sim:cx6-200g-amd", "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["confirmed"] and data["mfs"] and data["calibration"] == 0  # ceilings from the campaign
    trigger = run_cli("minimize", str(EXAMPLES / "ud-send-batch64.toml"), "--format", "json")
    assert trigger.returncode == 0, trigger.stderr
    mfs = json.loads(trigger.stdout)["mfs"]
    assert "transport == UD" in mfs and "batch >= " in mfs and "wq_depth >= " in mfs


def test_bad_cases(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_cli("replay", str(empty))
    assert r.returncode == 2 and "not a case folder" in r.stderr
    clean = run_cli("minimize", str(EXAMPLES / "rc-write-64k.toml"))
    assert clean.returncode == 2 and "not anomalous" in clean.stderr
    assert "Traceback" not in r.stderr + clean.stderr


def test_minimize_the_bidirectional_read_trigger() -> None:
    r = run_cli("minimize", str(EXAMPLES / "bi-rc-read-80qp.toml"), "--format", "json")
    assert r.returncode == 0, r.stderr
    mfs = json.loads(r.stdout)["mfs"]
    for needed in ("bidirectional == True", "opcode == READ", "batch >= ", "sges >= "):
        assert needed in mfs


def test_minimize_saves_a_case_folder_a_campaign_takes_as_its_corpus(tmp_path: Path) -> None:
    out = tmp_path / "mins" / "bi-read"
    r = run_cli("minimize", str(EXAMPLES / "bi-rc-read-80qp.toml"), "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    saved = json.loads((out / "mfs.json").read_text())
    assert saved["text"] == shown["mfs"] and saved["conditions"]
    evidence = json.loads((out / "evidence.json").read_text())
    assert evidence["signature"] == shown["signature"] and evidence["minimize_experiments"] == shown["experiments"]
    replay = run_cli("replay", str(out), "--format", "json")
    assert replay.returncode == 1, replay.stderr  # the simplest case still reproduces
    campaign = run_cli("campaign", "--budget", "40", "--corpus", str(tmp_path / "mins"),
                       "--out", str(tmp_path / "c"), "--format", "json")
    assert campaign.returncode == 0, campaign.stderr
    assert json.loads(campaign.stdout)["replayed"] == 1
    # a second run never overwrites the first result, and says so before running anything
    again = run_cli("minimize", str(EXAMPLES / "bi-rc-read-80qp.toml"), "--out", str(out))
    assert again.returncode == 2 and "bi-read is not empty" in again.stderr and "Traceback" not in again.stderr
    assert json.loads((out / "mfs.json").read_text()) == saved
