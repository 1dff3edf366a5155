"""N-host workloads through real OpenSSH servers on 127.0.0.1 (tests/sshd_fixture.py): four sim hosts of the
built-in faulty fleet (``sim:fleet8-cx6-faults``, whose h2 has half its port speed) run a ring all-reduce exactly
as the local simulator does, a campaign over collective patterns finds what the local simulator finds, trial for
trial, and ``collie fleet check --target remote:`` names h2 with its evidence; no agent is left behind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tests.integration.remote.test_remote_campaign_sshd import anomalies, journal, no_agent_left
from tests.sshd_fixture import SshdFarm, own_farm, ssh_home

__all__ = ["ssh_home"]  # fixtures

FLEET = "sim:fleet8-cx6-faults"
RING = """name = "ring all-reduce over 4 hosts"

[pattern]
kind = "ring_allreduce"
hosts = ["h0", "h1", "h2", "h3"]
size = "64MiB"

[pattern.flow]
opcode = "WRITE"
sizes = ["1MiB"]
qps = 2
"""


@pytest.fixture
def farm4(tmp_path: Path) -> Iterator[SshdFarm]:
    with own_farm(tmp_path / "sshd", 4) as farm:
        yield farm
    no_agent_left(tmp_path / "sshd")


def test_a_ring_over_four_remote_sim_hosts_is_the_local_simulators(farm4: SshdFarm, ssh_home: Path,
                                                                    tmp_path: Path) -> None:
    inventory = farm4.inventory(tmp_path / "hosts.toml", target=FLEET)
    ring = tmp_path / "ring.toml"
    ring.write_text(RING, encoding="utf-8")
    runs = {spec: run_cli("run", "--target", spec, "--workload", str(ring), "--duration", "1", "--seed", "3",
                          "--format", "json") for spec in (f"remote:{inventory}", FLEET)}
    for r in runs.values():
        assert r.returncode == 0, r.stderr
    remote, local = (json.loads(r.stdout) for r in runs.values())
    assert remote["collective"] == local["collective"]
    assert remote["flows"] == local["flows"] and remote["hosts"] == local["hosts"]
    assert remote["verdict"]["signature"] == local["verdict"]["signature"]
    links = {link["name"]: link["gbs"] for link in remote["collective"]["links"]}
    slow = [name for name, gbs in links.items() if gbs < 0.8 * max(links.values())]
    assert slow and all("h2" in name.split("->") for name in slow)
    assert "truth" not in remote and "fault:" not in json.dumps(remote)  # ground truth stays in the simulator
    no_agent_left(tmp_path / "sshd")


def test_fleet_check_over_four_remote_sim_hosts_names_the_slow_one(farm4: SshdFarm, ssh_home: Path,
                                                                   tmp_path: Path) -> None:
    inventory = farm4.inventory(tmp_path / "hosts.toml", target=FLEET)
    html = tmp_path / "fleet.html"
    r = run_cli("fleet", "check", "--target", f"remote:{inventory}", "--format", "json", "--html", str(html))
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert [s["host"] for s in data["suspects"]] == ["h2"] and data["exit_code"] == 1
    assert data["target"] == f"remote:{inventory}" and data["all_pairs"] == 6
    assert all("h2" in e for e in data["suspects"][0]["evidence"])
    assert 'data-host="h2"' in html.read_text(encoding="utf-8")
    no_agent_left(tmp_path / "sshd")


def test_fleet_check_over_a_two_host_profile_says_what_it_needs(farm4: SshdFarm, ssh_home: Path,
                                                                tmp_path: Path) -> None:
    inventory = farm4.inventory(tmp_path / "hosts.toml", target="sim:cx6-200g")
    r = run_cli("fleet", "check", "--target", f"remote:{inventory}")
    assert r.returncode == 3, r.stderr
    assert "host 'h2' is host 3 of" in r.stderr and "simulates 2 hosts" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_pattern_campaign_on_four_remote_sim_hosts_finds_what_the_local_simulator_finds(
        farm4: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    inventory = farm4.inventory(tmp_path / "hosts.toml", target=FLEET)
    space = tmp_path / "collective4.toml"  # the collective space on at most the inventory's four hosts
    space.write_text((ROOT / "workloads" / "collective.toml").read_text(encoding="utf-8")
                     .replace("min = 2\nmax = 8\n", "min = 2\nmax = 4\n"), encoding="utf-8")
    runs = {spec: run_cli("campaign", "--target", spec, "--space", str(space), "--seed", "1", "--budget", "100",
                          "--out", str(tmp_path / name), "--no-live", timeout=900)
            for name, spec in (("remote", f"remote:{inventory}"), ("local", FLEET))}
    for r in runs.values():
        assert r.returncode == 0, r.stderr
    found = anomalies(tmp_path / "remote")
    assert found and found == anomalies(tmp_path / "local")
    assert journal(tmp_path / "remote") == journal(tmp_path / "local")
    assert any("hosts >= 3" in str(mfs) for _, mfs in found.values())
    no_agent_left(tmp_path / "sshd")


def test_ranks_on_both_ports_of_four_remote_dual_port_sim_hosts_are_the_local_simulators(
        farm4: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    """Four hosts running ``sim:fleet8-cx6-2port`` (two ports sharing a slot): a ring of two ranks per host, one on
    each port, names each port by its address, as the local simulator does; a fleet check goes rail by rail."""
    dual = "sim:fleet8-cx6-2port"
    inventory = farm4.inventory(tmp_path / "hosts.toml", target=dual)
    ring = tmp_path / "ring.toml"
    ring.write_text(RING.replace('size = "64MiB"', 'size = "64MiB"\nranks_per_host = 2\nnics = 2'),
                    encoding="utf-8")
    runs = {spec: run_cli("run", "--target", spec, "--workload", str(ring), "--duration", "1", "--seed", "3",
                          "--format", "json") for spec in (f"remote:{inventory}", dual)}
    for r in runs.values():
        assert r.returncode in (0, 1), r.stderr  # 1: the shared slot holds both ports below their ceiling
    remote, local = (json.loads(r.stdout) for r in runs.values())
    assert remote["collective"] == local["collective"] and remote["flows"] == local["flows"]
    assert [h["host"] for h in remote["hosts"]] == ["h0", "h0/1", "h1", "h1/1", "h2", "h2/1", "h3", "h3/1"]
    assert remote["hosts"] == local["hosts"] and remote["verdict"]["signature"] == local["verdict"]["signature"]
    check = run_cli("fleet", "check", "--target", f"remote:{inventory}", "--format", "json")
    assert check.returncode == 0, check.stderr
    data = json.loads(check.stdout)
    assert data["nics_per_host"] == 2 and data["experiments"] == 2 and len(data["hosts"]) == 8
    one_port = farm4.inventory(tmp_path / "one.toml", target=FLEET)
    refused = run_cli("run", "--target", f"remote:{one_port}", "--workload", str(ring), "--duration", "1")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "h0/1 is NIC 1 of host h0, and this target's hosts have 1 NIC each" in refused.stderr
