"""Setup at scale on the fake pyverbs (#33): the work request objects a share builds stay bounded as its QPs and
MRs grow together (UD builds chains per QP), and the cap keeps at least one period of the flow's patterns."""

from __future__ import annotations

from typing import Any

import pytest

from collie.model.flow import Endpoint, Flow
from collie.targets.verbs import resources
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.plan import MAX_CYCLE_WRS
from collie.targets.verbs.resources import UD_CYCLE_WRS, WorkerResources, cycle_cap
from collie.targets.verbs.spec import VerbsSpec
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")
SPEC = VerbsSpec("fake0", port=1, gid_index=1)


@pytest.mark.parametrize(("transport", "qps", "cap"), [
    ("RC", 1, MAX_CYCLE_WRS), ("RC", 100_000, MAX_CYCLE_WRS), ("UC", 5000, MAX_CYCLE_WRS),
    ("UD", 1, UD_CYCLE_WRS), ("UD", 64, UD_CYCLE_WRS), ("UD", 65, MAX_CYCLE_WRS // 65),
    ("UD", 1000, 65), ("UD", MAX_CYCLE_WRS, 1), ("UD", 10 * MAX_CYCLE_WRS, 1),
])
def test_cycle_cap(transport: str, qps: int, cap: int) -> None:
    assert cycle_cap(transport, qps) == cap


def build_counting(flow: Flow) -> tuple[WorkerResources, list[Any]]:
    """The flow's resources on the fake pyverbs, with every SendWR the Python loop's work requests took (the native
    loop builds its own from the same descriptions, one per SendWR)."""
    pv = fake()
    made: list[Any] = []
    make = pv.wr.SendWR

    def send_wr(**kw: Any) -> Any:
        made.append(make(**kw))
        return made[-1]

    pv.wr.SendWR = send_wr
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0)
    res = WorkerResources(pv, WorkerJob(worker=0, spec=SPEC, shares=(share,), timing=Timing(0.0, 0.1),
                                        verify=False, seed=1))
    res.open()
    res.python_wrs()
    share = res.shares[0]
    chains = share.chain_descs or [chain for per_qp in share.qp_chain_descs for chain in per_qp]
    assert len(made) == sum(len(chain) for chain in chains)
    return res, made


def test_ud_qps_split_the_cycle_cap_so_wrs_do_not_grow_as_qps_times_mrs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "MAX_CYCLE_WRS", 4096)
    flow = Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(64,), mtu=1024, qps=16, mrs=1000)
    res, made = build_counting(flow)
    (share,) = res.shares
    assert share.cycle.length == 4096 // 16  # 1,000 slots per QP before the cap: 16,000 WRs
    assert len(made) == 4096
    assert all(len(chains) == share.cycle.chains for chains in share.qp_chains)
    res.close()


def test_the_cap_keeps_one_period_of_the_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "MAX_CYCLE_WRS", 64)
    flow = Flow(A, B, transport="UD", opcodes=("SEND", "SEND_IMM"), sizes=(64, 128, 256), mtu=1024, batch=4,
                qps=32, mrs=100)
    res, made = build_counting(flow)
    (share,) = res.shares
    assert share.cycle.length == 12  # lcm(batch 4, 3 sizes, 2 opcodes), above the cap of 2 per QP
    assert len(made) == 32 * 12
    res.close()


def test_rc_qps_share_one_cycle() -> None:
    flow = Flow(A, B, sizes=(64,), qps=200, mrs=300)
    res, made = build_counting(flow)
    (share,) = res.shares
    assert share.cycle.length == 300 and len(made) == 300 and not share.qp_chains
    res.close()


def test_close_trims_the_heap_once_after_destroying(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[int] = []
    monkeypatch.setattr(resources, "trim_heap", lambda: trims.append(1))
    res, _ = build_counting(Flow(A, B, sizes=(64,), qps=2, mrs=4))
    res.close()
    res.close()  # idempotent: nothing left to destroy, nothing to trim
    assert trims == [1] and res.ctx is None and res.shares == []


def test_trim_heap_is_a_no_op_without_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources.ctypes, "CDLL", lambda name: object())
    resources.trim_heap()  # AttributeError suppressed: musl, macOS


def test_trim_heap_runs_where_glibc_has_it() -> None:
    resources.trim_heap()
