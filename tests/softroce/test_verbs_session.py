"""Cross-host verbs sessions on a real rxe device (inside the soft-RoCE guest).

Two :class:`VerbsSession` objects on the same rxe0 play roles "a" and "b" as two hosts would: each prepares its
ends, they exchange endpoints, both start at one wall-clock instant and each finishes with its own HostPart.
Then the same with each session in a process of its own, the test playing the controller over pipes.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing.connection import Connection
from typing import Any

import pytest

from collie.collectors.host import HostCollector, SourceUse
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.session import HostPart, RunPlan
from collie.targets.verbs import VerbsTarget
from collie.targets.verbs.session import VerbsSession
from collie.targets.verbs.spec import parse_spec
from tests.softroce.conftest import rdma_resources

A, B = Endpoint("a"), Endpoint("b")
WARMUP, DURATION = 0.1, 0.5
START_IN_S = 0.3


def one(**kw: Any) -> Workload:
    return Workload(flows=(Flow(A, B, **kw),))


MATRIX = {
    "rc-write": one(sizes=(65536,), qps=2, mrs=2),
    "rc-read": one(opcodes=("READ",), sizes=(4096,), sges=2),
    "rc-send": one(opcodes=("SEND",), sizes=(512, 4096), batch=4, signal_every=4, rq_depth=64, qps=2),
    "ud-send": one(transport="UD", opcodes=("SEND",), sizes=(1024,), mtu=1024, qps=2, batch=8, signal_every=8),
    "rc-read-write-mix": one(opcodes=("READ", "WRITE"), sizes=(129, 4097), batch=2, signal_every=2, mr_size=8192),
    "rc-atomics": one(opcodes=("ATOMIC_FA", "ATOMIC_CS", "WRITE_IMM"), sizes=(8, 1000), batch=3, signal_every=3),
}


def sysfs_only(device: str) -> HostCollector:
    """The port's sysfs counters alone: ``ethtool`` and ``rdma`` are processes, which under emulation steal
    enough CPU at the interval's edges to blur a throughput comparison (two sessions on one guest read twice)."""
    return HostCollector(device, 1, ethtool=SourceUse.OFF, netlink=SourceUse.OFF)


def run_pair(device: str, w: Workload,
             collector: HostCollector | None = None) -> tuple[HostPart, HostPart, VerbsSession, VerbsSession]:
    sa = VerbsSession(parse_spec(device), verify=True, seed=1, collector=collector)
    sb = VerbsSession(parse_spec(device), verify=True, seed=2, collector=collector)
    try:
        ea = sa.prepare(RunPlan(run=1, workload=w, roles=("a",), warmup=WARMUP, duration=DURATION))
        eb = sb.prepare(RunPlan(run=1, workload=w, roles=("b",), warmup=WARMUP, duration=DURATION))
        sa.connect(eb)
        sb.connect(ea)
        at = time.time() + START_IN_S
        sa.start(at)
        sb.start(at)
        return sa.finish(), sb.finish(), sa, sb
    finally:
        sa.abort()
        sb.abort()


@pytest.mark.parametrize("name", list(MATRIX))
def test_two_sessions_on_one_rxe_move_verified_traffic(device: str, name: str) -> None:
    before = rdma_resources(device)
    w = MATRIX[name]
    pa, pb, sa, sb = run_pair(device, w)
    assert pa.errors == () and pb.errors == (), (pa.errors, pb.errors)
    # the client's host measures the flow; the server's host only served it, but for UD counts what arrived
    (f,) = pa.flows
    ud = w.flows[0].transport == "UD"
    assert len(pb.flows) == ud and all(g.msg_rate > 0 for g in pb.flows)
    assert f.bps > 0 and f.msg_rate > 0 and 0 < f.lat_p50_us <= f.lat_p99_us
    print(f"\n{name}: {f.bps / 1e6:.1f} Mbit/s {f.msg_rate:.0f} msg/s p50 {f.lat_p50_us:.0f} us")
    # data verified where it landed (server for WRITE/SEND, client for READ and atomics)
    ops = set(w.flows[0].opcodes)
    pushes, pulls = ops & {"WRITE", "WRITE_IMM", "SEND", "SEND_IMM"}, ops & {"READ", "ATOMIC_FA", "ATOMIC_CS"}
    checkers = [session for session, here in ((sa, pulls), (sb, pushes)) if here]
    for checker in checkers:
        assert checker.last_details is not None and checker.last_details.checked == (0,)
        assert all(s.verified for s in checker.last_details.summaries)
    # each host read its port's counters at the edges of its own interval (one rxe: both see the traffic)
    for part, role in ((pa, "a"), (pb, "b")):
        (h,) = part.hosts
        assert h.host == role and h.counters["sent_pkts"] > 0 and h.counters["rcvd_pkts"] > 0, h.counters
        assert part.interval[0] < part.interval[1]
    # no worker, QP or MR is left behind
    assert rdma_resources(device) == before


