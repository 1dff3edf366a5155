"""The simulator's switch fabric: an incast congests a leaf's port and PFC pauses the senders, a paused link holds
its other flows with the congested ones (head-of-line blocking), a NIC that cannot drain pauses its own link,
ECMP collisions congest uplinks, a fabric without PFC drops instead, and nothing changes without a [fabric]."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from collie.errors import InputError
from collie.model.collective import collective
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind
from collie.model.workload import Workload
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.fabric import spread
from collie.targets.sim.profile import PROFILE_DIR, Fabric, Fault, FaultKind, host_names, parse_profile

FABRIC = load_profile("fleet8-cx6-fabric")


def target(*faults: Fault, pfc: bool = True, spines: int = 2, uplink_gbps: float = 400, hosts: int = 8,
           per_leaf: int = 4) -> SimTarget:
    fabric = Fabric(hosts_per_leaf=per_leaf, spines=spines, uplink_gbps=uplink_gbps, pfc=pfc, xoff_kib=256)
    return SimTarget(replace(FABRIC, hosts=host_names(hosts), fabric=fabric, faults=faults), seed=4)


def flows(*pairs: tuple[str, str], qps: int = 1) -> Workload:
    return Workload(flows=tuple(Flow(Endpoint(a), Endpoint(b), qps=qps) for a, b in pairs))


def gbps(run: RunResult) -> dict[str, float]:
    return {f"{f.client}->{f.server}": f.bps / 1e9 for f in run.flows}


def paused(run: RunResult, way: str = "rx") -> dict[str, float]:
    """Per host, the share of the interval it was paused (rx: it received pause; tx: it sent it)."""
    return {h.host: h.counters.get(f"{way}_prio3_pause_duration", 0.0) / (run.duration_s * 1e6) for h in run.hosts}


def test_an_incast_congests_the_leaf_port_into_its_receiver_and_pauses_the_senders() -> None:
    run = target().run(flows(("h1", "h0"), ("h2", "h0")), 1.0)
    rates = gbps(run)
    assert rates["h1->h0"] == pytest.approx(rates["h2->h0"], rel=0.03)
    assert sum(rates.values()) == pytest.approx(183, rel=0.03)  # the port into h0, at line rate less headers
    rx, tx = paused(run), paused(run, "tx")
    assert rx["h1"] == pytest.approx(0.5, abs=0.03) and rx["h2"] == pytest.approx(0.5, abs=0.03)
    assert rx["h0"] == 0 and max(tx.values()) < 1e-3  # no host sent it: the switch did
    assert run.truth == ("fabric:pause:leaf0->h0",)
    lone = target().run(flows(("h1", "h0")), 1.0)
    assert lone.truth == () and max(paused(lone).values()) < 1e-3  # connection setup's blip only


def test_a_paused_link_holds_its_other_flows_with_the_congested_ones() -> None:
    """Three senders into h0; h1 also sends to h4, whose port is free: without PFC h1 -> h4 gets what h1's link
    has left (two thirds of it), with PFC it is held to the incast's third (head-of-line blocking)."""
    w = flows(("h1", "h0"), ("h2", "h0"), ("h3", "h0"), ("h1", "h4"))
    lossless, lossy = target().run(w, 1.0), target(pfc=False).run(w, 1.0)
    assert gbps(lossless)["h1->h4"] == pytest.approx(gbps(lossless)["h1->h0"], rel=0.03)
    assert gbps(lossless)["h1->h4"] == pytest.approx(61, rel=0.05)
    assert gbps(lossy)["h1->h4"] == pytest.approx(122, rel=0.05)
    rx = paused(lossless)
    assert rx["h1"] == pytest.approx(1 / 3, abs=0.03) and rx["h2"] == pytest.approx(2 / 3, abs=0.03)
    assert rx["h4"] < 1e-3 and rx["h0"] < 1e-3
    assert lossless.truth == ("fabric:pause:leaf0->h0",)


