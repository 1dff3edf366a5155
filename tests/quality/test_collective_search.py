"""Campaigns over collective patterns (``workloads/collective.toml``) on simulated fleets: on the fault-free
``fleet8-cx6`` nothing is found; on ``fleet8-cx6-faults`` (h2's port at half speed) every anomaly found is the
slow host's, each minimal case keeps the fewest hosts that show it (host roles r0 .. r2, so h2 is in; a pairwise
needs r3 too), its MFS says so (``hosts >= 3``) and names every pattern that kept it, ``collie replay``
reproduces it, and the report gives each its collective's figures and its case in two lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from collie.model.space import load_space
from collie.storage.case import read_case_folder
from collie.targets.sim import SimTarget
from tests.conftest import ROOT

SPACE_FILE = ROOT / "workloads" / "collective.toml"
SPACE = load_space(SPACE_FILE)
BUDGET = 200


def _campaign(out: Path, target: str, seed: int) -> list[Path]:
    done = subprocess.run([sys.executable, "-m", "collie", "campaign", "--target", target, "--seed", str(seed),
                           "--space", str(SPACE_FILE), "--budget", str(BUDGET), "--out", str(out), "--no-live"],
                          capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stderr  # 1: anomalies found
    found = out / "anomalies"
    return sorted(p for p in found.iterdir() if p.is_dir()) if found.exists() else []


@pytest.mark.parametrize("seed", [1, 2])
def test_a_fault_free_fleet_shows_no_collective_anomaly(tmp_path: Path, seed: int) -> None:
    assert _campaign(tmp_path / "c", "sim:fleet8-cx6", seed) == []


@pytest.mark.parametrize("seed", [1, 3])
def test_the_slow_host_is_found_and_minimized_to_the_fewest_hosts_that_show_it(tmp_path: Path, seed: int) -> None:
    folders = _campaign(tmp_path / "c", "sim:fleet8-cx6-faults", seed)
    cases = [read_case_folder(f) for f in folders]
    minimized = [c for c in cases if c.mfs is not None and c.confirmed]
    assert len(minimized) >= 2
    truth = SimTarget("fleet8-cx6-faults", seed=seed)
    for case in minimized:
        assert case.mfs is not None and case.evidence is not None and case.workload.pattern is not None
        point = case.evidence.point
        pattern = case.workload.pattern
        fewest = 4 if pattern.kind.value == "pairwise" else 3  # pairwise pairs r2 with r3
        assert point["hosts"] == fewest and pattern.hosts == tuple(f"r{i}" for i in range(fewest)), case.anomaly_id
        described = case.mfs.describe()
        assert f"hosts >= {fewest}" in described and "pattern" in described, (case.anomaly_id, described)
        assert case.mfs.matches(case.workload)
        assert SPACE.build(point).key() == case.workload.key()
        # the simulator's ground truth (never read by the search): the case runs on the slow host
        assert "fault:h2:port_speed" in truth.run(case.workload, 1.0).truth, case.anomaly_id
    assert any(c.workload.pattern is not None and c.mfs is not None and c.mfs.describe().startswith("pattern in {")
               for c in minimized)  # a slow host slows every collective it takes part in: one MFS names several
    replay = subprocess.run([sys.executable, "-m", "collie", "replay", str(folders[0])], capture_output=True,
                            text=True, check=False)
    assert replay.returncode == 1, (folders[0].name, replay.stdout, replay.stderr)  # exit 1: it reproduces
    report = subprocess.run([sys.executable, "-m", "collie", "report", str(tmp_path / "c"), "--format", "md"],
                            capture_output=True, text=True, check=True).stdout
    assert report.count("**Collective:** busbw ") == len(cases)
    assert "per rank over r0, r1, r2 (3 hosts, 1 rank each)" in report and "- each connection: RC " in report
