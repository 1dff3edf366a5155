"""``collie run`` shows the oracle's verdict: anomalous or not, the symptoms and their magnitude, the counters that
moved, in table and JSON, on the simulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, run_cli

F03 = ROOT / "workloads" / "corpus" / "f03-read-mtu1k" / "case.toml"


def test_a_known_anomaly_is_judged_anomalous_with_its_evidence() -> None:
    r = run_cli("run", "--target", "sim:cx6-200g", "--workload", str(F03), "--duration", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    verdict = data["verdict"]
    assert verdict["anomalous"] and verdict["signature"].startswith("pause@receiver")
    assert verdict["summary"].startswith("ANOMALOUS: pause@receiver")
    pause = verdict["symptom_rows"][0]
    assert pause["symptom"] == "pause" and pause["counter"].endswith("pause_duration")
    assert pause["source"] == "ethtool" and pause["strength"] > 1.0 and "threshold" in pause["magnitude"]
    receiver = pause["host"]
    moved = {(m["host"], m["counter"]): m for m in verdict["moved_counters"]}
    assert (receiver, pause["counter"]) in moved and moved[(receiver, pause["counter"])]["delta"] > 0
    assert all(m["delta"] != 0 and m["source"] for m in verdict["moved_counters"])
    # one one-way workload: six calibration runs (bandwidth, rate and READ round trip of that one direction kind,
    # the two one-QP runs and the atomic rate), not twelve
    assert data["calibration"]["runs"] == 6 and set(data["calibration"]["ceilings"]["wire_bps"]) == {"oneway"}
    # the fields of the run itself are still there
    assert data["key"] and data["flows"] and data["hosts"]


def test_the_table_says_the_verdict_and_the_counters() -> None:
    r = run_cli("run", "--target", "sim:cx6-200g", "--workload", str(F03), "--duration", "1")
    assert r.returncode == 0, r.stderr
    assert "verdict: ANOMALOUS: pause@receiver" in r.stdout
    for title in ("symptoms", "throughput against the calibrated ceilings", "counters that moved"):
        assert title in r.stdout
    assert "tx_prio3_pause_duration" in r.stdout and "of the calibrated ceiling" in r.stdout


def test_a_normal_workload_is_not_anomalous() -> None:
    r = run_cli("run", "--workload", str(EXAMPLES / "rc-write-64k.toml"), "--duration", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    verdict = json.loads(r.stdout)["verdict"]
    assert not verdict["anomalous"] and verdict["signature"] == "" and verdict["symptom_rows"] == []
    assert verdict["summary"] == "not anomalous" and verdict["metrics"]["throughput"] > 0.8
    table = run_cli("run", "--workload", str(EXAMPLES / "rc-write-64k.toml"), "--duration", "1")
    assert "verdict: not anomalous" in table.stdout and "symptoms" not in table.stdout


def test_the_same_case_on_a_profile_without_its_anomaly_is_clean() -> None:
    r = run_cli("run", "--target", "sim:ideal", "--workload", str(F03), "--duration", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert not json.loads(r.stdout)["verdict"]["anomalous"]


def test_no_verdict_skips_calibration() -> None:
    r = run_cli("run", "--workload", str(F03), "--duration", "1", "--no-verdict", "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert "verdict" not in data and "calibration" not in data


def _one_flow(folder: Path, name: str, flows: list[str]) -> Path:
    """A workload file of ``flows`` (each the body of one ``[[flows]]`` table)."""
    path = folder / f"{name}.toml"
    path.write_text("".join(f"[[flows]]\n{body}\n" for body in flows))
    return path


A_TO_B = '\nclient = {host = "a"}\nserver = {host = "b"}'
READ_64 = 'opcode = "READ"\nsizes = [64]\nmr_size = 4096' + A_TO_B
FETCH_ADD = 'opcode = "ATOMIC_FA"\nsizes = [8]\nqps = 4\nmr_size = 4096' + A_TO_B
# the same with a planted quirk of sim:cx6-200g: a READ of 16 KiB at MTU 1K (f03), an atomic incast into b (f13)
READ_MTU1K = 'opcode = "READ"\nsizes = [16384]\nmtu = 1024\nmr_size = 16384' + A_TO_B
FETCH_ADD_LOCAL = FETCH_ADD.replace('client = {host = "a"}', 'client = {host = "b"}')


@pytest.mark.parametrize(("name", "flows", "anomalous"), [
    ("read-64", [READ_64], False), ("fetch-add", [FETCH_ADD], False),
    ("read-mtu1k", [READ_MTU1K], True), ("fetch-add-incast", [FETCH_ADD, FETCH_ADD_LOCAL], True)])
def test_reads_and_atomics_at_their_own_limits_are_not_anomalous_and_quirks_still_are(
        tmp_path: Path, name: str, flows: list[str], anomalous: bool) -> None:
    path = _one_flow(tmp_path, name, flows)
    r = run_cli("run", "--target", "sim:cx6-200g", "--workload", str(path), "--duration", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    verdict = json.loads(r.stdout)["verdict"]
    assert verdict["anomalous"] == anomalous, verdict["signature"]
    if not anomalous:  # a 64 B READ on one QP and a fetch-add on four: held by their QPs' own rate (one WR per
        # post), as on the NIC
        (into,) = verdict["evidence"]["throughput"].values()
        assert into["bound"].startswith(("QP rate: 1 QP x", "QP rate: 4 QPs x"))
