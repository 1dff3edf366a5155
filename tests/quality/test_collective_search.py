"""Campaigns over collective patterns (``workloads/collective.toml``) on simulated fleets: on the fault-free
``fleet8-cx6`` nothing is found; on ``fleet8-cx6-faults`` (h2's port at half speed, h6's PCIe link at half its
bandwidth) every anomaly found is a faulty host's, each minimal case keeps the fewest hosts that show it (host
roles r0 .. r2 for h2, r0 .. r6 for h6; a pairwise rounds up to an even number), its MFS says so and names every
pattern that kept it, ``collie replay`` reproduces it, and the report gives each its collective's figures and its
case in two lines; on ``fleet8-cx6-fabric`` an incast's pause is attributed to the switch port into its root,
spreads to a victim beside it, and its minimal case is an incast of three hosts; an incast of a traffic class PFC
does not protect is dropped and resent instead, and its minimal case says the class."""

from __future__ import annotations

import json
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
        # the simulator's ground truth (never read by the search): the case runs on a faulty host, and keeps the
        # fewest hosts that hold it (pairwise pairs r2 with r3, r6 with r7: an even number of ranks)
        faulty = [int(t.split(":")[1][1:]) for t in truth.run(case.workload, 1.0).truth if t.startswith("fault:")]
        assert faulty, case.anomaly_id
        odd = pattern.kind.value == "pairwise" and pattern.ranks_per_host % 2
        fewest = {i + 1 + (i + 1) % 2 * odd for i in faulty}
        if pattern.victim is not None:  # a victim sets its two hosts apart: three hosts leave nothing to compare
            fewest = {max(n, 4) for n in fewest}
        # a permutation of fewer hosts is another derangement, not this one less its last hosts: only its lower
        # bound holds
        held = point["hosts"] >= min(fewest) if pattern.kind.value == "permutation" else point["hosts"] in fewest
        assert held and pattern.hosts == tuple(f"r{i}" for i in range(point["hosts"])), case.anomaly_id
        described = case.mfs.describe()
        assert f"hosts >= {point['hosts']}" in described and "pattern" in described, (case.anomaly_id, described)
        assert case.mfs.matches(case.workload)
        assert SPACE.build(point).key() == case.workload.key()
    assert any(c.workload.pattern is not None and c.mfs is not None and c.mfs.describe().startswith("pattern in {")
               for c in minimized)  # a slow host slows every collective it takes part in: one MFS names several
    replay = subprocess.run([sys.executable, "-m", "collie", "replay", str(folders[0])], capture_output=True,
                            text=True, check=False)
    assert replay.returncode == 1, (folders[0].name, replay.stdout, replay.stderr)  # exit 1: it reproduces
    report = subprocess.run([sys.executable, "-m", "collie", "report", str(tmp_path / "c"), "--format", "md"],
                            capture_output=True, text=True, check=True).stdout
    assert report.count("**Collective:** busbw ") == len(cases)
    assert "per rank over r0, r1, r2 (3 hosts, 1 rank each)" in report and "- each connection: RC " in report


@pytest.mark.parametrize("seed", [1, 3])
def test_an_incast_pause_on_a_fabric_is_attributed_to_its_root_port_and_minimized_to_three_hosts(
        tmp_path: Path, seed: int) -> None:
    cases = [read_case_folder(f) for f in _campaign(tmp_path / "c", "sim:fleet8-cx6-fabric", seed)]
    truth = SimTarget("fleet8-cx6-fabric", seed=seed)
    attributed = 0
    for case in cases:
        assert case.evidence is not None
        for s in case.evidence.verdict.symptoms:
            if s.end == "fabric" and s.link.startswith("switch->r"):
                # the port the oracle names is one the simulator congested (its ground truth, never read by it)
                host = f"h{s.host[1:]}"
                assert any(t.startswith("fabric:pause:leaf") and t.endswith(f"->{host}")
                           for t in truth.run(case.workload, 1.0).truth), (case.anomaly_id, s)
                attributed += 1
    assert attributed >= 2
    incasts = [c for c in cases if c.workload.pattern is not None and c.workload.pattern.kind.value == "incast"
               and c.signature.startswith("pause@fabric")]
    assert incasts, [c.signature for c in cases]
    for case in incasts:  # two senders into r0: the fewest hosts that congest a port, no victim needed
        assert case.workload.pattern is not None and case.workload.pattern.hosts == ("r0", "r1", "r2")
        assert case.workload.pattern.victim is None and case.mfs is not None
        assert "pattern == incast" in case.mfs.describe() and "hosts >= 3" in case.mfs.describe()
        (s,) = [s for s in case.evidence.verdict.symptoms if s.end == "fabric"]  # type: ignore[union-attr]
        assert s.link == "switch->r0"
    # the pause spread to a victim beside a pattern, held with the paused senders (isolation@victim): trials of the
    # campaign show both (the minimal case drops the victim: the pause does not need it)
    journal = [json.loads(line) for line in (tmp_path / "c" / "trials.jsonl").read_text().splitlines()]
    signatures = [(t.get("verdict") or {}).get("signature", "") for t in journal]
    assert any("pause@fabric" in sig and "isolation@victim" in sig for sig in signatures)
    # PFC protects priority 3 only: an incast of traffic class 0 (priority 0) is dropped at the congested port and
    # resent, which the minimal case states (the class is necessary: the hosts' own, 106, pauses instead)
    lossy = [c for c in cases if c.mfs is not None and "tclass == 0" in c.mfs.describe()]
    assert lossy, [(c.signature, c.mfs and c.mfs.describe()) for c in cases]
    for case in lossy:
        assert "retransmission@" in case.signature and "pause" not in case.signature and case.confirmed
        assert {f.tclass for f in case.workload.flows} == {0}
        assert case.workload.pattern is not None and case.workload.pattern.hosts == ("r0", "r1", "r2")
        assert any(t.startswith("fabric:drop:leaf") for t in truth.run(case.workload, 1.0).truth)


def test_two_ports_that_share_a_slot_are_found_and_minimized_to_two_hosts_of_two_ranks_on_both_ports(
        tmp_path: Path) -> None:
    """``fleet8-cx6-2port``: each host's two ports share one PCIe slot, so ranks spread over both ports cannot
    both run at line rate; the minimal case is two hosts of two ranks, one on each port, and the MFS says it needs
    both ports (``nics >= 2``). The port at half speed hides under the shared slot whenever both ports run (the
    fleet check finds it rail by rail)."""
    cases = [read_case_folder(f) for f in _campaign(tmp_path / "c", "sim:fleet8-cx6-2port", 1)]
    truth = SimTarget("fleet8-cx6-2port", seed=1)
    shared = [c for c in cases if "base:shared_pcie" in truth.run(c.workload, 1.0).truth]
    assert shared and all(c.signature.startswith("low_throughput@receiver") for c in shared)
    for case in shared:
        assert case.evidence is not None and case.mfs is not None and case.confirmed
        point = case.evidence.point
        assert (point["hosts"], point["ranks_per_host"], point["nics"]) == (2, 2, 2), case.anomaly_id
        assert "nics >= 2" in case.mfs.describe() and "ranks_per_host >= 2" in case.mfs.describe()
        assert {s.host for s in case.evidence.verdict.symptoms} <= {"r0", "r0/1", "r1", "r1/1"}
        assert {e.host for f in case.workload.flows for e in (f.client, f.server)} == {"r0", "r0/1", "r1", "r1/1"}
