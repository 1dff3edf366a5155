"""Cases know where they were found: ``collie replay`` and ``collie minimize`` through the real CLI.

A campaign on a profile other than the default used to leave cases that ``replay`` ran on ``sim`` (cx6-200g)
and called "does not reproduce" with exit 0: a CI gate built on it passed falsely. And ``evidence.json`` held the
original find's verdict beside a minimal ``case.toml`` that shows something else.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from simhelpers import PAPER_SPACE, paper_space

from collie.model.space import load_space
from collie.model.workload import Workload
from tests.conftest import EXAMPLES, ROOT, run_cli

FIXTURES = ROOT / "tests" / "fixtures" / "cases"
#: the target each campaign runs on, and the budget (small: a few cases each, in a few seconds)
PROFILES = ("sim:p2100g-100g", "sim", "sim:cx6-200g-amd")
#: the campaigns search the paper's space: these tests are about where cases were found and what their evidence
#: holds
SPACE = paper_space()


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("campaigns")
    out = {}
    for spec in PROFILES:
        folder = root / spec.replace(":", "-")
        r = run_cli("campaign", "--target", spec, "--seed", "1", "--budget", "150", "--space", str(PAPER_SPACE),
                    "--out", str(folder), "--format", "json")
        assert r.returncode == 0, r.stderr
        out[spec] = folder
    return out


def _cases(folder: Path) -> list[Path]:
    cases = sorted((folder / "anomalies").iterdir())
    assert cases, f"{folder}: the campaign found nothing to replay"
    return cases


@pytest.mark.parametrize("spec", PROFILES)
def test_every_confirmed_case_reproduces_where_it_was_found_with_no_target(campaigns: dict[str, Path],
                                                                           spec: str) -> None:
    """With no --target, replay runs where the case was found: every confirmed case reproduces (exit 1), and
    its runs show the signature its evidence records for case.toml itself."""
    for case in _cases(campaigns[spec]):
        evidence = json.loads((case / "evidence.json").read_text())
        r = run_cli("replay", str(case), "--format", "json")
        assert "Traceback" not in r.stderr
        if evidence["confirmed"]:
            assert r.returncode == 1, f"{case.name}: {r.stderr}"
        assert r.returncode in (0, 1), r.stderr
        assert f"was found on {spec}; running it there" in r.stderr
        shown = Counter(row["signature"] for row in json.loads(r.stdout)).most_common(1)[0][0]
        assert shown == evidence["case"]["signature"], case.name


def test_the_evidence_describes_case_toml_and_keeps_the_original_find_apart(campaigns: dict[str, Path]) -> None:
    """evidence.json's case section is the minimal case's own runs (its point builds case.toml); the original
    find (a bigger workload, whose signature may differ) is under original, with where it was found."""
    differing = 0
    for case in _cases(campaigns["sim:cx6-200g-amd"]):
        evidence = json.loads((case / "evidence.json").read_text())
        own, original = evidence["case"], evidence["original"]
        assert SPACE.build(own["point"]).flows == Workload.load(case / "case.toml").flows
        assert own["verdict"]["signature"] == own["signature"] and own["runs"]
        assert original["verdict"]["signature"] == evidence["signature"] and original["found_at"] >= 0
        assert evidence["target"]["spec"] == "sim:cx6-200g-amd"
        assert evidence["target"]["fingerprint"]["line_rate_bps"] == 200e9
        differing += own["point"] != original["point"]
    # minimizing moved cases away from the points they were found at (seed 1: all of them)
    assert differing >= 1


def test_a_different_target_is_allowed_and_the_output_says_the_difference(campaigns: dict[str, Path]) -> None:
    case = _cases(campaigns["sim:p2100g-100g"])[0]
    r = run_cli("replay", str(case), "--target", "sim:cx6-200g", "--runs", "1", "--format", "json")
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr
    note = next(line for line in r.stderr.splitlines() if line.startswith("note:"))
    assert f"{case} was found on sim:p2100g-100g; running it on sim:cx6-200g instead" in note
    for phrase in ("target sim:p2100g-100g -> sim:cx6-200g", "NIC ", "firmware ", "driver bnxt_re -> mlx5",
                   "line rate 100 Gb/s -> 200 Gb/s"):
        assert phrase in note, note


def test_a_recorded_target_that_cannot_be_opened_is_an_error_never_a_pass(campaigns: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    for spec in ("sim:no-such-profile", "verbs:mlx5_99", "remote:hosts.toml"):
        case = tmp_path / spec.replace(":", "-")
        shutil.copytree(_cases(campaigns["sim:p2100g-100g"])[0], case)
        evidence = json.loads((case / "evidence.json").read_text())
        evidence["target"]["spec"] = spec
        (case / "evidence.json").write_text(json.dumps(evidence))
        for command in ("replay", "minimize"):
            r = run_cli(command, str(case))
            assert r.returncode == 2, (spec, command, r.stderr)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and f"was found on {spec}" in lines[0] and "cannot be opened" in lines[0], lines


def test_minimize_runs_on_the_recorded_target_and_saves_a_case_that_knows_it(campaigns: dict[str, Path],
                                                                              tmp_path: Path) -> None:
    case = _cases(campaigns["sim:p2100g-100g"])[0]
    out = tmp_path / "min"
    r = run_cli("minimize", str(case), "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["target"] == "sim:p2100g-100g" and shown["calibration"] == 0  # the campaign's ceilings
    evidence = json.loads((out / "evidence.json").read_text())
    assert evidence["format"] == 2 and evidence["target"]["spec"] == "sim:p2100g-100g"
    assert evidence["minimized_from"] == str(case) and evidence["original"]["found_at"] is None
    # with no --space, minimize walks the default space: its point is one of the default space
    assert load_space().build(evidence["case"]["point"]).flows == Workload.load(out / "case.toml").flows
    replay = run_cli("replay", str(out), "--format", "json")  # away from its campaign: the record says where
    assert replay.returncode == 1, replay.stderr
    assert all(row["signature"] == evidence["case"]["signature"] for row in json.loads(replay.stdout))


def test_a_case_folder_from_before_records_had_a_target(tmp_path: Path) -> None:
    """A folder the previous release wrote (no format, no target): in its campaign folder it replays on the
    campaign's target; on its own it asks for --target; with one it runs."""
    campaign = tmp_path / "old"
    shutil.copytree(FIXTURES / "v1-campaign", campaign)
    case = campaign / "anomalies" / "A003-pause"
    r = run_cli("replay", str(case), "--format", "json")
    assert r.returncode == 1, r.stderr
    assert "was found on sim:cx6-200g-amd; running it there" in r.stderr
    alone = tmp_path / "A003-pause"
    shutil.copytree(case, alone)
    r = run_cli("replay", str(alone))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"collie: error: {alone} does not record the target it was found on (a case folder from an older "
        "collie, outside its campaign); give --target, e.g. --target sim"]
    r = run_cli("replay", str(alone), "--target", "sim:cx6-200g-amd", "--format", "json")
    assert r.returncode == 1, r.stderr


