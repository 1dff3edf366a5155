"""Cross-host verbs runs on the fake pyverbs: the split plan, the endpoint records, and two hosts' workers (a
thread each, one fake device) exchanging endpoints, connecting and moving verified data."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from collie.errors import TargetError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.verbs.endpoints import EndpointData, index, peer_of
from collie.targets.verbs.engine import Engine, WorkerReport
from collie.targets.verbs.job import Side, Timing, WorkerJob
from collie.targets.verbs.spec import VerbsSpec
from collie.targets.verbs.target import plan_jobs
from collie.targets.verbs.worker import run_job
from collie.targets.verbs.workers import WorkerPool
from tests.unit.targets.verbs import fakeverbs
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")
SPEC = VerbsSpec("fake0")
T = Timing(warmup=0.02, duration=0.1, drain_timeout=2.0, linger=10.0)


def shape(jobs: list[WorkerJob]) -> list[list[tuple[int, int, int, int, str]]]:
    return [[(s.flow_index, s.worker, s.qps, s.mrs, s.side.value) for s in j.shares] for j in jobs]


def test_each_host_holds_its_ends_and_both_split_a_flow_alike() -> None:
    w = Workload(flows=(Flow(A, B, qps=5, mrs=3, processes=2), Flow(B, A, opcodes=("READ",), qps=2),
                        Flow(A, A, opcodes=("SEND",), qps=1)))
    on_a = plan_jobs(w, SPEC, T, True, 1, None, [0], roles=("a",))
    on_b = plan_jobs(w, SPEC, T, True, 1, None, [0], roles=("b",))
    assert shape(on_a) == [[(0, 0, 3, 2, "client"), (1, 0, 2, 1, "server"), (2, 0, 1, 1, "both")],
                           [(0, 1, 2, 1, "client")]]
    assert shape(on_b) == [[(0, 0, 3, 2, "server"), (1, 0, 2, 1, "client")], [(0, 1, 2, 1, "server")]]
    # worker 0 of each host reads its port's counters; a local run is unchanged (every share BOTH)
    assert [j.collector is not None for j in on_a] == [True, False]
    local = plan_jobs(w, SPEC, T, True, 1, None, [0])
    assert {s.side for j in local for s in j.shares} == {Side.BOTH}
    # a host with no end of any flow still reads its counters over the interval
    (idle,) = plan_jobs(w, SPEC, T, True, 1, None, [0], roles=("c",))
    assert idle.shares == () and idle.collector is not None


def test_endpoint_records_round_trip_and_bad_ones_say_which_field() -> None:
    e = EndpointData(flow=1, worker=0, qp=2, side="server", qpn=77, psn=123, gid="fe80::1", qkey=5,
                     mrs=((9, 4096),))
    assert EndpointData.from_dict(e.to_dict()) == e
    assert "mrs" not in EndpointData(0, 0, 0, "client", 1, 2, "g").to_dict()
    peers = index([e.to_dict()])
    assert peer_of(peers, 1, 0, 2, "client") == e
    with pytest.raises(TargetError, match="no peer sent the server end of flow 1 worker 0 QP 3"):
        peer_of(peers, 1, 0, 3, "client")
    for bad, field in (({**e.to_dict(), "qpn": "x"}, "qpn"), ({**e.to_dict(), "side": "both"}, "side"),
                       ({**e.to_dict(), "mrs": [{"rkey": 1}]}, "address"), ({**e.to_dict(), "gid": 3}, "gid")):
        with pytest.raises(TargetError, match=field) as exc:
            index([bad])
        assert "\n" not in str(exc.value)


class Exchange:
    """The coordinators of two hosts in one: every worker's endpoints go to every other worker, then all
    start at one instant (what the agents and the controller do across hosts)."""

    def __init__(self, workers: int, clients: int) -> None:
        self.barrier = threading.Barrier(workers, timeout=30)
        self.endpoints: list[dict[str, Any]] = []
        self.start_ns = 0
        self.sent: list[list[dict[str, Any]]] = []
        self.clients = clients  # workers with client ends still running: server ends stay up until none is

    def stopped(self) -> bool:
        return self.clients == 0

    def prepared(self, endpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.sent.append(endpoints)
        self.endpoints.extend(endpoints)
        self.barrier.wait()
        return list(self.endpoints)

    def ready(self, setup_s: float) -> int:
        if self.barrier.wait() == 0:
            self.start_ns = time.monotonic_ns() + 5_000_000
        self.barrier.wait()
        return self.start_ns


def run_two_hosts(w: Workload, verify: bool = True,
                  server_collector: Any = None) -> tuple[dict[str, list[WorkerReport]], Exchange]:
    jobs = {role: [replace(j, collector=server_collector if role == "b" and j.worker == 0 else None)
                   for j in plan_jobs(w, SPEC, T, verify, 7, None, [0], roles=(role,))]
            for role in ("a", "b")}
    posting = [j for js in jobs.values() for j in js if any(s.side.client for s in j.shares)]
    sync = Exchange(sum(len(j) for j in jobs.values()), len(posting))
    reports: dict[str, list[WorkerReport]] = {"a": [], "b": []}
    failures: list[BaseException] = []

    def work(role: str, job: WorkerJob) -> Callable[[], None]:
        def go() -> None:
            try:
                reports[role].append(run_job(fake(), job, sync))
                sync.clients -= job in posting
            except BaseException as exc:
                failures.append(exc)
                sync.barrier.abort()
        return go

    threads = [threading.Thread(target=work(r, j)) for r, js in jobs.items() for j in js]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures, failures
    return reports, sync


@pytest.mark.parametrize("flow", [
    Flow(A, B, sizes=(4096,), qps=2, mrs=3),
    Flow(A, B, opcodes=("READ",), sizes=(8192,), sges=2, batch=4, signal_every=4),
    Flow(A, B, opcodes=("SEND",), sizes=(512, 2048), batch=4, signal_every=4, rq_depth=16, qps=2),
    Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(1024,), mtu=1024, batch=8, signal_every=8, qps=2),
    Flow(A, B, opcodes=("READ", "WRITE", "WRITE"), sizes=(129, 4097), batch=3, signal_every=3, mr_size=8192),
    Flow(A, B, opcodes=("ATOMIC_FA",), sizes=(8,), batch=4, signal_every=4),
    Flow(A, B, opcodes=("ATOMIC_CS", "WRITE_IMM", "ATOMIC_FA"), sizes=(1, 65), batch=3, signal_every=3, qps=2),
], ids=["rc-write", "rc-read", "rc-send", "ud-send", "read-write-mix", "fetch-add", "atomics-write-imm-mix"])
def test_two_hosts_exchange_endpoints_connect_and_move_verified_data(flow: Flow) -> None:
    reports, sync = run_two_hosts(Workload(flows=(flow,)))
    (client,), (server,) = reports["a"], reports["b"]
    # what each host sent: one endpoint per QP of its side; only the server's first QP carries the MRs
    sent = {e["side"]: [x for x in es] for es in sync.sent for e in es[:1]}
    assert [e["qp"] for e in sent["client"]] == [e["qp"] for e in sent["server"]] == list(range(flow.qps))
    assert all("mrs" not in e for e in sent["client"])
    # the server's data MRs, then (atomic flows) its counters MR
    assert len(sent["server"][0]["mrs"]) == flow.mrs + flow.atomic and all("mrs" not in e for e in sent["server"][1:])
    ud = flow.transport == "UD"
    assert all(e["qkey"] == (0x11111111 if ud else 0) for es in sync.sent for e in es)
    if not ud:  # every RC QP is connected to the other host's QP of the same index
        by = {(e["side"], e["qp"]): e["qpn"] for es in sync.sent for e in es}
        for i in range(flow.qps):
            assert fakeverbs.QPS[by[("client", i)]].peer == by[("server", i)]
            assert fakeverbs.QPS[by[("server", i)]].peer == by[("client", i)]
    assert client.errors == () and server.errors == ()
    (c,), (s,) = client.stats, server.stats
    assert c.measures and s.measures == ud  # UD: the server counts what arrived
    assert c.wrs > 0 and c.bytes > 0 and not c.wc_errors and not s.wc_errors
    # data is checked where it lands: at the server for pushes (WRITE/SEND), at the client for READ and atomics
    pushes = bool({"WRITE", "WRITE_IMM", "SEND", "SEND_IMM"} & set(flow.opcodes))
    pulls = bool({"READ", "ATOMIC_FA", "ATOMIC_CS"} & set(flow.opcodes))
    for part, checks in ((s, pushes), (c, pulls)):
        assert part.checks == checks and part.verified == checks and not part.verify_errors, part
    if flow.opcode == "SEND":  # the server received what the client sent (RC: nothing lost)
        assert s.wrs > 0
    assert client.counters_before is None  # no collector in these jobs


def test_a_server_worker_keeps_reposting_receives_while_its_counters_are_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``ethtool`` and ``rdma`` take hundreds of ms under emulation. A server's host that stopped reposting
    receives while the reading at the interval's end finished left the other host's draining SENDs without
    receives for longer than their RNR retries last (IBV_WC_RNR_RETRY_EXC_ERR on soft-RoCE, 4 runs in 10)."""
    polls = [0]
    original = Engine._poll_recv

    def counted(self: Engine) -> int:
        polls[0] += 1
        return original(self)

    monkeypatch.setattr(Engine, "_poll_recv", counted)
    during: list[int] = []

    class SlowTools:
        def read_sysfs(self) -> dict[str, int]:
            return {}

        def read_tools(self) -> dict[str, int]:
            before = polls[0]
            time.sleep(0.2)
            during.append(polls[0] - before)
            return {}

        def merge(self, sysfs: dict[str, int], tools: dict[str, int]) -> dict[str, int]:
            return {**sysfs, **tools}

    flow = Flow(A, B, opcodes=("SEND",), sizes=(512,), rq_depth=16)
    reports, _ = run_two_hosts(Workload(flows=(flow,)), server_collector=SlowTools())
    assert reports["a"][0].errors == () and reports["b"][0].errors == ()
    assert len(during) == 2 and during[-1] > 0, during  # the reading at the end: receives served meanwhile


