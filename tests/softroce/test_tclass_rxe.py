"""A flow's traffic class (``Flow.tclass``) on a real rxe device (inside the soft-RoCE guest).

Observed, not assumed: an RC QP collie connected reports the class in its address vector (``ibv_query_qp``,
what rxe puts in each packet's IP header), and a UD receive holds the IPv4 header the packet arrived with (the
last 20 bytes of the 40-byte GRH area), whose TOS byte is the class. Then a whole run with the class set
completes with verified data, and perftest accepts the ``--tclass`` line collie writes for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.report.perftest import device_of, perftest_lines
from collie.targets.verbs import compat
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.resources import WorkerResources
from collie.targets.verbs.spec import parse_spec
from tests.softroce.test_perftest_lines import _run

A, B = Endpoint("a"), Endpoint("b")
TCLASS = 106  # DSCP 26 (AF31), ECN ECT(0)
RC = Flow(A, B, sizes=(4096,), qps=2)
UD = Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(1024,), mtu=1024)
#: Where the IPv4 header of a RoCEv2 packet lands in a UD receive buffer (after 20 zero bytes), and its TOS byte.
IPV4_AT, TOS_AT = 20, 21


def _qp_av_mask() -> int:
    """``IBV_QP_AV`` of this rdma-core (flat ``pyverbs.enums`` up to 49, class-qualified from 59)."""
    try:
        import pyverbs.enums as flat
        return int(flat.IBV_QP_AV)
    except ImportError:
        from pyverbs.libibverbs_enums import ibv_qp_attr_mask
        return int(ibv_qp_attr_mask.IBV_QP_AV)


@contextmanager
def resources(device: str, flow: Flow) -> Iterator[WorkerResources]:
    """collie's own resources of ``flow`` (both ends on ``device``), connected, in this process."""
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0)
    job = WorkerJob(worker=0, spec=parse_spec(device), shares=(share,), timing=Timing(0.0, 0.1), verify=True,
                    seed=1)
    res = WorkerResources(compat.load(), job)
    try:
        res.open()
        yield res
    finally:
        res.close()


def _poll(cq: Any, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n, wcs = cq.poll(1)
        if n:
            (wc,) = wcs
            assert wc.status == 0, f"{what}: completion status {wc.status}"
            return wc
        time.sleep(0.001)
    raise AssertionError(f"{what}: no completion within {timeout} s")


@pytest.mark.parametrize("tclass", [TCLASS, None], ids=["tclass-106", "default"])
def test_an_rc_qp_reports_the_flows_traffic_class_in_its_address_vector(device: str, tclass: int | None) -> None:
    with resources(device, replace(RC, tclass=tclass)) as res:
        (share,) = res.shares
        mask = _qp_av_mask()
        for qp in (*share.client_qps, *share.server_qps):
            attr, _ = qp.query(mask)
            assert attr.ah_attr.is_global == 1
            # (pyverbs' AHAttr holds the GRH's fields itself.) No class set: pyverbs' default, 0.
            assert attr.ah_attr.traffic_class == (tclass or 0), (qp.qp_num, str(attr.ah_attr))


@pytest.mark.parametrize("tclass", [TCLASS, None], ids=["tclass-106", "default"])
def test_a_ud_packet_arrives_with_the_flows_traffic_class_in_its_ip_header(device: str,
                                                                            tclass: int | None) -> None:
    with resources(device, replace(UD, tclass=tclass)) as res:
        res.prepare_verify()
        res.python_wrs()
        (share,) = res.shares
        share.server_qps[0].post_recv(share.recv_chain[0])
        share.client_qps[0].post_send(share.qp_chains[0][0][0])
        _poll(share.send_cqs[0], "UD SEND")
        wc = _poll(share.recv_cqs[0], "UD receive")
        assert wc.byte_len == 40 + UD.sizes[0]
        ip = share.server_mrs[0].read(40, 0)[IPV4_AT:]
        assert ip[0] == 0x45, f"no IPv4 header where the GRH lands: {ip.hex()}"
        assert ip[TOS_AT - IPV4_AT] == (tclass or 0), f"IPv4 header {ip.hex()}"


@pytest.mark.parametrize("flow", [RC, UD], ids=["rc", "ud"])
def test_a_run_with_a_traffic_class_completes_with_verified_traffic(target: Any, flow: Flow) -> None:
    workload = Workload(flows=(replace(flow, tclass=TCLASS),))
    r = target.run(workload, 0.5)
    assert r.errors == (), r.errors
    assert all(s.verified for s in target.last_details.summaries), target.last_details.summaries
    (f,) = r.flows
    assert f.msg_rate > 0 and f.bps > 0
    assert r.hosts[0].counters["sent_pkts"] > 0 and r.hosts[0].counters["rcvd_pkts"] > 0


def test_perftest_accepts_and_runs_the_tclass_line(device: str, tmp_path: Path) -> None:
    workload = Workload(flows=(Flow(A, B, sizes=(65536,), tclass=TCLASS),))
    rxe = device_of(f"verbs:{device}:1:1")
    lines = perftest_lines(workload, {"a": rxe, "b": rxe}, duration_s=2.0)
    assert f"--tclass={TCLASS}" in lines.server.split() and f"--tclass={TCLASS}" in lines.client.split()
    _, out = _run(lines, 18650, tmp_path / "server.log")
    assert "RDMA_Write BW Test" in out, out