def test_throughput_comparable_to_the_local_target(device: str) -> None:
    w = MATRIX["rc-write"]
    pa, pb, _, _ = run_pair(device, w, sysfs_only(device))
    assert pa.errors == () and pb.errors == ()
    with VerbsTarget(parse_spec(device), verify=True, warmup=WARMUP, collector=sysfs_only(device)) as target:
        local = target.run(w, DURATION)
    assert local.errors == ()
    cross, here = pa.flows[0].bps, local.flows[0].bps
    print(f"\nrc-write 64 KiB x 2 QPs: sessions {cross / 1e6:.1f} Mbit/s, local target {here / 1e6:.1f} Mbit/s "
          f"(ratio {cross / here:.2f})")
    assert cross > 0 and here > 0


def test_abort_mid_run_stops_the_traffic_and_frees_everything(device: str) -> None:
    before = rdma_resources(device)
    w = MATRIX["rc-send"]
    sa, sb = VerbsSession(parse_spec(device), seed=1), VerbsSession(parse_spec(device), seed=2)
    try:
        ea = sa.prepare(RunPlan(run=1, workload=w, roles=("a",), warmup=WARMUP, duration=60.0))
        eb = sb.prepare(RunPlan(run=1, workload=w, roles=("b",), warmup=WARMUP, duration=60.0))
        assert rdma_resources(device)["qp"] > before["qp"]
        sa.connect(eb)
        sb.connect(ea)
        at = time.time()
        sa.start(at)
        sb.start(at)
        time.sleep(1.0)
    finally:
        sa.abort()
        sb.abort()
    sa.abort()  # idempotent
    assert mp.active_children() == []
    assert rdma_resources(device) == before


def _host(device: str, role: str, seed: int, conn: Connection) -> None:
    """One host in a process of its own: the steps of a session driven by the controller over ``conn``."""
    session = VerbsSession(parse_spec(device), verify=True, seed=seed)
    try:
        plan = conn.recv()
        conn.send(session.prepare(plan))
        session.connect(conn.recv())
        session.start(conn.recv())
        conn.send(session.finish())
        conn.recv()  # abort: after every host finished (server ends stay up for the other host's drain)
    except BaseException as exc:
        conn.send(exc)
    finally:
        session.abort()
        conn.close()


def test_two_sessions_in_two_processes(device: str) -> None:
    before = rdma_resources(device)
    # a->b over two worker processes on each host, b->a the other way, a->a both ends on host a (local)
    w = Workload(flows=(Flow(A, B, sizes=(16384,), qps=2, processes=2),
                        Flow(B, A, opcodes=("SEND",), sizes=(2048,), qps=2), Flow(A, A, sizes=(4096,))))
    ctx = mp.get_context("fork")
    hosts = []
    for role, seed in (("a", 1), ("b", 2)):
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_host, args=(device, role, seed, child))  # not daemonic: it forks workers
        p.start()
        child.close()
        hosts.append((role, p, parent))
    try:
        for role, _, conn in hosts:
            conn.send(RunPlan(run=1, workload=w, roles=(role,), warmup=WARMUP, duration=DURATION))
        endpoints = []
        for _, _, conn in hosts:
            assert conn.poll(120)
            endpoints.append(conn.recv())
        assert not any(isinstance(e, BaseException) for e in endpoints), endpoints
        for i, (_, _, conn) in enumerate(hosts):
            conn.send([e for j, es in enumerate(endpoints) if j != i for e in es])
        at = time.time() + START_IN_S
        for _, _, conn in hosts:
            conn.send(at)
        parts = []
        for _, _, conn in hosts:
            assert conn.poll(120)
            parts.append(conn.recv())
        for _, _, conn in hosts:
            conn.send("abort")
    finally:
        for _, p, _ in hosts:
            p.join(30)
            if p.is_alive():
                p.kill()
    pa, pb = parts
    assert isinstance(pa, HostPart) and isinstance(pb, HostPart), parts
    assert pa.errors == () and pb.errors == (), (pa.errors, pb.errors)
    # each host measures the flow whose client it is
    assert [(f.flow, f.client) for f in pa.flows] == [(0, "a"), (2, "a")]
    assert [(f.flow, f.client) for f in pb.flows] == [(1, "b")]
    assert all(f.bps > 0 for f in (*pa.flows, *pb.flows))
    assert pa.hosts[0].counters["sent_pkts"] > 0 and pb.hosts[0].counters["sent_pkts"] > 0
    print(f"\ntwo processes: a->b WRITE {pa.flows[0].bps / 1e6:.1f} Mbit/s, b->a SEND {pb.flows[0].bps / 1e6:.1f} "
          f"Mbit/s, a->a WRITE {pa.flows[1].bps / 1e6:.1f} Mbit/s")
    assert rdma_resources(device) == before