def test_a_ud_flow_across_hosts_counts_what_arrived(monkeypatch: pytest.MonkeyPatch) -> None:
    """UD may drop: the server's host counts the receive completions, not what the client sent."""
    original = fakeverbs.FakeQP._execute
    sent = [0]

    def drop_every_other_send(self: fakeverbs.FakeQP, wr: fakeverbs.FakeSendWR, flags: int) -> bool:
        sent[0] += 1
        if sent[0] % 2:
            return original(self, wr, flags)
        if flags & fakeverbs.E.IBV_SEND_SIGNALED:  # sent, never received
            self.scq.q.append(fakeverbs._wc(self.qp_num, wr.wr_id))
        return True

    monkeypatch.setattr(fakeverbs.FakeQP, "_execute", drop_every_other_send)
    flow = Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(1024,), mtu=1024, batch=8, signal_every=8)
    reports, _ = run_two_hosts(Workload(flows=(flow,)), verify=False)
    (c,), (s,) = reports["a"][0].stats, reports["b"][0].stats
    assert c.measures and s.measures
    assert 0 < s.wrs < c.wrs  # about half of what was sent arrived
    assert s.bytes == s.wrs * 1024


def test_a_worker_with_one_sided_shares_needs_a_coordinator() -> None:
    (job,) = plan_jobs(Workload(flows=(Flow(A, B),)), SPEC, T, False, 1, None, [0], roles=("a",))
    with pytest.raises(TargetError, match="needs a coordinator"):
        run_job(fake(), job)


