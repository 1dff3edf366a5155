"""``collie run`` of a collective pattern on a simulated fleet: the collective's row as nccl-tests prints it,
the ranks and connections, the straggler verdict naming a slow host, in table and JSON; bad pattern files are one
sentence and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from collie.targets.sim.profile import PROFILE_DIR
from tests.conftest import ROOT, run_cli

RING = ROOT / "workloads" / "patterns" / "ring-allreduce-8.toml"


def test_a_ring_on_a_fault_free_fleet_prints_its_collective() -> None:
    r = run_cli("run", "--target", "sim:fleet8-cx6", "--workload", str(RING), "--duration", "1")
    assert r.returncode == 0, r.stderr
    for title in ("the collective", "ranks", "connections", "hosts", "verdict: not anomalous"):
        assert title in r.stdout
    assert "ring_allreduce" in r.stdout and "64 MiB" in r.stdout and "h7->h0" in r.stdout


def test_a_slow_host_is_a_straggler_in_json(tmp_path: Path) -> None:
    profile = tmp_path / "fleet.toml"
    text = (PROFILE_DIR / "fleet8-cx6.toml").read_text(encoding="utf-8").replace('name = "fleet8-cx6"',
                                                                                 'name = "my-fleet"')
    profile.write_text(text + '\n[[faults]]\nhost = "h6"\nkind = "port_speed"\nfactor = 0.5\n', encoding="utf-8")
    r = run_cli("run", "--target", f"sim:{profile}", "--workload", str(RING), "--duration", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    figures = data["collective"]
    assert 0 < figures["busbw_gbs"] < 0.6 * max(link["gbs"] for link in figures["links"])
    assert len(figures["ranks"]) == 8 and figures["time_s"] > 0
    verdict = data["verdict"]
    # h6 also receives below the ceiling calibrated on the healthy h0 and h1: low throughput there too
    assert verdict["anomalous"] and "straggler@host" in verdict["signature"].split("+")
    (row,) = [row for row in verdict["symptom_rows"] if row["symptom"] == "straggler"]
    assert row["host"] == "h6" and row["end"] == "host"
    assert "h5->h6, h6->h7" in row["magnitude"] or "h6->h7, h5->h6" in row["magnitude"]
    assert "truth" not in data  # the fault is ground truth: never shown


def test_a_bad_pattern_file_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[pattern]\nkind = "pairwise"\nhosts = ["h0", "h1", "h2"]\nsize = "1MiB"\n', encoding="utf-8")
    r = run_cli("run", "--target", "sim:fleet8-cx6", "--workload", str(bad), "--duration", "1")
    assert r.returncode == 2
    assert "pairwise pairs ranks 2i and 2i+1, so it needs an even number of ranks, got 3" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_pattern_on_hosts_the_profile_lacks_says_which() -> None:
    r = run_cli("run", "--target", "sim:cx6-200g", "--workload", str(RING), "--duration", "1")
    assert r.returncode == 2
    assert "host 'h0' is not in profile cx6-200g" in r.stderr and "Traceback" not in r.stderr


def test_a_pattern_space_on_a_target_with_fewer_hosts_says_so_once(tmp_path: Path) -> None:
    r = run_cli("campaign", "--space", str(ROOT / "workloads" / "collective.toml"), "--budget", "15", "--out",
                str(tmp_path / "c"), "--no-live")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("warning: the space 'collective' searches patterns over up to 8 hosts and sim:cx6-200g "
                          "has 2; points over more are pruned") == 1
    assert "Traceback" not in r.stderr


def test_a_pattern_space_on_hosts_of_one_nic_says_so_once(tmp_path: Path) -> None:
    r = run_cli("campaign", "--target", "sim:fleet8-cx6", "--space", str(ROOT / "workloads" / "collective.toml"),
                "--budget", "5", "--out", str(tmp_path / "c"), "--no-live")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("warning: the space 'collective' spreads a host's ranks over up to 2 NICs and the hosts "
                          "of sim:fleet8-cx6 have 1; points over more are pruned") == 1
    quiet = run_cli("campaign", "--target", "sim:fleet8-cx6-2port", "--space",
                    str(ROOT / "workloads" / "collective.toml"), "--budget", "5", "--out", str(tmp_path / "d"),
                    "--no-live")
    assert quiet.returncode in (0, 1) and "warning" not in quiet.stderr, quiet.stderr
