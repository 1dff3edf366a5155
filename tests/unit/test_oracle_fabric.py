"""Pause from the fabric: hosts paused by no host of the run are reported once, as ``pause@fabric``, attributed to
the switch port that originates it (not to the victims it reaches), or to a link between switches; a pause a host
of the run sent stays that host's own."""

from __future__ import annotations

import functools
from dataclasses import replace

from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind
from collie.model.workload import Workload
from collie.oracle import Oracle, Symptom, Verdict
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.fabric import spread
from collie.targets.sim.profile import Fabric, Fault, FaultKind, host_names
from tests.simhelpers import corpus, oracle_for

FABRIC = load_profile("fleet8-cx6-fabric")


@functools.lru_cache(maxsize=2)
def _oracle() -> Oracle:
    return oracle_for(SimTarget(FABRIC, seed=2))


def judge(*pairs: tuple[str, str], profile: str | None = None, faults: tuple[Fault, ...] = (),
          uplink_gbps: float = 400) -> Verdict:
    p = replace(FABRIC, faults=faults, fabric=Fabric(4, 2, uplink_gbps, True, 256.0)) if profile is None else \
        load_profile(profile)
    w = Workload(flows=tuple(Flow(Endpoint(a), Endpoint(b)) for a, b in pairs))
    return _oracle().judge(SimTarget(p, seed=5).run(w, 1.0), w)


def fabric_pause(v: Verdict) -> Symptom:
    (s,) = [s for s in v.symptoms if s.end == "fabric"]
    return s


def test_an_incast_pause_is_attributed_to_the_port_into_its_receiver_not_to_the_victim() -> None:
    v = judge(("h1", "h0"), ("h2", "h0"), ("h3", "h0"), ("h1", "h4"))
    s = fabric_pause(v)
    assert (s.kind, s.host, s.link) == ("pause", "h0", "switch->h0")
    assert s.read_on in ("h2", "h3") and s.value > 0.6 and s.counter == "rx_prio3_pause_duration"
    assert v.leading == "pause@fabric" and v.shows("low_throughput@receiver")  # h4 got a third of its link
    assert [x.host for x in v.symptoms if x.kind == "low_throughput"] == ["h4"]


def test_a_pause_a_host_of_the_run_sent_stays_its_own() -> None:
    """A NIC on a narrow PCIe link pauses its port; the senders it reaches are not the fabric's doing."""
    v = judge(("h1", "h0"), ("h1", "h2"), faults=(Fault("h0", FaultKind.PCIE, 0.25),))
    assert v.shows("pause@receiver") and not v.shows("pause@fabric")
    assert [s.host for s in v.symptoms if s.kind == "pause"] == ["h0"]
    assert "pause@fabric" not in v.levels


def test_two_flows_ecmp_put_on_one_uplink_pause_from_a_link_between_switches() -> None:
    pairs = [(f"h{a}", f"h{b}") for a in range(4) for b in range(4, 8)]
    same = next((p, q) for p in pairs for q in pairs
                if p[0] != q[0] and p[1] != q[1] and spread(*p, 1, 2) == spread(*q, 1, 2))
    s = fabric_pause(judge(*same, uplink_gbps=200))
    assert s.link == "fabric" and s.host == s.read_on and s.host in (same[0][0], same[1][0])


def test_runs_without_a_fabric_never_show_a_pause_from_it() -> None:
    """On two hosts back to back every pause a host received, its peer sent: the corpus's pause storms are the
    receiver's own, none from the fabric (and a fleet on an ideal switch pauses nothing)."""
    storms = [c for c in corpus() if c.signature.startswith("pause@")]
    assert len(storms) >= 3
    for case in storms:
        target = SimTarget(case.profile, seed=1)
        v = _oracles(case.profile).judge(target.run(case.workload, 1.0), case.workload)
        assert v.shows("pause@receiver") or v.shows("pause@sender"), (case.name, v.signature)
        assert "pause@fabric" not in v.levels and not v.shows("pause@fabric"), case.name
    target = SimTarget("fleet8-cx6", seed=1)
    w = Workload(flows=tuple(Flow(Endpoint(a), Endpoint(b)) for a, b in (("h1", "h0"), ("h2", "h0"))))
    v = oracle_for(target).judge(target.run(w, 1.0), w)
    assert "pause@fabric" not in v.levels and not v.shows("pause@fabric")


@functools.lru_cache(maxsize=4)
def _oracles(profile: str) -> Oracle:
    return oracle_for(SimTarget(profile, seed=11))


def test_a_pattern_incast_is_attributed_to_its_root() -> None:
    hosts = host_names(8)[:4]
    w = Workload.of_pattern(Pattern(PatternKind.INCAST, hosts, 64 << 20))
    v = _oracle().judge(SimTarget(FABRIC, seed=5).run(w, 1.0), w)
    assert fabric_pause(v).link == "switch->h0" and v.signature == "pause@fabric"