def test_a_server_worker_reports_at_the_end_and_holds_its_ends_until_stop() -> None:
    """The server's host must not tear its QPs down while the client's host drains: its worker reports as soon
    as the interval is over, then keeps its ends up until the coordinator says stop (at most ``linger``)."""
    w = Workload(flows=(Flow(A, B, opcodes=("SEND",), sizes=(512,), qps=2),))
    hold = Timing(warmup=0.01, duration=0.05, drain_timeout=2.0, linger=60.0)
    jobs = [replace(j, collector=None) for j in plan_jobs(w, SPEC, hold, False, 1, None, [0], roles=("b",))]
    pool = WorkerPool(jobs, pyverbs=fake())
    try:
        pool.launch()
        (mine,) = pool.prepared(30)
        assert [(e["side"], e["qp"]) for e in mine] == [("server", 0), ("server", 1)]
        clients = [EndpointData(0, 0, i, "client", 900 + i, 5, "g").to_dict() for i in range(2)]
        pool.connect(clients, 30)
        pool.go(time.monotonic_ns())
        (report,) = pool.gather(30)  # long before the 60 s of linger are over
        assert report.errors == () and not report.stats[0].measures
        (proc, _), = pool._procs
        assert proc.is_alive()  # still holding its QPs
    finally:
        pool.stop(grace_s=30)
    assert not proc.is_alive() and proc.exitcode == 0  # left on "stop", not by a signal
