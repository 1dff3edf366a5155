"""``collie campaign --resume`` through the real CLI: it does what it is told, and it is exact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, run_cli

TARGET = "sim:cx6-200g-amd"


def _rows(folder: Path) -> list[dict[str, Any]]:
    """The journal's rows without timestamps and durations (what may differ between two runs)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("time", "setup_s")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(json.loads(line)) for line in (folder / "trials.jsonl").read_text().splitlines()]


def _folders(folder: Path) -> dict[str, dict[str, str]]:
    return {p.name: {f.name: f.read_text() for f in sorted(p.iterdir()) if f.name != "evidence.json"}
            for p in sorted((folder / "anomalies").iterdir())}


def test_resume_with_a_larger_budget_extends_a_finished_campaign(tmp_path: Path) -> None:
    out = tmp_path / "c"
    first = run_cli("campaign", "--target", TARGET, "--budget", "120", "--out", str(out), "--format", "json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["experiments"] == 120
    walked = _rows(out)
    more = run_cli("campaign", "--resume", "--budget", "200", "--out", str(out), "--format", "json")
    assert more.returncode == 0, more.stderr
    assert json.loads(more.stdout)["experiments"] == 200
    found = len(json.loads(first.stdout)["anomalies"])
    finished = sum(r["status"] != "RUNNING" for r in walked)
    assert more.stderr.startswith(  # it says it resumes before the log re-walks the journaled path
        f"resumed {out}: its journal holds {finished} finished trials (120 of the budget of 200 experiments), "
        f"{found} anomalies already found; those trials are read back, not run again\n== calibrate")
    assert "extended to 200, 80 experiments left" in more.stderr
    rows = _rows(out)
    assert rows[: len(walked)] == walked  # the first 120 were taken from the journal, not run again
    explored = [r for r in rows if r["status"] == "COMPLETE" and r["phase"] in ("explore", "confirm", "minimize")]
    assert len(explored) == 200
    # the extended campaign is a campaign like any other: resuming it again changes nothing
    again = run_cli("campaign", "--resume", "--out", str(out), "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(more.stdout) and _rows(out) == rows


def test_options_that_cannot_change_on_resume_are_refused_not_dropped(tmp_path: Path) -> None:
    out = tmp_path / "c"
    assert run_cli("campaign", "--target", TARGET, "--seed", "3", "--budget", "20", "--out", str(out)).returncode == 0
    journal = (out / "trials.jsonl").read_bytes()
    space = tmp_path / "space.toml"
    space.write_text((ROOT / "workloads" / "default.toml").read_text())
    refused = {
        ("--seed", "4"): "--seed 4 differs from this campaign's seed (3, in",
        ("--target", "sim:p2100g-100g"): f"--target sim:p2100g-100g differs from this campaign's target ({TARGET}",
        ("--preset", "quick"): "--preset quick differs from this campaign's preset (collie",
        ("--strategy", "random"): "--strategy random differs from this campaign's strategy (anneal",
        ("--space", str(space)): f"--space {space} differs from this campaign's space (the default space",
        ("--budget", "10"): "--budget 10 is below this campaign's budget of 20",
    }
    for option, sentence in refused.items():
        r = run_cli("campaign", "--resume", "--out", str(out), *option)
        assert r.returncode == 2, (option, r.stderr)
        assert sentence in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert (out / "trials.jsonl").read_bytes() == journal  # nothing ran
    # the campaign's own values are no change: accepted
    same = run_cli("campaign", "--resume", "--out", str(out), "--seed", "3", "--target", TARGET, "--preset", "collie",
                   "--strategy", "anneal", "--budget", "20", "--format", "json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["experiments"] == 20


def _start(out: Path, budget: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "collie", "campaign", "--target", TARGET, "--seed", "1",
                             "--budget", str(budget), "--out", str(out)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def _kill_when(proc: subprocess.Popen[bytes], journal: Path, lines: int) -> None:
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None and \
            (not journal.exists() or journal.read_bytes().count(b"\n") < lines):
        time.sleep(0.002)
    assert proc.poll() is None, "the campaign ended before the kill point"
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_a_campaign_killed_and_resumed_writes_the_uninterrupted_journal(tmp_path: Path) -> None:
    # killed soon after finds: their confirmations and minimizations re-run workloads run before the kill, so
    # their noise must not depend on what the killed process ran (before, the resumed journals diverged at
    # these points). Each resumed journal must equal the uninterrupted one but for timestamps and durations.
    budget = 100
    full = tmp_path / "full"
    r = run_cli("campaign", "--target", TARGET, "--seed", "1", "--budget", str(budget), "--out", str(full),
                "--format", "json")
    assert r.returncode == 0, r.stderr
    for kill_at in (44, 108):
        cut = tmp_path / f"cut-{kill_at}"
        _kill_when(_start(cut, budget), cut / "trials.jsonl", kill_at)
        resumed = run_cli("campaign", "--resume", "--out", str(cut), "--format", "json")
        assert resumed.returncode == 0, resumed.stderr
        assert _rows(cut) == _rows(full), kill_at
        assert _folders(cut) == _folders(full)
        assert {k: v for k, v in json.loads(resumed.stdout).items() if k != "out"} == \
               {k: v for k, v in json.loads(r.stdout).items() if k != "out"}
