"""The simulator's fleets: a profile of N hosts, faults declared per host that shape the runs touching them
(ground truth names them), patterns over the fleet homogeneous without faults, and two-host workloads played by
a fleet's first two hosts exactly as on a two-host profile."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from collie.errors import InputError
from collie.model.collective import collective
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind
from collie.model.workload import Workload
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.profile import PROFILE_DIR, Fault, FaultKind, host_names, parse_profile

FLOW = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20, qps=2)


def fleet(n: int = 8, *faults: Fault) -> SimTarget:
    return SimTarget(replace(load_profile("fleet8-cx6"), hosts=host_names(n), faults=faults), seed=3)


def ring(hosts: tuple[str, ...]) -> Workload:
    return Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, hosts, 64 << 20, flow=FLOW))


@pytest.mark.parametrize("kind", [PatternKind.RING_ALLREDUCE, PatternKind.ALL_TO_ALL, PatternKind.PERMUTATION])
def test_a_fault_free_fleet_is_homogeneous(kind: PatternKind) -> None:
    target = fleet(16)
    p = Pattern(kind, target.profile.hosts, 64 << 20, flow=FLOW)
    run = target.run(Workload.of_pattern(p), 1.0)
    c = collective(p, run.flows)
    assert run.truth == () and c.spread < 0.03, c.spread  # within the profile's noise (2 %)
    sends = [r.send_gbs for r in c.ranks]
    assert (max(sends) - min(sends)) / statistics.median(sends) < 0.05


def test_a_port_at_half_speed_slows_the_ring_and_the_truth_names_it() -> None:
    healthy, faulty = fleet(8), fleet(8, Fault("h3", FaultKind.PORT_SPEED, 0.5))
    w = ring(healthy.profile.hosts)
    good, bad = (collective(w.pattern, t.run(w, 1.0).flows) for t in (healthy, faulty))  # type: ignore[arg-type]
    assert bad.busbw_gbs == pytest.approx(good.busbw_gbs / 2, rel=0.05)
    slow = {link.name for link in bad.links if link.gbs < 0.8 * bad.median_link_gbs}
    assert slow == {"h2->h3", "h3->h4"}  # the links in and out of h3
    assert faulty.run(w, 1.0).truth == ("fault:h3:port_speed",)
    # a workload that does not touch h3 neither feels nor reports it
    assert faulty.run(ring(("h0", "h1", "h2")), 1.0).truth == ()


def test_a_narrow_pcie_link_slows_what_its_host_moves() -> None:
    w = ring(host_names(4))
    base = collective(w.pattern, fleet(4).run(w, 1.0).flows)  # type: ignore[arg-type]
    narrow = collective(w.pattern, fleet(4, Fault("h1", FaultKind.PCIE, 0.25)).run(w, 1.0).flows)  # type: ignore[arg-type]
    assert narrow.slowest_link.gbs < 0.5 * base.median_link_gbs
    assert narrow.slowest_link.name in ("h0->h1", "h1->h2")


def test_a_two_host_workload_on_a_fleet_is_played_by_its_first_two_hosts() -> None:
    w = Workload(flows=(Flow(Endpoint("a"), Endpoint("b"), sizes=(65536,), qps=4),
                        Flow(Endpoint("b"), Endpoint("a"), opcodes=("SEND",), sizes=(4096,))))
    on_fleet = SimTarget("fleet8-cx6", seed=5).run(w, 1.0)
    two_host = SimTarget(replace(load_profile("fleet8-cx6"), hosts=("a", "b")), seed=5).run(w, 1.0)
    assert on_fleet == two_host  # same figures, the roles named


def profile_text(hosts: str, faults: str) -> str:
    """The built-in fleet's file with another ``hosts`` line and ``faults`` at its end."""
    text = (PROFILE_DIR / "fleet8-cx6.toml").read_text(encoding="utf-8")
    return text.replace("\nhosts = 8\n", f"\nhosts = {hosts}\n") + "\n" + faults + "\n"


def test_a_profile_declares_a_fleet_by_size_and_its_faults() -> None:
    p = parse_profile(profile_text(hosts='12', faults='[[faults]]\nhost = "h07"\nkind = "far_numa"\nfactor = 0.6'),
                      "f.toml")
    assert p.hosts == host_names(12) and p.hosts[7] == "h07"
    assert p.faults == (Fault("h07", FaultKind.FAR_NUMA, 0.6),)


