"""The machines behind a report's roles: named by role on a local target, by inventory host on a remote one, and
whether the numbers are simulated."""

from __future__ import annotations

from collie.report.machines import machines_of
from collie.report.perftest import Device
from collie.targets.base import TargetInfo


def _info(kind: str, details: dict[str, str]) -> TargetInfo:
    return TargetInfo(name=f"{kind}:x", kind=kind, nic_model="NIC", firmware="1.0", driver="mlx5", kernel="6.1",
                      counter_dialect="mlx5", line_rate_bps=1e11, msg_rate_pps=0.0, hosts=("a", "b"),
                      details=details)


REMOTE = {"a.host": "node-a", "a.address": "lab@10.0.0.1:22", "a.target": "verbs:mlx5_0:1:3", "a.gid": "fe80::a",
          "b.host": "node-b", "b.address": "root@fd00::2:2222", "b.target": "verbs:mlx5_1:2:5"}


def test_a_local_simulator_is_simulated_and_names_hosts_by_role() -> None:
    m = machines_of(_info("sim", {"profile": "cx6-200g"}), "sim")
    assert m.simulated and not m.remote and m.profile == "cx6-200g"
    assert m.label("b", "receiver") == "host b (receiver)" and m.label("a") == "host a"
    assert "simulator (profile cx6-200g), run on this machine" in m.simulated_sentence()
    assert m.devices() == {"a": Device(), "b": Device()}


def test_a_local_verbs_target_keeps_naming_hosts_by_role_and_gives_perftest_its_device() -> None:
    m = machines_of(_info("verbs", {}), "verbs:rxe0:1:1")
    assert not m.simulated and m.simulated_sentence() == ""
    assert m.label("b", "receiver") == "host b (receiver)"
    assert m.devices()["a"] == m.devices()["b"] == Device("rxe0", 1, 1)


def test_a_remote_campaign_names_each_role_by_its_inventory_host_device_and_address() -> None:
    m = machines_of(_info("remote", REMOTE), "remote:lab.toml")
    assert m.remote and not m.simulated
    assert m.label("b", "receiver") == "node-b (mlx5_1:2, receiver)" and m.label("a") == "node-a (mlx5_0:1)"
    assert m.of("a").name == "node-a" and m.of("a").gid == "fe80::a" and m.of("a").target == "verbs:mlx5_0:1:3"
    assert m.devices() == {"a": Device("mlx5_0", 1, 3, "10.0.0.1"), "b": Device("mlx5_1", 2, 5, "fd00::2")}
    assert m.holds("a.gid") and m.holds("b.address") and not m.holds("a.nic_model") and not m.holds("gid")


def test_a_remote_campaign_on_simulated_hosts_says_so_and_names_no_device() -> None:
    details = {"a.host": "n1", "a.address": "u@h1:22", "a.target": "sim:cx6-200g", "a.profile": "cx6-200g",
               "b.host": "n2", "b.address": "u@h2:22", "b.target": "sim:cx6-200g", "b.profile": "cx6-200g",
               "simulated": "yes"}
    m = machines_of(_info("remote", details), "remote:lab.toml")
    assert m.simulated and m.remote and m.profile == "cx6-200g"
    assert m.label("a", "sender") == "n1 (sender)"
    assert "on every host of the inventory" in m.simulated_sentence()


def test_without_a_fingerprint_the_spec_decides() -> None:
    assert machines_of(None, "sim:cx6-200g").simulated
    assert not machines_of(None, "remote:lab.toml").remote
    assert machines_of(None, "verbs:mlx5_0").devices()["b"] == Device("mlx5_0")