def test_without_pfc_a_congested_port_drops_and_rc_resends() -> None:
    w = flows(("h1", "h0"), ("h2", "h0"), ("h3", "h0"))
    lossless, lossy = target().run(w, 1.0), target(pfc=False).run(w, 1.0)
    assert lossy.truth == ("fabric:drop:leaf0->h0",) and max(paused(lossy).values()) < 1e-3
    assert sum(gbps(lossy).values()) < 0.2 * sum(gbps(lossless).values())  # go-back-N on 2/3 loss

    def retransmitted(run: RunResult) -> float:
        return sum(h.counters.get("packet_seq_err", 0.0) + h.counters.get("out_of_sequence", 0.0) for h in run.hosts)

    assert retransmitted(lossy) > 0 and retransmitted(lossless) == 0


def test_a_nic_that_cannot_drain_pauses_its_own_link_and_the_pause_spreads() -> None:
    run = target(Fault("h0", FaultKind.PCIE, 0.25)).run(flows(("h1", "h0"), ("h1", "h2")), 1.0)
    assert run.truth == ("fault:h0:pcie", "fabric:pause:h0:nic")
    assert paused(run, "tx")["h0"] > 0.5  # its NIC paused the leaf's port into it ...
    assert paused(run)["h1"] > 0.3  # ... which paused the sender's link, and h1 -> h2 with it
    assert gbps(run)["h1->h2"] == pytest.approx(gbps(run)["h1->h0"], rel=0.05)


def test_flows_that_ecmp_puts_on_one_spine_congest_its_uplink() -> None:
    """Two flows from leaf 0 to leaf 1 with one QP each, on 200 Gb/s uplinks: when ECMP hashes both onto one
    spine they share its uplink and both are paused; on two spines neither is."""
    pairs = [(f"h{a}", f"h{b}") for a in range(4) for b in range(4, 8)]
    by_spine = {p: spread(*p, 1, 2)[0][0] for p in pairs}
    same = next((p, q) for p in pairs for q in pairs if p[0] != q[0] and p[1] != q[1] and by_spine[p] == by_spine[q])
    apart = next((p, q) for p in pairs for q in pairs if p[0] != q[0] and p[1] != q[1] and by_spine[p] != by_spine[q])
    t = target(uplink_gbps=200)
    collided, spread_out = t.run(flows(*same), 1.0), t.run(flows(*apart), 1.0)
    assert collided.truth == (f"fabric:pause:leaf0->spine{by_spine[same[0]]}",)
    assert max(gbps(collided).values()) < 100 and min(paused(collided)[a] for a, _ in same) > 0.4
    assert spread_out.truth == () and min(gbps(spread_out).values()) > 175


def test_ecmp_spreads_a_flows_qps_over_the_spines_deterministically() -> None:
    shares = spread("h0", "h5", 16, 4)
    assert shares == spread("h0", "h5", 16, 4) and sum(s for _, s in shares) == pytest.approx(1.0)
    assert {s for s, _ in shares} <= set(range(4)) and len(shares) > 1
    assert spread("h5", "h0", 1, 4) != () and spread("h0", "h5", 1, 1) == ((0, 1.0),)


def test_the_fabric_adds_limits_and_no_capacity() -> None:
    """Through a fabric of thin uplinks, no flow of random workloads gets more than it gets alone without
    switches, and the flows into a host never get more than its port."""
    rng = random.Random(7)
    switched = target(uplink_gbps=100)
    ideal = SimTarget(replace(FABRIC, fabric=None), seed=4)
    hosts = host_names(8)
    alone = max(f.bps for f in ideal.run(flows(("h0", "h4")), 1.0).flows)
    for _ in range(40):
        pairs = [tuple(rng.sample(hosts, 2)) for _ in range(rng.randint(1, 6))]
        run = switched.run(flows(*pairs, qps=rng.choice((1, 2, 8))), 1.0)  # type: ignore[arg-type]
        assert max(f.bps for f in run.flows) <= alone * 1.05, pairs
        for h in run.hosts:
            assert h.rx_bps <= alone * 1.05, (pairs, h)


def test_a_fleet_of_1024_hosts_runs_a_permutation_through_a_fabric() -> None:
    fleet = target(hosts=1024, per_leaf=32, spines=16)
    p = Pattern(PatternKind.PERMUTATION, host_names(1024), 64 << 20)
    run = fleet.run(Workload.of_pattern(p), 1.0)
    rates = sorted(f.bps / 1e9 for f in run.flows)
    assert len(rates) == 1024 and rates[-1] < 190
    assert rates[0] < 0.5 * rates[-1]  # ECMP collisions on one QP per connection
    assert any(t.startswith("fabric:pause:leaf") for t in run.truth)


