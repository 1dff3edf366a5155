"""``collie report --compare OLD NEW``: two campaigns on two simulated targets (the same NIC, two host platforms)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from reporthelpers import make_campaign

from tests.conftest import run_cli


@pytest.fixture(scope="module")
def amd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same campaign on sim:cx6-200g-amd, whose platform adds anomalies of its own."""
    return make_campaign(tmp_path_factory.mktemp("compare") / "amd", 150, 2, "--target", "sim:cx6-200g-amd")


def _compare(old: Path, new: Path, fmt: str) -> str:
    r = run_cli("report", "--compare", str(old), str(new), "--format", fmt)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_campaign_against_itself_has_every_anomaly_still_present(campaign: Path) -> None:
    doc = json.loads(_compare(campaign, campaign, "json"))
    assert doc["schema"] == {"name": "collie-compare", "version": 1}
    ids = sorted(p.name for p in (campaign / "anomalies").iterdir())
    assert [p["old"]["id"] for p in doc["still_present"]] == ids
    assert doc["new_anomalies"] == [] and doc["gone"] == []
    assert doc["throughput"]["median_ratio"] == 1.0
    assert doc["throughput"]["common_workloads"] == len({json.loads(x)["key"] for x in
                                                         (campaign / "trials.jsonl").read_text().splitlines()
                                                         if '"COMPLETE"' in x})


def test_another_platform_shows_new_anomalies_and_its_fingerprint_beside_the_old(campaign: Path, amd: Path,
                                                                                  tmp_path: Path) -> None:
    doc = json.loads(_compare(campaign, amd, "json"))
    fingerprints = {f["field"]: (f["old"], f["new"]) for f in doc["fingerprints"]}
    assert fingerprints["target"] == ("sim", "sim:cx6-200g-amd")
    # (a find the budget cut short has no MFS: null)
    new = {a["mfs"]["text"] for a in doc["new_anomalies"] if a["mfs"] is not None}
    # the AMD profile's platform anomalies (remote NUMA, GPU peer-to-peer) exist only on the new target
    assert any("remote_numa" in m or "gpu" in m for m in new), new
    assert doc["still_present"]  # the NIC's own anomalies are on both
    assert doc["throughput"]["common_workloads"] > 0
    # a folder missing from the new one is reported as gone, with a replay on the new target
    trimmed = tmp_path / "trimmed"
    shutil.copytree(campaign, trimmed)
    first = sorted((trimmed / "anomalies").iterdir())[0]
    shutil.rmtree(first)
    back = json.loads(_compare(campaign, trimmed, "json"))
    assert [a["id"] for a in back["gone"]] == [first.name]
    assert back["gone"][0]["replay_on_new"].endswith(f"{first.name} --target sim")
    md = _compare(campaign, amd, "md")
    assert "## New anomalies" in md and "## Throughput of the same workloads" in md
    html = _compare(campaign, amd, "html")
    assert html.count('class="card new"') == len(doc["new_anomalies"])
    assert html.count('class="card still"') == len(doc["still_present"])
