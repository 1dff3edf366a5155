"""A campaign under a real pseudo-terminal (``script``) draws the live dashboard; piped, it logs plain lines."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, run_cli
from tests.system_components import require

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: both campaigns search the paper's space: in the whole default space the budget of 40 goes to confirming and
#: minimizing its early finds, and the explore phase's progress lines are never logged
PAPER = str(ROOT / "workloads" / "paper.toml")


def test_a_campaign_in_a_terminal_shows_the_live_layout(tmp_path: Path) -> None:
    require("script")
    out = tmp_path / "c"
    command = shlex.join([sys.executable, "-m", "collie", "campaign", "--budget", "40", "--preset", "quick",
                          "--space", PAPER, "--pace", "0.01", "--out", str(out), "--format", "json"])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "130", "LINES": "60", "TERM": "xterm-256color"}
    r = subprocess.run(["script", "-q", "-e", "-c", command, "/dev/null"], capture_output=True, text=True, env=env,
                       timeout=300, stdin=subprocess.DEVNULL, check=False)
    screen = ANSI.sub("", r.stdout)
    assert r.returncode == 0, screen[-3000:]
    assert "╭─ collie campaign on sim (quick)" in screen
    for section in ("40/40 experiments", "ETA", "phase", "temperature", "driven counters", "last verdicts", "hosts"):
        assert section in screen, section
    assert "\x1b[" in r.stdout  # it was drawn as a terminal is: with cursor movements and colour
    assert (out / "trials.jsonl").is_file()


def test_piped_the_same_campaign_logs_plain_lines(tmp_path: Path) -> None:
    r = run_cli("campaign", "--budget", "40", "--preset", "quick", "--space", PAPER, "--out", str(tmp_path / "c"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("== calibrate: ceilings per direction kind")
    assert "╭" not in r.stderr and "\x1b[" not in r.stderr and "   40 experiments" in r.stderr
    quiet = run_cli("campaign", "--budget", "40", "--preset", "quick", "--space", PAPER, "--out", str(tmp_path / "q"),
                    "--quiet")
    assert quiet.returncode == 0 and "== calibrate" not in quiet.stderr and "== done" in quiet.stderr


def test_replay_and_minimize_log_each_run_when_piped() -> None:
    case = ROOT / "workloads" / "corpus" / "f03-read-mtu1k"
    r = run_cli("replay", str(case), "--runs", "2", "--duration", "1")
    assert r.returncode == 1, r.stderr
    assert "== replay: 2 runs of 1 s" in r.stderr
    assert "   trial 1 (replay): anomalous pause@receiver" in r.stderr and "   trial 2 (replay):" in r.stderr
    quiet = run_cli("replay", str(case), "--runs", "2", "--duration", "1", "--quiet")
    assert quiet.returncode == 1 and "(replay)" not in quiet.stderr and "reproduces" in quiet.stderr
    m = run_cli("minimize", str(ROOT / "workloads" / "examples" / "ud-send-batch64.toml"), "--format", "json")
    assert m.returncode == 0, m.stderr
    probes = [line for line in m.stderr.splitlines() if "(minimize):" in line]
    assert len(probes) == json.loads(m.stdout)["experiments"] + 1  # the first run, then every probe
