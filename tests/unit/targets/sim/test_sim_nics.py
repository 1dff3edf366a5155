"""Hosts with several NICs in the simulator (``[host] nics``): each NIC a device of its own (its PCIe link,
switch port and counters) named by its address, faults on one NIC or on every NIC of a host, the PCIe bandwidth
a host's NICs share (``shared_pcie_gbps``: a dual-port NIC in one slot), and the built-in fleet8-cx6-2port."""

from __future__ import annotations

from dataclasses import replace

import pytest

from collie.errors import InputError
from collie.model.collective import collective
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind, rank_hosts
from collie.model.workload import Workload
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.profile import PROFILE_DIR, Fabric, parse_profile

PORT2 = load_profile("fleet8-cx6-2port")
FLOW = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20, qps=2)
LINE_GBS = 200 / 8


def ring(hosts: int, rph: int, nics: int) -> Pattern:
    return Pattern(PatternKind.RING_ALLREDUCE, rank_hosts(hosts), 64 << 20, ranks_per_host=rph, flow=FLOW, nics=nics)


def _text(extra: str = "", host: str = "nics = 2\n") -> str:
    text = (PROFILE_DIR / "fleet8-cx6.toml").read_text(encoding="utf-8").replace("[host]\n", f"[host]\n{host}")
    return text + extra


def test_a_host_of_two_nics_is_two_devices_named_by_their_addresses() -> None:
    profile = parse_profile(_text(), "p.toml")
    assert profile.nodes[:4] == ("h0", "h0/1", "h1", "h1/1") and len(profile.nodes) == 16
    target = SimTarget(profile, seed=1)
    p = ring(4, 2, 2)
    run = target.run(Workload.of_pattern(p), 1.0)
    assert [h.host for h in run.hosts] == ["r0", "r0/1", "r1", "r1/1", "r2", "r2/1", "r3", "r3/1"]
    assert all(h.tx_bps > 0 and h.rx_bps > 0 and h.counters for h in run.hosts)
    assert {f.client for f in run.flows} == {h.host for h in run.hosts} and run.truth == ()
    assert target.describe().details["nics"] == "2" and target.describe().nics_per_host == 2


def test_ranks_spread_over_two_nics_move_twice_what_they_move_over_one() -> None:
    target = SimTarget(parse_profile(_text(), "p.toml"), seed=1)
    one, two = (collective(p, target.run(Workload.of_pattern(p), 1.0).flows) for p in (ring(4, 2, 1), ring(4, 2, 2)))
    # over one NIC each host's NIC carries a wire link and a loopback link each way; over two, one link per NIC
    assert two.busbw_gbs > 1.6 * one.busbw_gbs
    assert min(link.gbs for link in two.links) > 0.85 * LINE_GBS


def test_nics_sharing_their_pcie_slot_get_what_it_carries() -> None:
    target = SimTarget("fleet8-cx6-2port", seed=1)
    alone = target.run(Workload.of_pattern(ring(8, 1, 1)), 1.0)  # one port of each host
    both = target.run(Workload.of_pattern(ring(8, 2, 2)), 1.0)  # both ports of each host
    assert "base:shared_pcie" not in alone.truth and "base:shared_pcie" in both.truth
    shared_gbs = PORT2.host.shared_pcie_gbps / 8
    assert min(f.bps for f in alone.flows) / 8e9 > 0.85 * LINE_GBS
    # each port gets about half the slot (less its TLP headers), far below its line rate
    assert all(0.35 * shared_gbs < f.bps / 8e9 < 0.5 * shared_gbs for f in both.flows if f.client != "r5/1")


def test_a_fault_on_one_nic_slows_that_nic_only() -> None:
    target = SimTarget("fleet8-cx6-2port", seed=1)
    rail1 = Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, tuple(f"h{i}/1" for i in range(8)), 64 << 20,
                                        flow=FLOW))
    run = target.run(rail1, 1.0)
    assert run.truth == ("fault:h5/1:port_speed",)
    slow = {link.name for link in collective(rail1.pattern, run.flows).links  # type: ignore[arg-type]
            if link.gbs < 0.6 * LINE_GBS}
    assert slow == {"h4/1->h5/1", "h5/1->h6/1"}
    rail0 = Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, tuple(f"h{i}" for i in range(8)), 64 << 20,
                                        flow=FLOW))
    assert target.run(rail0, 1.0).truth == ()


def test_a_fault_without_a_nic_is_on_every_nic_of_its_host() -> None:
    profile = parse_profile(_text('[[faults]]\nhost = "h2"\nkind = "pcie"\nfactor = 0.5\n'), "p.toml")
    assert [f.id for f in profile.faults] == ["fault:h2:pcie", "fault:h2/1:pcie"]


@pytest.mark.parametrize(("host", "extra", "message"), [
    ("nics = 17\n", "", r"^p\.toml:\d+: host\.nics: 17 NICs per host is out of range; allowed is 1 to 16$"),
    ("shared_pcie_gbps = 100.0\n", "", r"shared_pcie_gbps.*needs nics of 2 or more"),
    ("nics = 2\n", '[[faults]]\nhost = "h2"\nnic = 2\nkind = "pcie"\nfactor = 0.5\n',
     r"^p\.toml: faults: \[0\]: nic: NIC 2 does not exist; each host has NICs 0 to 1 \(\[host\] nics\)$"),
    ("nics = 2\n", '[[faults]]\nhost = "h2"\nnic = 1\nkind = "pcie"\nfactor = 0.5\n'
                   '[[faults]]\nhost = "h2"\nkind = "pcie"\nfactor = 0.5\n', r"h2/1 already has a pcie fault"),
])
def test_a_bad_nic_field_is_one_sentence(host: str, extra: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        parse_profile(_text(extra, host=host), "p.toml")
    assert "\n" not in str(err.value)


def test_a_nic_a_host_does_not_have_is_unsupported_in_one_sentence() -> None:
    with pytest.raises(Unsupported, match=r"^r1/2 is NIC 2 of host r1, and this target's hosts have 2 NICs each"):
        SimTarget("fleet8-cx6-2port").run(Workload(flows=(replace(FLOW, client=Endpoint("r0"),
                                                                  server=Endpoint("r1/2")),)), 1.0)
    with pytest.raises(Unsupported, match=r"^r0/1 is NIC 1 of host r0, and this target's hosts have 1 NIC each"):
        SimTarget("fleet8-cx6").run(Workload.of_pattern(ring(4, 2, 2)), 1.0)


def test_a_hosts_nics_have_their_ports_on_its_leaf() -> None:
    profile = replace(PORT2, faults=(), fabric=Fabric(hosts_per_leaf=4, spines=2, uplink_gbps=400.0, pfc=True,
                                                      xoff_kib=256.0))
    incast = Workload.of_pattern(Pattern(PatternKind.INCAST, ("h0", "h1", "h1/1", "h2"), 64 << 20, flow=FLOW))
    run = SimTarget(profile, seed=1).run(incast, 1.0)
    assert "fabric:pause:leaf0->h0" in run.truth