def test_a_fabric_table_is_checked_field_by_field() -> None:
    text = (PROFILE_DIR / "fleet8-cx6-fabric.toml").read_text()
    assert parse_profile(text, "f.toml").fabric == Fabric(4, 2, 400.0, True, 256.0, lossless=frozenset({3}))
    one_switch = parse_profile(text.replace("hosts_per_leaf = 4\n", "").replace("spines = 2\n", ""), "f.toml")
    assert one_switch.fabric is not None and one_switch.fabric.hosts_per_leaf == 8
    for line, bad, says in (("spines = 2", "spines = 0", "f.toml:.*fabric.spines: must be greater than 0"),
                            ("uplink_gbps = 400", "uplink_gbps = -1", "fabric.uplink_gbps: -1.0 must not be negative"),
                            ("pfc = true", "pfc = 1", "fabric.pfc: expected true or false"),
                            ("xoff_kib = 256", "buffer = 3", "buffer"),
                            ("lossless = [3", "lossless = [8", "fabric.lossless\\[0\\]: 8 is not a priority 0 to 7"),
                            ("lossless = [3", "lossless = [3, 3", "fabric.lossless\\[1\\]: priority 3 is listed twice"),
                            ("lossless = [3", "lossless = [-1", "fabric.lossless\\[0\\]: .*priority 0 to 7"),
                            ("lossless = [3]", "lossless = 3", "fabric.lossless: expected a list of priorities"),
                            ("pfc = true", "pfc = false", "fabric.lossless: lossless priorities need pfc = true")):
        with pytest.raises(InputError, match=says):
            parse_profile(text.replace(line, bad), "f.toml")


def test_a_victim_beside_an_incast_is_held_with_it_and_is_no_part_of_the_collective() -> None:
    victim = Flow(Endpoint("h1"), Endpoint("h3"), sizes=(65536,), victim="bulk")
    p = Pattern(PatternKind.INCAST, host_names(8)[:4], 64 << 20, victim=victim)
    run = target().run(Workload.of_pattern(p), 1.0)
    c = collective(p, run.flows)
    assert len(c.links) == 3 and len(run.flows) == 4
    assert run.flows[-1].bps == pytest.approx(c.links[0].gbs * 8e9, rel=0.05)  # held to h1 -> h0's rate
    assert run.truth == ("fabric:pause:leaf0->h0",)


def test_a_slow_link_between_a_leaf_and_a_spine_slows_the_flows_ecmp_puts_on_it() -> None:
    (spine, _), *_ = spread("h1", "h5", 1, 2)
    slow = replace(FABRIC.fabric, slow_links=((0, spine, 0.25),))  # type: ignore[type-var]
    t = SimTarget(replace(FABRIC, fabric=slow), seed=4)
    run = t.run(flows(("h1", "h5")), 1.0)
    # the leaf's port into the slow uplink is congested: it pauses h1
    assert run.truth == (f"fault:leaf0-spine{spine}:link_speed", f"fabric:pause:leaf0->spine{spine}")
    assert gbps(run)["h1->h5"] < 95 and paused(run)["h1"] > 0.45  # a quarter of 400 Gb/s, half a host's link
    within = t.run(flows(("h1", "h2")), 1.0)
    assert within.truth == () and gbps(within)["h1->h2"] > 175


def test_slow_links_are_checked_field_by_field() -> None:
    text = (PROFILE_DIR / "fleet8-cx6-fabric.toml").read_text()
    good = parse_profile(text + "\n[[fabric.slow_links]]\nleaf = 1\nspine = 0\nfactor = 0.5\n", "f.toml")
    assert good.fabric is not None and good.fabric.slow_links == ((1, 0, 0.5),)
    for bad, says in (("leaf = 2\nspine = 0\nfactor = 0.5", "leaf 2 does not exist; the fabric has leaves 0 to 1"),
                      ("leaf = 0\nspine = 5\nfactor = 0.5", "spine 5 does not exist"),
                      ("leaf = 0\nspine = 0\nfactor = 0", r"must be in \(0, 1\]"),
                      ("leaf = 0\nspine = 0", "factor")):
        with pytest.raises(InputError, match=says):
            parse_profile(text + f"\n[[fabric.slow_links]]\n{bad}\n", "f.toml")
