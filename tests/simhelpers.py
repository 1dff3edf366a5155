"""Test helpers for the simulator: oracle ceilings calibrated on a target, symptom summaries.

Calibration follows ANOMALIES.md: large WRITEs for bits/s, many small WRITEs for packets/s, per direction kind
(one-way, bidirectional, loopback), on the target itself.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from collie.collectors.catalog import load_catalogs
from collie.oracle import Ceilings, Oracle, Verdict
from collie.targets.sim import SimTarget
from collie.targets.sim.triggers import bi, one
from collie.workload import Endpoint, Workload

DURATION = 10.0


def calibrate(target: SimTarget) -> Ceilings:
    """Ceilings of ``target`` measured the way a campaign does (``collie.calibrate``'s workloads)."""
    from collie import calibrate as cal

    wire: dict[str, float] = {}
    pps: dict[str, float] = {}
    for kind, measure, w in cal.calibration_workloads():
        r = target.run(w, DURATION)
        assert not r.truth, (kind, r.truth)
        servers = {f.server.host for f in w.flows}
        if measure == "bps":
            wire[kind] = cal.wire_bps_from_payload(max(sum(f.bps for f in r.flows if f.server == h)
                                                       for h in servers))
        else:
            pps[kind] = max(sum(f.pps for f in r.flows if f.server == h) for h in servers)
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


def random_workload(rng: random.Random, *, gpu: bool = True, remote: bool = True) -> Workload | None:
    """A random legal workload in the paper's space (log-uniform counts and sizes); None if illegal."""
    from collie.constraints import LEGAL_OPCODES, violations
    from collie.workload import Flow

    transport = rng.choice(("RC", "RC", "RC", "UC", "UD"))
    opcode = rng.choice([o for o in LEGAL_OPCODES[transport] if not o.startswith("ATOMIC")] + ["ATOMIC_FA"] *
                        (transport == "RC"))
    mtu = rng.choice((256, 512, 1024, 2048, 4096))

    def logint(lo: int, hi: int) -> int:
        return round(2 ** rng.uniform(math.log2(lo), math.log2(hi)))

    if opcode.startswith("ATOMIC"):
        sizes: tuple[int, ...] = (8,)
        sges = 1
    else:
        hi = mtu if transport == "UD" else 4 << 20
        sizes = tuple(logint(32, hi) for _ in range(rng.randint(1, 4)))
        sges = min(logint(1, 16), min(sizes))
    batch = logint(1, 128)
    depth = max(batch, logint(1, 4096))
    sge = -(-max(sizes) // sges)
    mr_size = max(sge, logint(4096, 4 << 20))
    mrs = logint(1, 20000)
    while mrs * mr_size * 2 > (32 << 30) and mrs > 1:
        mrs //= 2
    mems = ["local"] + ["remote"] * remote + ["gpu"] * gpu
    cmem, smem = rng.choice(mems), rng.choice(mems)
    qps = logint(1, 2048)
    shape = rng.choice(("oneway", "oneway", "bi", "loop"))
    base = Flow(client=Endpoint("a", cmem), server=Endpoint("b", smem), transport=transport, opcode=opcode,
                sizes=sizes, qps=qps, batch=batch, sges=sges, sq_depth=depth, rq_depth=depth, mtu=mtu,
                mrs=mrs, mr_size=mr_size)
    if shape == "bi":
        flows = (base, replace(base, client=Endpoint("b", smem), server=Endpoint("a", cmem)))
    elif shape == "loop":
        flows = (replace(base, server=Endpoint("a", smem)),)
    else:
        flows = (base,)
    w = Workload(flows=flows)
    return None if violations(w) else w


PERFTEST_DEFAULTS: tuple[Workload, ...] = (
    one(name="ib_write_bw", qps=1, batch=1, wq=128, mtu=4096, sizes=(65536,)),
    one(name="ib_write_bw -q 8 -l 16", qps=8, batch=16, wq=128, mtu=4096, sizes=(65536,)),
    one(name="ib_write_bw -s 64 -q 16", qps=16, batch=32, wq=512, mtu=4096, sizes=(64,)),
    one(name="ib_read_bw", opcode="READ", qps=1, wq=128, mtu=4096, sizes=(65536,)),
    one(name="ib_send_bw", opcode="SEND", qps=1, wq=512, mtu=4096, sizes=(65536,)),
    one(name="ib_send_bw -c UD", transport="UD", opcode="SEND", qps=1, wq=512, mtu=4096, sizes=(4096,)),
    bi(name="ib_write_bw -b", qps=1, wq=128, mtu=4096, sizes=(65536,)),
    bi(name="ib_read_bw -b -q 4", opcode="READ", qps=4, wq=128, mtu=4096, sizes=(1 << 20,), mr_size=1 << 20),
    one(name="ib_write_bw -a (2 B)", qps=1, wq=128, mtu=4096, sizes=(2,)),
    one(name="ib_write_bw -s 8M", qps=2, wq=128, mtu=4096, sizes=(8 << 20,), mr_size=8 << 20),
    one(name="ib_atomic_bw", opcode="ATOMIC_FA", qps=4, wq=128, mtu=4096, sizes=(8,)),
)