def test_a_workload_file_runs_on_the_default_target_with_a_warning() -> None:
    r = run_cli("replay", str(EXAMPLES / "rc-write-64k.toml"), "--runs", "1")
    assert r.returncode == 0, r.stderr
    assert "warning: " in r.stderr and "records no target; running it on the default target sim" in r.stderr


def test_help_documents_the_exit_codes() -> None:
    for command, codes in (("replay", ("0  it does not reproduce", "1  it reproduces", "2  an error")),
                           ("minimize", ("0  minimized", "2  an error"))):
        r = run_cli(command, "--help")
        assert r.returncode == 0
        lines = [line.strip() for line in r.stdout.split("Exit codes:")[1].splitlines()]
        assert all(any(line.startswith(c) for line in lines) for c in codes), lines
        assert "default: the target the case was found on" in " ".join(r.stdout.split())


def test_a_target_named_by_a_relative_file_is_recorded_absolute_and_replays_from_any_folder(tmp_path: Path) -> None:
    """``--target sim:my.toml`` given in the profile's folder: the campaign and its cases record the absolute
    path, so a replay from another folder, with no --target, opens the same profile."""
    lab = tmp_path / "lab"
    lab.mkdir()
    shutil.copy(ROOT / "collie" / "targets" / "sim" / "profiles" / "cx6-200g.toml", lab / "my.toml")
    r = run_cli("campaign", "--target", "sim:my.toml", "--seed", "1", "--budget", "150", "--out", "c",
                "--format", "json", cwd=lab)
    assert r.returncode == 0, r.stderr
    spec = f"sim:{(lab / 'my.toml').resolve()}"
    assert f'target = "{spec}"' in (lab / "c" / "campaign.toml").read_text()
    case = _cases(lab / "c")[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run_cli("replay", str(case), "--runs", "1", "--duration", "0.5", cwd=elsewhere)
    assert r.returncode in (0, 1), r.stderr
    assert f"was found on {spec}; running it there" in r.stderr
    # a spec naming no file is left as given (open_target then says what is wrong)
    r = run_cli("run", "--target", "sim:nosuch.toml", "--workload", str(EXAMPLES / "rc-write-64k.toml"), cwd=lab)
    assert r.returncode == 2 and "nosuch.toml" in r.stderr
