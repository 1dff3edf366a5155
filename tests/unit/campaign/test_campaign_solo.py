"""Isolation experiments in a campaign: each distinct victim is run alone once, as a SOLO trial of the journal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from collie.campaign import Campaign
from collie.model.space import load_space
from collie.preset import load_preset
from collie.report import build_report, render
from collie.report.model import counts
from collie.storage.campaign import CampaignStore
from collie.storage.records import CampaignConfig
from collie.targets.sim import SimTarget

SPACE = """
name = "isolation"
[[dimension]]
name = "qps"
kind = "int"
min = 1
max = 64
[[dimension]]
name = "mr_churn"
kind = "choice"
values = [0, 10000]
[[dimension]]
name = "victim"
kind = "choice"
values = ["none", "latency", "bandwidth"]
[victims.latency]
opcode = "SEND"
sizes = [64]
sq_depth = 1
rq_depth = 1
mr_size = 4096
[victims.bandwidth]
sizes = [65536]
"""


def _campaign(tmp: Path, budget: int, resume: bool = False) -> Campaign:
    space = tmp.parent / "space.toml"
    space.write_text(SPACE)
    config = CampaignConfig(target="test", seed=1, budget=budget, preset="collie", strategy="anneal")
    store = CampaignStore.open(tmp) if resume else CampaignStore.create(tmp, config)
    return Campaign(targets=[SimTarget("cx6-200g-amd", seed=1)], space=load_space(space),
                    preset=load_preset("collie"), store=store, seed=1, budget=budget, resume=resume)


def _finished(tmp: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (tmp / "trials.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "time"} for r in rows if r["status"] != "RUNNING"]


def test_each_victim_is_run_alone_once_just_before_the_first_trial_that_needs_it(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path / "c", 60)
    summary = campaign.run()
    space = load_space(tmp_path / "space.toml")
    rows = _finished(tmp_path / "c")
    solos = [r for r in rows if r["phase"] == "solo"]
    assert summary.experiments == 60 and len(solos) == 2  # latency and bandwidth, once each
    assert len({r["key"] for r in solos}) == 2 and all(r["point"] == {} and "verdict" not in r for r in solos)
    for solo in solos:
        after = next(r for r in rows if r["trial"] == solo["trial"] + 1)
        w = space.build(after["point"])
        assert w.isolation and w.solo().key() == solo["key"]
        assert not any(r["trial"] < solo["trial"] and r["point"] and space.build(r["point"]).isolation
                       and space.build(r["point"]).solo().key() == solo["key"] for r in rows)
    # the oracle that judged the isolation trials holds both solos
    assert campaign.shared.oracle is not None and set(campaign.shared.oracle.solos) == {r["key"] for r in solos}
    # a report counts them as trials, not as budgeted experiments, and draws them like calibration
    report = build_report(tmp_path / "c")
    assert counts(report)["experiments"] == 60 and counts(report)["trials"] == len(rows)
    assert 'solo' in render(report, "html")


def test_a_resumed_campaign_rewalks_the_solo_trials_exactly(tmp_path: Path) -> None:
    _campaign(tmp_path / "full", 60).run()
    lines = (tmp_path / "full" / "trials.jsonl").read_text().splitlines()
    first_solo = next(i for i, line in enumerate(lines) if json.loads(line)["phase"] == "solo")
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "full", cut)
    (cut / "trials.jsonl").write_text("\n".join(lines[:first_solo + 2]) + "\n")
    shutil.rmtree(cut / "anomalies", ignore_errors=True)
    _campaign(cut, 60, resume=True).run()
    assert _finished(cut) == _finished(tmp_path / "full")
