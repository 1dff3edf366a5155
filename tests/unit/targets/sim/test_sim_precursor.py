"""Diagnostic precursors: present broadly, rising smoothly and monotonically toward a quirk's condition, and
jumping inside it, while throughput stays flat until the cliff (the counter-only cases #7 and #8)."""

from __future__ import annotations

import itertools
import random

from simhelpers import bi, fired, one, random_workload

from collie.targets.base import RunResult
from collie.targets.sim import SimTarget

D = 10.0


def _per_msg(run: RunResult, counter: str) -> float:
    return sum(h.counters[counter] for h in run.hosts) / sum(f.msg_rate for f in run.flows)


Ladder = tuple[list[float], list[float], list[tuple[str, ...]]]


def _ladder(counter: str, workloads: list[object], profile: str = "cx6-200g") -> Ladder:
    t = SimTarget(profile)
    runs = [t.run(w, D) for w in workloads]  # type: ignore[arg-type]
    return [_per_msg(r, counter) for r in runs], [r.flows[0].bps for r in runs], [r.truth for r in runs]


def _increasing(xs: list[float]) -> bool:
    return all(b > a for a, b in itertools.pairwise(xs))


def test_qpc_misses_climb_with_qps_before_the_cliff_of_8() -> None:
    # from 64 QPs on, the flows are at the NIC's packet rate (fewer are held by their QPs' own WR rate)
    qps = [64, 96, 128, 192, 256, 400, 480]
    ws = [one(transport="RC", opcodes=("WRITE",), qps=q, wq=16, mtu=1024, batch=1, sizes=(512,)) for q in qps]
    diag, bps, truth = _ladder("sim_qpc_cache_miss", ws)
    assert _increasing(diag)
    assert diag[-2] > 3 * diag[0]
    assert all(t == () for t in truth[:-1]) and truth[-1] == ("f08-write-many-qp",)
    # counter-only case: throughput flat across the whole ladder, the cliff only at the end
    assert max(bps[:-1]) / min(bps[:-1]) < 1.1 and bps[-1] < 0.7 * bps[-2]


def test_translation_misses_climb_with_mrs_before_the_cliff_of_7() -> None:
    mrs = [16, 128, 1024, 4096, 8192, 11000, 24576]
    ws = [one(transport="RC", opcodes=("WRITE",), qps=24, mrs=m, mr_size=65536, wq=128, mtu=1024, batch=1,
              sizes=(512,)) for m in mrs]
    diag, bps, truth = _ladder("sim_mtt_cache_miss", ws)
    assert _increasing(diag)
    assert all(t == () for t in truth[:-1]) and truth[-1] == ("f07-write-many-mr",)
    assert max(bps[:-1]) / min(bps[:-1]) < 1.1 and bps[-1] < 0.7 * bps[-2]


def test_rx_wqe_misses_climb_with_batch_and_depth_toward_1() -> None:
    batches = [1, 2, 4, 8, 16, 32, 64]
    ws = [one(transport="UD", opcodes=("SEND",), qps=1, wq=256, mtu=2048, batch=b, sizes=(2048,))
          for b in batches]
    diag, _, truth = _ladder("sim_rx_wqe_cache_miss", ws)
    assert _increasing(diag) and fired(truth[-1]) == {"f01-ud-rx-wqe"}
    depths = [16, 32, 64, 128, 256]
    ws = [one(transport="UD", opcodes=("SEND",), qps=1, wq=d, mtu=2048, batch=16, sizes=(2048,)) for d in depths]
    diag, _, _ = _ladder("sim_rx_wqe_cache_miss", ws)
    assert _increasing(diag)


def test_pipeline_stalls_climb_as_mtu_shrinks_toward_3() -> None:
    ws = [one(transport="RC", opcodes=("READ",), qps=8, mr_size=4 << 20, wq=128, mtu=m, sizes=(4 << 20,))
          for m in (4096, 2048, 1024)]
    diag, _, truth = _ladder("sim_pkt_pipeline_stall", ws)
    assert _increasing(diag) and truth[-1] == ("f03-read-mtu1k",)


def test_pcie_backpressure_rises_with_sges_remote_numa_and_bidirectional() -> None:
    t = SimTarget("ideal")

    def bp(w: object) -> float:
        r = t.run(w, D)  # type: ignore[arg-type]
        return max(h.counters["sim_pcie_backpressure"] for h in r.hosts) / D

    base = bp(one(qps=4, batch=8, sizes=(65536,)))
    assert bp(one(qps=4, batch=8, sges=8, sizes=(65536,))) > base
    assert bp(one(qps=4, batch=8, smem="remote", sizes=(65536,))) > base
    assert bp(bi(qps=4, batch=8, sizes=(65536,))) > base


def test_precursors_are_present_broadly() -> None:
    t = SimTarget("cx6-200g")
    rng = random.Random(4)
    n = 0
    seen = {c: 0 for c in ("sim_qpc_cache_miss", "sim_mtt_cache_miss", "sim_pcie_backpressure",
                           "sim_pkt_pipeline_stall", "sim_rx_wqe_cache_miss")}
    while n < 200:
        w = random_workload(rng)
        if w is None:
            continue
        n += 1
        r = t.run(w, D)
        for c in seen:
            seen[c] += any(h.counters[c] > 0 for h in r.hosts)
    assert all(v >= 0.9 * n for v in seen.values()), seen