@pytest.mark.parametrize(("hosts", "faults", "says"), [
    ("1", "", "a fleet of 1 hosts is out of range"),
    ("4", '[[faults]]\nhost = "h9"\nkind = "pcie"\nfactor = 0.5', "[0]: host: 'h9' is not a host of this"),
    ("4", '[[faults]]\nhost = "h1"\nkind = "slow"\nfactor = 0.5', "'slow' is not a fault kind"),
    ("4", '[[faults]]\nhost = "h1"\nkind = "pcie"\nfactor = 1.5', "must be in (0, 1], got 1.5"),
    ("4", '[[faults]]\nhost = "h1"\nkind = "pcie"\nfactor = 0.5\n[[faults]]\nhost = "h1"\nkind = "pcie"\n'
          'factor = 0.4', "h1 already has a pcie fault"),
])
def test_a_bad_fleet_or_fault_is_one_sentence(hosts: str, faults: str, says: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_profile(profile_text(hosts, faults), "f.toml")
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_a_lossy_link_slows_its_links_by_go_back_n_and_shows_in_loss_counters() -> None:
    w = ring(host_names(8))
    base = fleet(8).run(w, 1.0)
    lossy = fleet(8, Fault("h3", FaultKind.LOSSY_LINK, 0.99)).run(w, 1.0)  # 1 % of packets lost
    assert lossy.truth == ("fault:h3:lossy_link",)
    rate = {f.flow: f.bps for f in base.flows}
    slowed = {w.flows[f.flow].client.host + "->" + w.flows[f.flow].server.host: f.bps / rate[f.flow]
              for f in lossy.flows}
    # (1 - p) / (1 + 32 p) at p = 1 %: about 0.75 on the links in and out of h3, the others untouched
    assert slowed["h2->h3"] == pytest.approx(0.75, abs=0.03) and slowed["h3->h4"] == pytest.approx(0.75, abs=0.03)
    assert all(v == pytest.approx(1.0, abs=0.03) for k, v in slowed.items() if "h3" not in k)
    counters = lossy.host("h3").counters
    assert counters["out_of_sequence"] > 0 and counters["local_ack_timeout_err"] > 0
    assert base.host("h3").counters["out_of_sequence"] == 0
    assert lossy.host("h0").counters["out_of_sequence"] == 0  # a host off the lossy link loses nothing


@pytest.mark.parametrize(("transport", "kept"), [("RC", 0.9 - 0.0671), ("UC", 0.9)])
def test_a_flapping_link_is_down_part_of_the_time_and_its_port_counts_each_outage(transport: str,
                                                                                   kept: float) -> None:
    """h3's link up 90 % of the time, in outages of 0.1 s (one a second): its links move 0.9 of their rate, an
    RC flow less again by its retransmission timeout after each outage (67 ms); h3 counts its outages."""
    w = Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, host_names(8), 64 << 20,
                                    flow=replace(FLOW, transport=transport)))
    base = fleet(8).run(w, 10.0)
    flapping = fleet(8, Fault("h3", FaultKind.FLAPPING_LINK, 0.9)).run(w, 10.0)
    assert flapping.truth == ("fault:h3:flapping_link",)
    rate = {f.flow: f.bps for f in base.flows}
    slowed = {f.client + "->" + f.server: f.bps / rate[f.flow] for f in flapping.flows}
    assert slowed["h2->h3"] == pytest.approx(kept, abs=0.03) and slowed["h3->h4"] == pytest.approx(kept, abs=0.03)
    assert all(v == pytest.approx(1.0, abs=0.03) for k, v in slowed.items() if "h3" not in k)
    counters = flapping.host("h3").counters
    assert counters["link_downed"] == counters["link_down_events_phy"] == 10
    assert counters["out_of_sequence"] > 0 and flapping.host("h2").counters["packet_seq_err"] > 0
    assert base.host("h3").counters["link_downed"] == 0 and flapping.host("h0").counters["link_downed"] == 0


def test_a_mis_set_mtu_drops_the_packets_larger_than_it_and_hangs_the_ring_only_then() -> None:
    """h3's port carries at most 1024 B of payload: a ring at MTU 4096 with 1 MiB WRITEs loses every packet in
    and out of h3 (RC resends them in vain, the ring never ends); at MTU 1024, or with messages of 512 B, nothing
    is lost and the truth does not name the fault."""
    faulty = fleet(8, Fault("h3", FaultKind.MTU, 0.25))
    hung = faulty.run(ring(host_names(8)), 1.0)
    assert hung.truth == ("fault:h3:mtu",)
    rates = {f.client + "->" + f.server: f.bps for f in hung.flows}
    assert rates["h2->h3"] < 1e3 and rates["h3->h4"] < 1e3 and rates["h0->h1"] > 1e11
    assert hung.host("h3").counters["out_of_sequence"] > 0 and hung.host("h2").counters["local_ack_timeout_err"] > 0
    for shape in ({"mtu": 1024}, {"sizes": (512,)}):
        fine = faulty.run(Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, host_names(8), 64 << 20,
                                                      flow=replace(FLOW, **shape))), 1.0)  # type: ignore[arg-type]
        assert fine.truth == () and min(f.bps for f in fine.flows) > 1e10, shape
        assert fine.host("h3").counters["out_of_sequence"] == 0


def test_a_little_loss_hides_in_the_rates_but_not_in_the_oracles_loss_verdict() -> None:
    from simhelpers import oracle_for

    w = ring(host_names(8))
    target = fleet(8, Fault("h3", FaultKind.LOSSY_LINK, 0.999))  # 0.1 %
    oracle = oracle_for(fleet(8))
    verdict = oracle.judge(target.run(w, 1.0), w)
    assert not any(s.kind == "straggler" for s in verdict.symptoms)  # within the margin
    assert {(s.kind, s.host) for s in verdict.symptoms if s.kind in ("loss", "retransmission")} >= {("loss", "h3")}


def test_many_flows_wait_for_each_other_as_the_pairwise_sum_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """An all-to-all of 16 ranks (240 flows) sums its flows' waits per group of alike flows: the same figures as
    the sum over every pair of flows, up to rounding."""
    import collie.targets.sim.model as model

    target = SimTarget(replace(load_profile("fleet8-cx6"), hosts=host_names(8)), seed=3)
    w = Workload.of_pattern(Pattern(PatternKind.ALL_TO_ALL, target.profile.hosts, 64 << 20, 2,
                                    flow=Flow(Endpoint("a"), Endpoint("b"), sizes=(4096,), qps=2)))
    grouped = target.run(w, 1.0, repetition=0)
    monkeypatch.setattr(model, "_EXACT_WAITS", 1 << 20)
    exact = target.run(w, 1.0, repetition=0)
    assert len(w.flows) == 240
    for g, e in zip(grouped.flows, exact.flows, strict=True):
        assert g.lat_p50_us == pytest.approx(e.lat_p50_us, rel=1e-9) and g.bps == pytest.approx(e.bps, rel=1e-9)
