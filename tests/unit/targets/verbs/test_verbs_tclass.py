"""A flow's traffic class (``Flow.tclass``) in the GRH of its QPs and address handles, on the fake pyverbs: the
``GlobalRoute`` of every RC/UC QP's RTR and of every UD address handle carries ``traffic_class`` when the flow sets
one, and leaves the argument out (pyverbs' default) when it does not."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from collie.model.flow import Endpoint, Flow
from collie.targets.verbs.endpoints import index
from collie.targets.verbs.job import Share, Side, Timing, WorkerJob
from collie.targets.verbs.resources import WorkerResources
from collie.targets.verbs.spec import VerbsSpec
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")
SPEC = VerbsSpec("fake0", port=1, gid_index=3)

RC = Flow(A, B, sizes=(4096,), qps=2)
UC = Flow(A, B, transport="UC", sizes=(4096,), qps=2)
UD = Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(1024,), mtu=1024, qps=2)


def recording() -> tuple[Any, list[dict[str, Any]], list[Any]]:
    """A fake pyverbs whose ``GlobalRoute`` records its keyword arguments, and whose ``AH`` records its
    attributes (what a UD address handle was made with)."""
    pv = fake()
    routes: list[dict[str, Any]] = []
    handles: list[Any] = []
    make_route, make_ah = pv.addr.GlobalRoute, pv.addr.AH

    def route(**kw: Any) -> Any:
        routes.append(kw)
        return make_route(**kw)

    def ah(pd: Any, attr: Any) -> Any:
        handles.append(attr)
        return make_ah(pd, attr=attr)

    pv.addr.GlobalRoute, pv.addr.AH = route, ah
    return pv, routes, handles


def build(pv: Any, flow: Flow, side: Side = Side.BOTH) -> WorkerResources:
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0, side=side)
    res = WorkerResources(pv, WorkerJob(worker=0, spec=SPEC, shares=(share,), timing=Timing(0.0, 0.1),
                                        verify=False, seed=1))
    res.open()
    return res


@pytest.mark.parametrize("flow", [RC, UC, UD], ids=["rc", "uc", "ud"])
def test_a_flow_with_a_traffic_class_puts_it_in_every_grh(flow: Flow) -> None:
    pv, routes, handles = recording()
    res = build(pv, replace(flow, tclass=106))
    # RC/UC: one route per QP of each side (each QP's RTR); UD: the client's one address handle
    assert len(routes) == (1 if flow.transport == "UD" else 2 * flow.qps)
    assert all(r["traffic_class"] == 106 and r["sgid_index"] == 3 for r in routes), routes
    if flow.transport == "UD":
        (attr,) = handles
        assert attr.gr.traffic_class == 106 and attr.is_global == 1
    res.close()


@pytest.mark.parametrize("flow", [RC, UC, UD], ids=["rc", "uc", "ud"])
def test_a_flow_without_one_leaves_the_traffic_class_to_pyverbs(flow: Flow) -> None:
    pv, routes, _ = recording()
    build(pv, flow).close()
    assert routes and all("traffic_class" not in r for r in routes), routes
    assert all(r["sgid_index"] == 3 for r in routes)


def test_traffic_class_0_is_set_not_left_out() -> None:
    pv, routes, _ = recording()
    build(pv, replace(RC, tclass=0)).close()
    assert routes and all(r["traffic_class"] == 0 for r in routes), routes


def test_each_flow_of_a_worker_gets_its_own_traffic_class() -> None:
    pv, routes, _ = recording()
    flows = (replace(RC, qps=1, tclass=106), replace(RC, qps=1),
             replace(UD, qps=1, tclass=26))
    shares = tuple(Share(flow_index=i, flow=f, qps=1, mrs=1, worker=0) for i, f in enumerate(flows))
    res = WorkerResources(pv, WorkerJob(worker=0, spec=SPEC, shares=shares, timing=Timing(0.0, 0.1), verify=False,
                                        seed=1))
    res.open()
    assert [r.get("traffic_class") for r in routes] == [106, 106, None, None, 26]
    res.close()


@pytest.mark.parametrize("flow", [RC, UD], ids=["rc", "ud"])
def test_both_hosts_of_a_cross_host_flow_set_it(flow: Flow) -> None:
    """Each host's end is connected by its own worker (``connect`` after the endpoints' exchange)."""
    pv, routes, handles = recording()
    tagged = replace(flow, tclass=106)
    client, server = build(pv, tagged, Side.CLIENT), build(pv, tagged, Side.SERVER)
    peers = index([e.to_dict() for e in (*client.endpoints(), *server.endpoints())])
    client.connect(peers)
    server.connect(peers)
    # RC: both ends' QPs go to RTR against the other host's; UD: the client's address handle
    assert len(routes) == (1 if flow.transport == "UD" else 2 * flow.qps)
    assert all(r["traffic_class"] == 106 for r in routes), routes
    assert all(a.gr.traffic_class == 106 for a in handles)
    client.close()
    server.close()
