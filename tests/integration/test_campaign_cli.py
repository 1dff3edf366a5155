"""``collie campaign`` end to end: a real subprocess, killed with SIGKILL and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, ctrl_c_reaches_it, run_cli


def test_default_campaign_writes_a_campaign_folder(tmp_path: Path) -> None:
    out = tmp_path / "c"
    r = run_cli("campaign", "--budget", "120", "--seed", "2", "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["experiments"] == 120
    assert (out / "campaign.toml").is_file() and (out / "trials.jsonl").is_file()
    for a in data["anomalies"]:
        case = out / "anomalies" / a["anomaly"] / "case.toml"
        replay = run_cli("run", "--workload", str(case), "--duration", "1")
        assert replay.returncode == 0, replay.stderr


def test_a_find_the_budget_cannot_minimize_is_said_to_be_saved_unminimized(tmp_path: Path) -> None:
    # a budget that ends right after a find leaves it unminimized: try budgets until one does
    for budget in range(120, 320, 9):
        r = run_cli("campaign", "--budget", str(budget), "--out", str(tmp_path / str(budget)), "--format", "json")
        assert r.returncode == 0, r.stderr
        last = json.loads(r.stdout)["anomalies"][-1]
        if not last["mfs"]:
            break
    else:
        raise AssertionError("no budget left a find unminimized")
    assert not last["confirmed"] and "budget ran out" in r.stderr
    line = next(x for x in r.stderr.splitlines() if x.startswith(f"!! {last['anomaly']} "))
    assert line.endswith("not minimized): saved as found"), line


def _paced_campaign(out: Path, *options: str) -> subprocess.Popen[str]:
    """A campaign of budget 150 slowed down (``--pace``) so that a test can interrupt it; stderr is piped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "collie", "campaign", "--budget", "150", "--out", str(out),
                             *options], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, preexec_fn=ctrl_c_reaches_it)


def _wait_for_journal_lines(journal: Path, lines: int) -> None:
    deadline = time.time() + 60
    while time.time() < deadline and (not journal.exists() or journal.read_text().count("\n") < lines):
        time.sleep(0.05)


def test_sigkill_mid_campaign_then_resume(tmp_path: Path) -> None:
    out = tmp_path / "c"
    proc = _paced_campaign(out, "--preset", "quick", "--pace", "0.01")
    journal = out / "trials.jsonl"
    _wait_for_journal_lines(journal, 60)
    proc.communicate()
    before = journal.read_text().count('"status":"COMPLETE"')
    assert before > 10
    r = run_cli("campaign", "--resume", "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["experiments"] == 150
    trials = [json.loads(line) for line in journal.read_text().splitlines()]
    done = [t["trial"] for t in trials if t["status"] != "RUNNING"]
    assert done == sorted(set(done)) == list(range(1, len(done) + 1))


def test_ctrl_c_mid_campaign_ends_cleanly_and_says_how_to_resume(tmp_path: Path) -> None:
    out = tmp_path / "c"
    proc = _paced_campaign(out, "--pace", "0.02")
    journal = out / "trials.jsonl"
    _wait_for_journal_lines(journal, 60)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"collie campaign --resume --out {out}" in err and "Traceback" not in err
    lines = journal.read_text().splitlines()
    assert all(json.loads(line) for line in lines)  # no torn record: the trial in flight was abandoned cleanly
    r = run_cli("campaign", "--resume", "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "truncated" not in r.stderr and json.loads(r.stdout)["experiments"] == 150


def test_sigkill_while_finishing_edges_then_resume(tmp_path: Path) -> None:
    # killed after the search, while the open edges of its MFSs are being finished: the resumed campaign
    # re-walks to there, finishes them and saves the finished MFSs
    out = tmp_path / "c"
    proc = _paced_campaign(out, "--pace", "0.02")
    assert proc.stderr is not None
    for line in proc.stderr:
        if "finish the edges" in line:
            break
    else:
        raise AssertionError("the campaign never finished any edges")
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    r = run_cli("campaign", "--resume", "--out", str(out), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert "edges finished" in r.stderr
    data = json.loads(r.stdout)
    assert data["experiments"] == 150
    for a in data["anomalies"]:
        mfs = out / "anomalies" / a["anomaly"] / "mfs.json"
        assert (json.loads(mfs.read_text())["text"] if mfs.exists() else "") == a["mfs"]


def test_campaign_bad_inputs(tmp_path: Path) -> None:
    out = tmp_path / "c"
    assert run_cli("campaign", "--budget", "20", "--out", str(out)).returncode == 0
    again = run_cli("campaign", "--budget", "20", "--out", str(out))
    assert again.returncode == 2 and "already holds a campaign" in again.stderr
    blocker = tmp_path / "file"
    blocker.write_text("x")
    bad = run_cli("campaign", "--budget", "20", "--out", str(blocker / "sub"))
    assert bad.returncode == 2 and "cannot create the output folder" in bad.stderr
    nothing = run_cli("campaign", "--resume", "--out", str(tmp_path / "none"))
    assert nothing.returncode == 2 and "holds no campaign" in nothing.stderr
    preset = run_cli("campaign", "--preset", "fastest", "--out", str(tmp_path / "p"))
    assert preset.returncode == 2 and "unknown preset 'fastest'" in preset.stderr
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "junk.toml").write_text("x = 1\n")
    junk = run_cli("campaign", "--budget", "20", "--corpus", str(corpus), "--out", str(tmp_path / "j"))
    assert junk.returncode == 2 and "junk.toml" in junk.stderr
    assert not (tmp_path / "j").exists()  # refused before the campaign folder was made
    (corpus / "junk.toml").unlink()
    empty = run_cli("campaign", "--budget", "20", "--corpus", str(corpus), "--out", str(tmp_path / "e"))
    assert empty.returncode == 0 and "holds no cases" in empty.stderr
    corpus.rmdir()
    gone = run_cli("campaign", "--resume", "--out", str(tmp_path / "e"))
    assert gone.returncode == 2 and "does not exist" in gone.stderr
    for r in (again, bad, nothing, preset, junk, gone):
        assert "Traceback" not in r.stderr
