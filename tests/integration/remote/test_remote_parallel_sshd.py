"""``collie campaign --parallel 2`` on four real OpenSSH servers on 127.0.0.1 (tests/sshd_fixture.py) standing for
four sim hosts: two chains, each on its own pair of hosts, one anomaly set, one journal that a resume after the
controller's SIGKILL continues for both chains to the uninterrupted campaign's result, and no agent left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from collie.model.features import features
from collie.model.space import load_space
from collie.oracle import leading_symptom
from collie.storage.case import read_case_folder
from tests.conftest import ROOT, ctrl_c_reaches_it
from tests.integration.remote.test_remote_campaign_sshd import (
    PRESET,
    SEED,
    campaign_cli,
    journal,
    no_agent_left,
)
from tests.sshd_fixture import SshdFarm, own_farm, ssh_home

__all__ = ["ssh_home"]  # fixtures

BUDGET = 80


def anomalies(out: Path) -> dict[str, tuple[str, str]]:
    """Anomaly id -> (case.toml, mfs.json or "" when the budget left it unminimized) of a campaign folder."""
    return {case.name: ((case / "case.toml").read_text(),
                        (case / "mfs.json").read_text() if (case / "mfs.json").exists() else "")
            for case in sorted((out / "anomalies").iterdir())}


@pytest.fixture
def farm4(tmp_path: Path) -> Iterator[SshdFarm]:
    """Four sshd servers of this test's own."""
    with own_farm(tmp_path / "sshd", 4) as farm:
        yield farm
    no_agent_left(tmp_path / "sshd")


def _killed_mid_search(inventory: Path, out: Path, sig: int = signal.SIGKILL) -> subprocess.Popen[str]:
    """Start ``collie campaign --parallel 2`` and send it ``sig`` once both chains have journaled search trials;
    returns the process, ended."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "collie", "campaign", "--target", f"remote:{inventory}",
                             "--parallel", "2", "--seed", str(SEED), "--budget", str(BUDGET), "--preset", PRESET,
                             "--out", str(out), "--no-live"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=ctrl_c_reaches_it)
    journal_file = out / "trials.jsonl"
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if journal_file.exists() and journal_file.read_text().count('"chain":1') >= 20:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the campaign ended before it could be killed"
    finally:
        proc.send_signal(sig)
        proc.wait(120)
    return proc


def test_two_chains_on_four_sshd_hosts_share_anomalies_and_resume_after_sigkill(
        farm4: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    inventory = farm4.inventory(tmp_path / "hosts.toml", ["h0", "h1", "h2", "h3"])
    target = f"remote:{inventory}"
    out = tmp_path / "c"
    _killed_mid_search(inventory, out)
    no_agent_left(tmp_path / "sshd")  # every agent saw its channel end and exited
    rows = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    cut_finished = sum(r["status"] != "RUNNING" for r in rows)
    resumed = campaign_cli(target, out, "--resume", budget=BUDGET)
    assert resumed.returncode == 0, resumed.stderr
    before = [len(s.commands()) for s in farm4.servers]
    whole = campaign_cli(target, tmp_path / "whole", "--parallel", "2", budget=BUDGET)
    assert whole.returncode == 0, whole.stderr
    # both groups' agents ran: one agent per host, started through that host's own sshd
    assert [len(s.commands()) - b for s, b in zip(farm4.servers, before, strict=True)] == [1, 1, 1, 1]

    finished = journal(tmp_path / "whole")
    assert [r["trial"] for r in finished] == list(range(1, len(finished) + 1))
    by_chain = Counter(r["chain"] for r in finished if r["phase"] != "calibrate")
    assert set(by_chain) == {0, 1} and min(by_chain.values()) >= BUDGET // 4, by_chain
    summary = json.loads(whole.stdout)
    assert summary["experiments"] == BUDGET
    found = anomalies(tmp_path / "whole")
    assert found and set(found) == {a["anomaly"] for a in summary["anomalies"]}
    mfss = [mfs for _, mfs in found.values() if mfs]
    assert mfss and len(set(mfss)) == len(mfss)  # each anomaly found once: no two folders of one MFS
    space = load_space(None)
    records = [read_case_folder(tmp_path / "whole" / "anomalies" / name) for name in found]
    for i, later in enumerate(records):  # no folder's find lies inside an earlier one's MFS of its symptom
        f = features(space.build(later.original.point))
        assert not [e.anomaly_id for e in records[:i] if e.mfs is not None and e.mfs.holds(f)
                    and leading_symptom(e.signature) == leading_symptom(later.signature)], later.anomaly_id
    assert "(chain 0)" in whole.stderr and "(chain 1)" in whole.stderr

    # the resume continued both chains from where the kill left them, to the uninterrupted result
    assert 0 < cut_finished < len(finished)
    assert journal(out) == finished
    assert anomalies(out) == found
    no_agent_left(tmp_path / "sshd")


def test_ctrl_c_stops_both_chains_with_exit_130_and_the_campaign_resumes(farm4: SshdFarm, ssh_home: Path,
                                                                         tmp_path: Path) -> None:
    inventory = farm4.inventory(tmp_path / "hosts.toml", ["h0", "h1", "h2", "h3"])
    out = tmp_path / "c"
    proc = _killed_mid_search(inventory, out, signal.SIGINT)
    assert proc.returncode == 130
    assert proc.stderr is not None and proc.stderr.read().strip().splitlines()[-1] == (
        f"collie: interrupted; the journal is safe. Continue with: collie campaign --resume --out {out}")
    no_agent_left(tmp_path / "sshd")
    resumed = campaign_cli(f"remote:{inventory}", out, "--resume", budget=BUDGET)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["experiments"] == BUDGET
    no_agent_left(tmp_path / "sshd")
