"""Test helpers for the simulator: oracle ceilings calibrated on a target, symptom summaries.

Calibration follows ANOMALIES.md: large WRITEs for bits/s, many small WRITEs for packets/s, per direction kind
(one-way, bidirectional, loopback), on the target itself.
"""

from __future__ import annotations

from dataclasses import replace

from collie import rocev2
from collie.collectors.catalog import load_catalogs
from collie.oracle import Ceilings, Oracle, Verdict
from collie.targets.sim import SimTarget
from collie.targets.sim.triggers import bi, one
from collie.workload import Endpoint, Workload

DURATION = 10.0


def _kinds(**kw: object) -> dict[str, Workload]:
    w = one(**kw)  # type: ignore[arg-type]
    loop = w.with_flows((replace(w.flows[0], client=Endpoint("a"), server=Endpoint("a")),))
    return {"oneway": w, "bidirectional": bi(**kw), "loopback": loop}  # type: ignore[arg-type]


def calibrate(target: SimTarget) -> Ceilings:
    """Ceilings of ``target`` measured the way a campaign would (into host a's peer, or a for loopback)."""
    wire: dict[str, float] = {}
    pps: dict[str, float] = {}
    large = _kinds(qps=16, batch=16, mtu=4096, sizes=(65536,))
    small = _kinds(qps=16, batch=32, wq=128, mtu=4096, sizes=(64,))
    for kind, w in large.items():
        r = target.run(w, DURATION)
        assert not r.truth, (kind, r.truth)
        f = r.flows[0]
        wire[kind] = f.bps / rocev2.efficiency([65536], 4096)
    for kind, w in small.items():
        r = target.run(w, DURATION)
        assert not r.truth, (kind, r.truth)
        pps[kind] = r.flows[0].pps
    return Ceilings(wire, pps, target.describe().line_rate_bps)


def oracle_for(target: SimTarget) -> Oracle:
    catalog = load_catalogs(target.profile.dialect, "sim")
    return Oracle(catalog, calibrate(target))


def kinds(verdict: Verdict) -> set[str]:
    return {s.kind for s in verdict.symptoms}


def max_pause(run: object) -> float:
    """Largest tx pause ratio over the hosts of a run (mlx5 and bnxt names)."""
    out = 0.0
    for h in run.hosts:  # type: ignore[attr-defined]
        for k in ("tx_prio3_pause_duration", "pfc_pri3_tx_duration_us"):
            if k in h.counters:
                out = max(out, h.counters[k] / (run.duration_s * 1e6))  # type: ignore[attr-defined]
    return out
