"""The campaign folder through the real CLI: every file checked on read, folders made only when the target is
open and never shared, what presets do said, and the summary's words."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small finished campaign, copied by each test that damages it. It searches the paper's space, where it finds
    one anomaly (in the whole default space a starved receiver is a second one of the base model's own)."""
    out = tmp_path_factory.mktemp("finished") / "c"
    r = run_cli("campaign", "--budget", "25", "--seed", "0", "--space", str(ROOT / "workloads" / "paper.toml"),
                "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    return out


def _copy(finished: Path, tmp: Path) -> Path:
    out = tmp / "c"
    shutil.copytree(finished, out)
    return out


def _one_sentence(r: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for f in fragments:
        assert f in r.stderr, r.stderr


@pytest.mark.parametrize(("text", "fragments"), [
    ("", ["campaign.toml: is empty"]),
    ("target = 'sim'\nbudget = 25\npreset = 'collie'\nstrategy = 'anneal'\n", ["seed: missing (an integer)"]),
    ("target = 'sim'\nseed = 0\nbudget = -3\npreset = 'collie'\nstrategy = 'anneal'\n",
     ["budget: must be at least 1, got -3"]),
    ("target = 'sim'\nseed = 'zero'\nbudget = 25\npreset = 'collie'\nstrategy = 'anneal'\n",
     ["seed: expected an integer, got 'zero'"]),
    ("target = 'sim'\nseed = 0\nbudget = 25\npreset = 'collie'\nstrategy = 'anneal'\n[ceilings]\nwire_bps = 3\n"
     "pps = {}\n[baseline]\n", ["ceilings: wire_bps: expected a table of numbers, got 3"]),
    ("version = 9\ntarget = 'sim'\nseed = 0\nbudget = 25\npreset = 'collie'\nstrategy = 'anneal'\n",
     ["version: 9 is not a campaign layout"]),
    ("target = 'sim'\nseed = 0\nbudget = 25\npreset = 'collie'\nstrategy = 'anneal'\ncolour = 1\n",
     ["unknown field 'colour'"]),
])
def test_a_damaged_campaign_toml_is_one_sentence(finished: Path, tmp_path: Path, text: str,
                                                 fragments: list[str]) -> None:
    out = _copy(finished, tmp_path)
    (out / "campaign.toml").write_text(text)
    journal = (out / "trials.jsonl").read_bytes()
    r = run_cli("campaign", "--resume", "--out", str(out))
    _one_sentence(r, f"{out / 'campaign.toml'}: ", *fragments)
    assert (out / "trials.jsonl").read_bytes() == journal


def _replace_row(out: Path, index: int, row: str) -> int:
    """Replace journal row ``index`` (0-based) by ``row``; returns its line number."""
    lines = (out / "trials.jsonl").read_text().splitlines()
    lines[index] = row
    (out / "trials.jsonl").write_text("\n".join(lines) + "\n")
    return index + 1


def _row(out: Path, index: int) -> dict[str, object]:
    row: dict[str, object] = json.loads((out / "trials.jsonl").read_text().splitlines()[index])
    return row


@pytest.mark.parametrize(("change", "fragment"), [
    (lambda row: {}, "trial: missing (a trial number)"),
    (lambda row: {**row, "trial": "abc"}, "trial: expected a trial number, got 'abc'"),
    (lambda row: {**row, "result": None}, "result: a COMPLETE trial needs its run result, got null"),
    (lambda row: {**row, "status": "DONE"}, "status: 'DONE' is not a trial state"),
    (lambda row: {**row, "trial": 99}, "expected trial 6 here, got 99"),
    (lambda row: {**row, "key": 7}, "key: expected a workload key, got 7"),
    (lambda row: {**row, "result": {**row["result"], "flows": [{**row["result"]["flows"][0], "bps": "fast"}]}},
     "result: flows[0]: bps: expected a number, got 'fast'"),
])
def test_a_damaged_journal_row_is_one_sentence_naming_the_line(finished: Path, tmp_path: Path, change: object,
                                                               fragment: str) -> None:
    out = _copy(finished, tmp_path)
    index = 11  # trial 6 ended: a COMPLETE calibration row
    row = _row(out, index)
    assert row["status"] == "COMPLETE" and row["trial"] == 6
    line = _replace_row(out, index, json.dumps(change(row)))  # type: ignore[operator]
    journal = (out / "trials.jsonl").read_bytes()
    r = run_cli("campaign", "--resume", "--out", str(out))
    _one_sentence(r, f"{out / 'trials.jsonl'}: line {line}: ", fragment)
    assert (out / "trials.jsonl").read_bytes() == journal  # never re-run, skipped or cut


def test_an_emptied_journal_does_not_restart_the_campaign(finished: Path, tmp_path: Path) -> None:
    out = _copy(finished, tmp_path)
    (out / "trials.jsonl").write_text("")
    r = run_cli("campaign", "--resume", "--out", str(out))
    _one_sentence(r, "holds no finished trial", "lost or emptied")
    assert (out / "trials.jsonl").read_text() == ""


def test_only_a_truncated_last_line_is_repaired_with_a_warning(finished: Path, tmp_path: Path) -> None:
    out = _copy(finished, tmp_path)
    whole = (out / "trials.jsonl").read_text()
    lines = whole.splitlines()
    (out / "trials.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:30])
    r = run_cli("campaign", "--resume", "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert f"{out / 'trials.jsonl'}: line {len(lines)} is truncated" in r.stderr
    assert json.loads(r.stdout)["experiments"] == 25
    again = (out / "trials.jsonl").read_text().splitlines()
    assert again[:-2] == lines[:-2] and len(again) == len(lines)  # the last trial ran again, nothing else


def test_a_target_that_cannot_open_leaves_no_folder_and_the_same_out_works_after(tmp_path: Path) -> None:
    out = tmp_path / "c"
    r = run_cli("campaign", "--target", "verbs:mlx5_0", "--budget", "20", "--out", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()
    again = run_cli("campaign", "--budget", "20", "--out", str(out))
    assert again.returncode == 0, again.stderr


def test_default_output_folders_never_collide(tmp_path: Path) -> None:
    # the folders of the next seconds are taken already (campaigns started in the same second)
    now = time.time()
    for t in range(-1, 30):
        taken = tmp_path / "reports" / time.strftime("campaign-%Y%m%d-%H%M%S", time.localtime(now + t))
        taken.mkdir(parents=True, exist_ok=True)
        (taken / "campaign.toml").write_text("x = 1\n")
    r = run_cli("campaign", "--budget", "20", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = Path(json.loads(r.stdout)["out"])
    assert re.fullmatch(r"campaign-\d{8}-\d{6}-2", out.name), out
    assert (tmp_path / out / "trials.jsonl").is_file()
    # and two started at once get two folders
    (tmp_path / "twin").mkdir()
    cmd = [sys.executable, "-m", "collie", "campaign", "--budget", "20", "--format", "json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen(cmd, cwd=tmp_path / "twin", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    folders = {json.loads(o)["out"] for o, _ in outs}
    assert len(folders) == 2


def test_a_resume_leaves_exactly_the_anomaly_folders_its_summary_lists(finished: Path, tmp_path: Path) -> None:
    out = _copy(finished, tmp_path)
    anomalies = out / "anomalies"
    first = sorted(p.name for p in anomalies.iterdir())
    # an earlier run's folder the resumed path does not find again, and a temporary folder a crash left
    shutil.copytree(anomalies / first[0], anomalies / "A009-pause")
    shutil.copytree(anomalies / first[0], anomalies / f".{first[0]}.x1y2z3")
    r = run_cli("campaign", "--resume", "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    listed = sorted(a["anomaly"] for a in json.loads(r.stdout)["anomalies"])
    assert listed == first
    assert sorted(p.name for p in anomalies.iterdir()) == listed
    assert "removed the anomaly folder A009-pause" in r.stderr


def test_a_preset_that_does_not_confirm_or_minimize_says_so(tmp_path: Path) -> None:
    help_text = run_cli("campaign", "--help").stdout
    assert "random or bayes (baselines: finds are saved as found, neither confirmed nor minimized)" in \
        " ".join(help_text.split())
    r = run_cli("campaign", "--preset", "random", "--budget", "40", "--seed", "1", "--out", str(tmp_path / "r"),
                "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["anomalies"] and data["confirms_and_minimizes"] is False
    assert "preset random neither confirms nor minimizes" in r.stderr
    found = [line for line in r.stderr.splitlines() if line.startswith("!! ")]
    assert found and all("not confirmed or minimized by this preset): saved as found" in line for line in found)
    done = next(line for line in r.stderr.splitlines() if line.startswith("== done"))
    assert "(preset random neither confirms nor minimizes: they are saved as found)" in done
    assert data["engine_bound"] == 0 and "engine" not in done  # the simulator is never engine-bound: no word of it
    collie = run_cli("campaign", "--budget", "20", "--out", str(tmp_path / "c"), "--format", "json")
    assert json.loads(collie.stdout)["confirms_and_minimizes"] is True and "neither" not in collie.stderr


def test_found_at_agrees_with_the_log_and_counts_are_in_good_english(finished: Path, tmp_path: Path) -> None:
    out = _copy(finished, tmp_path)
    r = run_cli("campaign", "--resume", "--out", str(out), "--format", "json")  # re-walks: the same lines
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["anomalies"]
    assert len(rows) == 1, "this campaign finds one anomaly: the summary says so in the singular"
    logged = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
        r"!! (\S+) \[.*?\] found at trial (\d+) \(experiment (\d+)\) ", r.stderr)}
    assert logged == {a["anomaly"]: (a["found_trial"], a["found_at"]) for a in rows}
    evidence = json.loads((out / "anomalies" / rows[0]["anomaly"] / "evidence.json").read_text())
    assert evidence["original"]["found_at"] == rows[0]["found_at"]
    # the experiment that found it is an explore trial, the found_at-th experiment of the journal
    journal = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    counted = [t for t in journal if t["status"] == "COMPLETE" and t["phase"] in ("explore", "confirm", "minimize")]
    finder = counted[rows[0]["found_at"] - 1]
    assert finder["phase"] == "explore" and finder["verdict"]["anomalous"]
    assert finder["trial"] == rows[0]["found_trial"]  # the trial number the log and the reports give
    assert "; 1 anomaly in " in r.stderr
    assert not re.search(r"\b1 (experiments|anomalies|runs|known cases|minimal feature sets)\b", r.stderr), r.stderr


def test_out_is_a_new_or_empty_folder_and_never_an_empty_string(tmp_path: Path) -> None:
    here = tmp_path / "here"
    (here / "shared").mkdir(parents=True)
    (here / "shared" / "notes.txt").write_text("keep me\n")
    (here / "a-file").write_text("")
    corpus = str(ROOT / "workloads" / "corpus")
    case = str(ROOT / "workloads" / "corpus" / "f03-read-mtu1k")
    writers = [["campaign", "--budget", "20"], ["ci", "--corpus", corpus, "--budget", "20"], ["minimize", case]]
    refused = {
        "--out is empty": [*([*w, "--out", ""] for w in writers), ["campaign", "--resume", "--out", ""]],
        "-o is empty": [["report", str(here), "-o", ""]],
        "shared is not empty (it holds notes.txt); give --out a new or empty folder":
            [[*w, "--out", "shared"] for w in writers],
        f"cannot create the output folder a-file/c: {here / 'a-file'} is a file":
            [[*w, "--out", "a-file/c"] for w in writers],
    }
    for sentence, commands in refused.items():
        for args in commands:
            r = run_cli(*args, cwd=here)
            _one_sentence(r, sentence)
            assert "target" not in r.stderr  # the folder is blamed, never the target
    assert sorted(p.name for p in here.iterdir()) == ["a-file", "shared"]  # nothing written anywhere
    assert [p.name for p in (here / "shared").iterdir()] == ["notes.txt"]
    (here / "empty").mkdir()
    r = run_cli("campaign", "--budget", "20", "--out", "empty", cwd=here)
    assert r.returncode == 0, r.stderr
    assert (here / "empty" / "trials.jsonl").is_file()


def test_files_and_folders_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o002)  # a shared CI artifact folder: group-writable, readable by all
    try:
        out = tmp_path / "c"
        r = run_cli("campaign", "--target", "sim:cx6-200g", "--budget", "40", "--out", str(out))
        assert r.returncode == 0, r.stderr
        report = run_cli("report", str(out), "-o", str(tmp_path / "r.html"))
        assert report.returncode == 0, report.stderr
        case = next((out / "anomalies").iterdir())
        minimized = run_cli("minimize", str(case), "--out", str(tmp_path / "m"))
        assert minimized.returncode == 0, minimized.stderr
    finally:
        os.umask(old)
    folders = [out, out / "anomalies", case, tmp_path / "m"]
    files = [out / "campaign.toml", out / "trials.jsonl", tmp_path / "r.html", *case.iterdir(),
             *(tmp_path / "m").iterdir()]
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in folders} == {p.name: "0o775" for p in folders}
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in files} == {p.name: "0o664" for p in files}
