"""The report of a real remote campaign (two sim hosts behind OpenSSH servers on 127.0.0.1,
tests/sshd_fixture.py): it says the results are simulated and names the inventory host and address of each
role."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.conftest import run_cli
from tests.sshd_fixture import SshdFarm, ssh_home, sshd_farm

__all__ = ["ssh_home", "sshd_farm"]  # fixtures


def test_a_remote_campaigns_report_names_its_hosts_and_says_they_are_simulated(sshd_farm: SshdFarm, ssh_home: Path,
                                                                                tmp_path: Path) -> None:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", ["node-a", "node-b", "node-c"])
    out = tmp_path / "campaign"
    r = run_cli("campaign", "--target", f"remote:{inventory}", "--seed", "5", "--budget", "60", "--preset", "quick",
                "--out", str(out), "--no-live", timeout=600)
    assert r.returncode == 0, r.stderr
    report = run_cli("report", str(out), "--format", "json")
    assert report.returncode == 0, report.stderr
    doc = json.loads(report.stdout)
    assert doc["campaign"]["simulated"] is True
    assert {role: m["host"] for role, m in doc["campaign"]["machines"].items()} == {"a": "node-a", "b": "node-b"}
    assert {m["address"] for m in doc["campaign"]["machines"].values()} == {"127.0.0.1"}
    assert doc["anomalies"]
    for a in doc["anomalies"]:
        s = a["symptom"]
        assert a["headline"].endswith(f" on node-{s['host']} ({s['end']})")
        assert {h: ev["name"] for h, ev in a["hosts"].items()} == {h: f"node-{h}" for h in a["hosts"]}
        p = a["perftest"]
        if "client" in p and p["client_host"] != p["server_host"]:  # the client connects to the server's address
            assert shlex.split(p["client"])[-1] == "127.0.0.1"
    md = run_cli("report", str(out), "--format", "md").stdout
    assert "run on every host of the inventory, not from RDMA hardware" in md.splitlines()[2]
    assert "| a | `node-a` | 127.0.0.1 |" in md and "| b | `node-b` | 127.0.0.1 |" in md
