"""VerbsSession on the fake pyverbs (worker processes forked with it): the protocol's steps, its errors, abort.

Two sessions in two processes cannot meet on the fake device (its state is per process); the exchange between
hosts is tested at the worker level in test_verbs_split and on a real rxe device in tests/softroce.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from collie.collectors.host import HostCollector, SourceUse
from collie.errors import TargetError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.base import Unsupported
from collie.targets.session import RunPlan
from collie.targets.verbs.session import VerbsSession
from collie.targets.verbs.spec import parse_spec
from tests.conftest import ttar_tree
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")
W = Workload(flows=(Flow(A, B, sizes=(4096,), qps=2), Flow(B, A, opcodes=("SEND",), sizes=(1024,), qps=2,
                                                            processes=2)))


@pytest.fixture
def session(tmp_path: Path) -> Iterator[VerbsSession]:
    root = ttar_tree.make_rxe_tree(tmp_path / "rxe")
    collector = HostCollector("rxe0", 1, root=str(root), ethtool=SourceUse.OFF, netlink=SourceUse.OFF)
    s = VerbsSession(parse_spec("rxe0"), verify=True, pyverbs=fake(), collector=collector)
    yield s
    s.abort()
    assert multiprocessing.active_children() == []


def plan(roles: tuple[str, ...], workload: Workload = W, duration: float = 0.1) -> RunPlan:
    return RunPlan(run=1, workload=workload, roles=roles, warmup=0.02, duration=duration)


def test_a_session_playing_both_roles_runs_the_workload_locally(session: VerbsSession) -> None:
    assert session.prepare(plan(("a", "b"))) == []  # every flow is local: nothing for a peer
    session.connect([])
    session.start(time.time() + 0.05)
    part = session.finish()
    assert part.errors == ()
    assert [(f.flow, f.client, f.server) for f in part.flows] == [(0, "a", "b"), (1, "b", "a")]
    assert all(f.msg_rate > 0 and f.bps > 0 for f in part.flows)
    assert [h.host for h in part.hosts] == ["a", "b"]
    assert part.hosts[0].tx_bps == part.flows[0].bps and part.hosts[0].rx_bps == part.flows[1].bps
    assert part.hosts[0].counters and part.hosts[0].counters == part.hosts[1].counters
    assert part.interval[0] < part.interval[1] and part.setup_s > 0
    details = session.last_details
    assert details is not None and details.workers == 2 and details.checked == (0, 1)
    assert all(s.verified for s in details.summaries)
    assert multiprocessing.active_children() == []  # finish ended the workers


def test_each_end_that_churns_is_reported_apart_for_the_controller_to_merge(session: VerbsSession) -> None:
    churned = Workload(flows=(Flow(A, B, sizes=(4096,), mr_churn=200, qp_churn=50),))
    session.prepare(plan(("a", "b"), churned, duration=0.2))
    session.connect([])
    session.start(time.time() + 0.05)
    part = session.finish()
    assert part.errors == ()
    assert [(e.flow, e.side) for e in part.churn] == [(0, "client"), (0, "server")]
    assert all(e.mr.ops > 0 and e.qp.ops > 0 and 0 < e.mr.rate <= 200 * 1.05 for e in part.churn)
    (flow,) = part.flows
    assert flow.mr_churn_per_s == 0.0  # the ends' reports, not the flow, carry it: the controller merges them
    details = session.last_details
    assert details is not None and [c.end for c in details.churn] == list(part.churn)
    # one role: a churn worker for the end on it only
    session.prepare(plan(("b",), churned))
    assert sorted(p.name for p in multiprocessing.active_children() if "churn" in p.name) == [
        "collie-verbs-churn-0-server"]


def test_one_role_reports_its_endpoints_and_a_missing_peer_is_one_sentence(session: VerbsSession) -> None:
    endpoints = session.prepare(plan(("a",)))
    # a: client of flow 0 (2 QPs in one worker), server of flow 1 (2 QPs over two workers)
    assert sorted((e["flow"], e["worker"], e["qp"], e["side"]) for e in endpoints) == [
        (0, 0, 0, "client"), (0, 0, 1, "client"), (1, 0, 0, "server"), (1, 1, 0, "server")]
    assert all(e["gid"] and 0 <= e["psn"] < 1 << 24 and e["qpn"] > 0 for e in endpoints)
    assert [len(e.get("mrs", ())) for e in endpoints if e["side"] == "server"] == [1, 1]
    assert multiprocessing.active_children() != []
    with pytest.raises(TargetError, match="no peer sent the server end of flow 0 worker 0 QP 0") as exc:
        session.connect([])
    assert "\n" not in str(exc.value)
    assert multiprocessing.active_children() == []  # a failed step aborts the run


def test_abort_stops_running_traffic_and_is_idempotent(session: VerbsSession) -> None:
    session.prepare(plan(("a", "b"), duration=30.0))
    session.connect([])
    session.start(time.time())
    time.sleep(0.2)
    session.abort()
    assert multiprocessing.active_children() == []
    session.abort()
    with pytest.raises(TargetError, match="finish needs a session that is started"):
        session.finish()


def test_steps_out_of_order_and_bad_plans_are_refused(session: VerbsSession) -> None:
    with pytest.raises(TargetError, match="connect needs a session that is prepared, this one is idle"):
        session.connect([])
    with pytest.raises(TargetError, match="roles"):
        session.prepare(plan(("c",)))
    with pytest.raises(Unsupported, match="sges 64"):
        session.prepare(plan(("a",), Workload(flows=(Flow(A, B, sizes=(4096,), sges=64),))))
    assert multiprocessing.active_children() == []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _lost_controller(conn: Connection, root: str) -> None:
    collector = HostCollector("rxe0", 1, root=root, ethtool=SourceUse.OFF, netlink=SourceUse.OFF)
    s = VerbsSession(parse_spec("rxe0"), pyverbs=fake(), collector=collector)
    s.prepare(plan(("a", "b"), duration=120.0))
    s.connect([])
    s.start(time.time())
    conn.send([p.pid for p in multiprocessing.active_children()])
    time.sleep(60)


def test_workers_end_when_their_session_process_dies(tmp_path: Path) -> None:
    """An agent killed outright (no abort) in the middle of the traffic (when workers read no pipe) leaves no
    worker behind: workers get SIGTERM when it dies."""
    root = str(ttar_tree.make_rxe_tree(tmp_path / "rxe"))
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    host = ctx.Process(target=_lost_controller, args=(child, root))
    host.start()
    try:
        assert parent.poll(60)
        workers = parent.recv()
        assert workers and all(_alive(p) for p in workers)
    finally:
        os.kill(host.pid, signal.SIGKILL)
        host.join(10)
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers)  # long before the run's 120 s were over
