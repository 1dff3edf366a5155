"""A campaign of at least 20 experiments across the two soft-RoCE guests, through their agents (issue #24):
the remote target places role a on guest1 and b on guest2, each agent runs its side with a verbs session on its
own rxe0, and both ends' counters reach the journal and the evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, run_cli

BUDGET = 20


def _hosts_with_traffic(trial: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Host -> rxe counters of one trial's result, for the hosts whose counters moved."""
    hosts = trial.get("result", {}).get("hosts", [])
    return {h["host"]: h["counters"] for h in hosts
            if h.get("counters", {}).get("sent_pkts", 0) > 0 or h.get("counters", {}).get("rcvd_pkts", 0) > 0}


def test_a_campaign_across_the_two_guests_has_counters_from_both_ends(pair_inventory: Path, tmp_path: Path) -> None:
    # collie's method (annealing guided by diagnostic counters, confirm, minimize) with short experiments: TCG
    preset = tmp_path / "pair.toml"
    preset.write_text('name = "pair"\ndescription = "two-guest smoke"\nstrategy = "anneal"\nbudget = 20\n'
                      'duration = 0.5\n[strategy_options]\ndiagnostic = true\nwarmup = 5\n'
                      '[minimize]\nenabled = true\nruns = 1\nrequired = 1\nbisect_steps = 1\n')
    out = tmp_path / "campaign"
    # the paper's dimensions scaled to a 1 GiB emulated guest (workloads/softroce.toml): the whole space holds
    # workloads an emulated rxe runs for minutes or cannot pin
    done = run_cli("campaign", "--target", f"remote:{pair_inventory}", "--preset", str(preset),
                   "--space", str(ROOT / "workloads" / "softroce.toml"), "--budget",
                   str(BUDGET), "--seed", "1", "--out", str(out), "--no-live", "--format", "json", timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    trials = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    finished = {t["trial"]: t for t in trials if t["status"] != "RUNNING"}  # each trial's final line
    assert len(finished) >= BUDGET, f"only {len(finished)} experiments finished"
    complete = [t for t in finished.values() if t["status"] == "COMPLETE"]
    # some experiment sent across the link: counters of both guests moved in the same trial, one end sending
    # and the other receiving (rxe's sent_pkts and rcvd_pkts), each with its own host's name
    across = [moved for moved in map(_hosts_with_traffic, complete) if len(moved) >= 2]
    assert across, "no experiment has counters that moved on both hosts"
    assert any(any(c.get("sent_pkts", 0) > 0 for c in m.values()) and any(c.get("rcvd_pkts", 0) > 0
               for c in m.values()) for m in across)
    # every anomaly found: its verdict's evidence has the counters of every host its workload touches (both ends;
    # one host for a loopback workload, whose flows a run places on one host only)
    for evidence in out.glob("anomalies/*/evidence.json"):
        original = json.loads(evidence.read_text())["original"]
        hosts = original["verdict"]["evidence"]["hosts"]
        touched = {"a"} if original["point"]["direction"] == "loopback" else {"a", "b"}
        assert set(hosts) == touched, (evidence, original["point"]["direction"], list(hosts))
        assert all(h.get("counters") for h in hosts.values()), evidence
