"""The search finds an isolation anomaly of the simulator's base model, an aggressor's MR churn slowing a victim,
and minimizes it to the aggressor's cause. No quirk is planted: churned MR translations evict the data path's
from the NIC's cache and every packet of the host pays the misses (``base:churn``), which binds a victim at the
packet rate while a wire-bound aggressor keeps its rate."""

from __future__ import annotations

from pathlib import Path

import pytest

from collie.campaign import Campaign
from collie.model.space import load_space
from collie.preset import load_preset
from collie.storage.campaign import CampaignConfig, CampaignStore
from collie.targets.sim import SimTarget

SPACE = """
name = "isolation-churn"
description = "64 KiB RC WRITE aggressors with MR churn beside a victim"

[[dimension]]
name = "qps"
kind = "int"
min = 1
max = 256
scale = "log2"
simplest = 1

[[dimension]]
name = "mrs"
kind = "int"
min = 1
max = 65536
scale = "log2"
simplest = 1

[[dimension]]
name = "mr_size"
kind = "int"
min = 65536
max = 67108864
scale = "log2"
simplest = 65536

[[dimension]]
name = "mr_churn"
kind = "choice"
values = [0, 10, 100, 1000, 10000]
ordered = true
simplest = 0

[[dimension]]
name = "victim"
kind = "choice"
values = ["none", "latency", "bandwidth"]
simplest = "none"

[victims.latency]
opcode = "SEND"
sizes = [64]
sq_depth = 1
rq_depth = 1
mr_size = 4096

[victims.bandwidth]
sizes = [65536]
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_an_aggressors_mr_churn_is_found_as_an_isolation_anomaly_of_its_victim(tmp_path: Path, seed: int) -> None:
    (tmp_path / "space.toml").write_text(SPACE)
    space = load_space(tmp_path / "space.toml")
    store = CampaignStore.create(tmp_path / "c", CampaignConfig("sim:cx6-200g-amd", seed, 150, "collie", "anneal"))
    summary = Campaign(targets=[SimTarget("cx6-200g-amd", seed=seed)], space=space, preset=load_preset("collie"),
                       store=store, seed=seed, budget=150).run()
    isolation = [a for a in summary.anomalies if a.confirmed and a.mfs is not None
                 and a.mfs.signature.split("+")[0] == "isolation@victim"]
    assert isolation, [(a.anomaly_id, a.mfs) for a in summary.anomalies]
    for a in isolation:
        churn = [c for c in a.mfs.conditions if c.feature == "mr_churn"]
        assert churn and churn[0].op == ">=" and int(churn[0].value) >= 1000
        assert any(c.feature in ("mr_size", "mrs_host") for c in a.mfs.conditions)  # the aggressor's footprint
        assert a.point["victim"] == "latency" and a.point["mr_churn"] >= 1000
        assert any(c.feature == "victim" and c.op == "==" and c.value == "latency" for c in a.mfs.conditions)
