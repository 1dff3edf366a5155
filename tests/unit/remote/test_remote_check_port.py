"""``hosts check`` of verbs hosts: the port state, GID and MTU through a real agent (in-process, over its JSON
lines) reading a copied sysfs tree (tests/unit/collectors/test_port.py builds it from the mlx5_0 dump)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from collie import __version__
from collie.cli.hosts_cmd import _row
from collie.collectors.port import read_port_status
from collie.collectors.snapshot import Snapshot
from collie.remote.agent import Agent, _answer
from collie.remote.check import CheckStatus, check_host
from collie.remote.errors import Failure
from collie.remote.inventory import Host, parse_host_target
from collie.remote.launch import ChannelTimeout
from collie.targets.base import TargetInfo
from tests.unit.collectors.conftest import mlx5_root
from tests.unit.collectors.test_port import V4_GID, roce

__all__ = ["mlx5_root"]  # the fixture: a copy of the mlx5_0 sysfs dump

INFO = TargetInfo(name="verbs:mlx5_0:1:3", kind="verbs", nic_model="ConnectX-6 Dx", firmware="22.36.1010",
                  driver="mlx5", kernel="6.1", counter_dialect="mlx5", line_rate_bps=100e9, msg_rate_pps=0.0,
                  hosts=("a", "b"))


class InProcessChannel:
    """An agent behind a channel, answering in this process with the agent's own line handling."""

    description = "in-process agent"

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.lines: list[bytes] = []

    def send(self, data: bytes, timeout: float) -> None:
        self.lines.append(_answer(self.agent, data))

    def read_line(self, timeout: float) -> bytes:
        if not self.lines:
            raise ChannelTimeout()
        return self.lines.pop(0)

    def close(self) -> None:
        self.agent.close()


class FakeTarget:
    opened = 0

    def __enter__(self) -> FakeTarget:
        FakeTarget.opened += 1
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def describe(self) -> TargetInfo:
        return INFO


class InProcessLauncher:
    """What check_host needs of a launcher: a verified connection's key, and agents."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.key = SimpleNamespace(fingerprint="ssh-ed25519 SHA256:x", state=SimpleNamespace(value="known"),
                                   file=Path("k"))

    def connection(self, host: Host) -> Any:
        return SimpleNamespace(key=self.key)

    def start(self, host: Host, timeout: float | None = None) -> InProcessChannel:
        def collector(device: str, port: int, netdev: str | None) -> Snapshot:
            return Snapshot(1.0, {"port_xmit_data": 7}, "host", f"{device}/{port}", sources={"port_xmit_data": "port"})

        def inspector(device: str, port: int, gid: int, netdev: str | None) -> Any:
            return read_port_status(self.root, device, port, gid, netdev)

        return InProcessChannel(Agent(open_target=lambda spec, seed: FakeTarget(),  # type: ignore[arg-type,return-value]
                                      collector=collector, inspector=inspector))


def host(target: str = "verbs:mlx5_0:1:3") -> Host:
    return Host(name="lab1", address="192.0.2.1", port=22, user="u", target=parse_host_target(target, "t"))


def test_an_active_rocev2_port_is_usable_and_shown(mlx5_root: Path) -> None:
    check = check_host(host(), InProcessLauncher(roce(mlx5_root)), 5)  # type: ignore[arg-type]
    assert check.status is CheckStatus.OK, check.problem
    assert (check.port_state, check.phys_state, check.link_layer) == ("ACTIVE", "LinkUp", "Ethernet")
    assert (check.gid_index, check.gid, check.gid_type) == (3, V4_GID, "RoCE v2")
    assert (check.netdev, check.netdev_mtu, check.active_mtu) == ("ens1f0np0", 9000, 4096)
    assert check.nic_model == "ConnectX-6 Dx" and check.counters == 1 and check.agent_version == __version__
    row = _row(check)
    assert (row["port"], row["gid"], row["mtu"]) == ("ACTIVE (LinkUp)", "[3] ::ffff:192.0.2.10 RoCE v2",
                                                     "4096 (ens1f0np0 9000)")
    assert check.to_dict()["gid_type"] == "RoCE v2"


def test_a_down_port_makes_the_host_unusable_with_one_sentence_and_its_target_is_not_opened(
        mlx5_root: Path) -> None:
    FakeTarget.opened = 0
    launcher = InProcessLauncher(roce(mlx5_root, state="1: DOWN", phys="3: Disabled"))
    check = check_host(host(), launcher, 5)  # type: ignore[arg-type]
    assert check.status is CheckStatus.FAILED and check.failure is Failure.PORT
    assert check.problem == ("mlx5_0 port 1 is DOWN (physical state Disabled), not ACTIVE; bring its link up "
                             "(ip link set ens1f0np0 up, check the cable and the switch port)")
    assert check.port_state == "DOWN" and check.counters == 1  # the counters are still read and shown
    assert FakeTarget.opened == 0 and check.nic_model == ""
    assert _row(check)["port"] == "DOWN (Disabled)"


def test_a_gid_index_without_a_gid_makes_the_host_unusable(mlx5_root: Path) -> None:
    check = check_host(host("verbs:mlx5_0:1:4"), InProcessLauncher(roce(mlx5_root)), 5)  # type: ignore[arg-type]
    assert check.failure is Failure.PORT and check.gid == "0000:0000:0000:0000:0000:0000:0000:0000"
    assert check.problem == ("GID index 4 of mlx5_0 port 1 holds no GID; give ens1f0np0 an IP address or choose "
                             "another index (verbs:mlx5_0:1:GID)")
    assert _row(check)["gid"] == "[4] none"


def test_a_roce_v1_gid_is_a_note_in_the_problem_column_and_the_host_stays_usable(mlx5_root: Path) -> None:
    check = check_host(host("verbs:mlx5_0:1:2"), InProcessLauncher(roce(mlx5_root)), 5)  # type: ignore[arg-type]
    assert check.status is CheckStatus.OK and check.gid_type == "IB/RoCE v1"
    assert any("not RoCE v2" in n for n in check.notes) and "not RoCE v2" in str(_row(check)["problem"])


def test_a_sim_host_has_no_port_cells(tmp_path: Path) -> None:
    check = check_host(host("sim:cx6-200g"), InProcessLauncher(tmp_path), 5)  # type: ignore[arg-type]
    assert check.port_state == "" and check.gid_index is None
    assert (_row(check)["port"], _row(check)["gid"], _row(check)["mtu"]) == (None, None, None)


def test_the_agent_inspects_its_verbs_port_with_the_inventory_netdev_and_a_sim_host_has_none(
        mlx5_root: Path) -> None:
    from collie.remote.protocol import Hello, Inspect, Inspected

    calls: list[tuple[str, int, int, str | None]] = []

    def inspector(device: str, port: int, gid: int, netdev: str | None) -> Any:
        calls.append((device, port, gid, netdev))
        return read_port_status(roce(mlx5_root), device, port, gid, netdev)

    agent = Agent(inspector=inspector)
    agent.handle(Hello(host="h", target="verbs:mlx5_0:1:3", controller_version=__version__, netdev="ens1f0np0"))
    reply = agent.handle(Inspect())
    assert isinstance(reply, Inspected) and reply.port is not None
    assert (reply.port.state, reply.port.gid_type, reply.port.active_mtu) == ("ACTIVE", "RoCE v2", 4096)
    assert calls == [("mlx5_0", 1, 3, "ens1f0np0")]
    sim = Agent(inspector=inspector)
    sim.handle(Hello(host="h", target="sim:cx6-200g", controller_version=__version__))
    assert sim.handle(Inspect()) == Inspected(None) and len(calls) == 1
