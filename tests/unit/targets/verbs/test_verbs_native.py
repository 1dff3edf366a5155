"""The native traffic loop on the native module's fake provider (see cfakeverbs): the same flows, counts and data
verification as the Python loop's tests on fakeverbs, and how a worker chooses its loop."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from collie.errors import TargetError
from collie.model.flow import Endpoint, Flow
from collie.targets.verbs import native
from collie.targets.verbs.engine import Engine
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.native import LoopMode, NativeEngine, NativeLoopWarning, choose, make_engine, mode
from collie.targets.verbs.resources import WorkerResources
from collie.targets.verbs.spec import VerbsSpec
from collie.targets.verbs.worker import run_job
from tests.unit.targets.verbs import test_verbs_engine_fake as engine_fake
from tests.unit.targets.verbs.cfakeverbs import cfake, moving, rnr_naks
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")
WARMUP, DURATION = 0.02, 0.1

__all__ = ["moving"]


def job(flow: Flow, verify: bool = True, native_loop: bool = True) -> WorkerJob:
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0)
    return WorkerJob(worker=0, spec=VerbsSpec("fake0"), shares=(share,), timing=Timing(WARMUP, DURATION, 2.0),
                     verify=verify, seed=1, native=native_loop)


#: The Python loop's flow shapes, and a paced receiver.
FLOWS = [*engine_fake.FLOWS,
         Flow(A, B, opcodes=("SEND",), sizes=(256,), rq_depth=8, recv_batch=4, recv_delay_us=200, sq_depth=16)]
IDS = [*engine_fake.IDS, "paced-receiver"]


@pytest.mark.parametrize("flow", FLOWS, ids=IDS)
def test_native_loop_counts_and_verifies_what_the_python_loop_does(flow: Flow, moving: Any) -> None:
    native_report = run_job(cfake(), job(flow))
    python_report = run_job(fake(), job(flow, native_loop=False))
    for report in (native_report, python_report):
        assert report.errors == ()
        (s,) = report.stats
        assert s.verified and not s.verify_errors, s.verify_errors
        assert s.wrs > 0 and s.bytes > 0 and s.packets >= s.wrs
        assert s.lat_ns and s.loops > 0
        assert abs(s.seconds - DURATION) < 0.05
    (n,), (p,) = native_report.stats, python_report.stats
    # the same flow: bytes and packets per WR follow the same cycle in both loops
    assert n.bytes / n.wrs == pytest.approx(p.bytes / p.wrs, rel=0.25)
    # every client QP's WRs in the interval, for per-QP fairness, in both loops
    assert len(n.qp_wrs) == len(p.qp_wrs) == flow.qps
    assert flow.transport == "UD" or (sum(n.qp_wrs), sum(p.qp_wrs)) == (n.wrs, p.wrs)


def test_the_worker_runs_the_native_engine_when_its_job_asks(moving: Any) -> None:
    pv = cfake()
    flow = Flow(A, B, sizes=(64,))
    for asked, kind in ((True, NativeEngine), (False, Engine)):
        res = WorkerResources(pv, job(flow, native_loop=asked))
        try:
            res.open()
            engine = make_engine(pv, job(flow, native_loop=asked), res)
            assert type(engine) is kind
        finally:
            res.close()


def test_verification_catches_a_corrupted_buffer_in_the_native_loop(monkeypatch: pytest.MonkeyPatch,
                                                                     moving: Any) -> None:
    original = WorkerResources.check_verify

    def corrupt(self: WorkerResources, res: Any, seqs: list[int], received: int) -> list[str]:
        mr = res.server_mrs[0]
        byte = mr.read(1, 5)
        mr.write(bytes([byte[0] ^ 0xFF]), 1, 5)
        return original(self, res, seqs, received)

    monkeypatch.setattr(WorkerResources, "check_verify", corrupt)
    (s,) = run_job(cfake(), job(Flow(A, B, sizes=(64,)))).stats
    assert not s.verified
    assert s.verify_errors and "byte 5" in s.verify_errors[0]


def test_a_slow_receiver_draws_rnr_naks_and_the_native_run_still_completes(moving: Any) -> None:
    before = rnr_naks()
    flow = Flow(A, B, opcodes=("SEND",), sizes=(64,), rq_depth=4, recv_batch=4, recv_delay_us=2000, sq_depth=32,
                signal_every=1)
    report = run_job(cfake(), job(flow))
    assert report.errors == ()
    (s,) = report.stats
    assert s.verified and s.wrs > 0
    assert rnr_naks() > before


def test_without_data_moved_the_native_loop_outruns_the_python_loop() -> None:
    """The loops' own ceilings (a fake that does no work): not a timing assertion, a sanity one (one order of
    magnitude apart on any machine: bench/engine_ceiling.py measures the ratio)."""
    from tests.unit.targets.verbs import cfakeverbs, fakeverbs

    flow = Flow(A, B, sizes=(64,), sq_depth=128, signal_every=100)
    cfakeverbs.move_data(False)
    fakeverbs.MOVE_DATA = False
    try:
        (n,) = run_job(cfake(), job(flow, verify=False)).stats
        (p,) = run_job(fake(), job(flow, verify=False, native_loop=False)).stats
    finally:
        cfakeverbs.move_data(True)
        fakeverbs.MOVE_DATA = True
    assert n.wrs / n.seconds > 3 * p.wrs / p.seconds


def test_the_loop_mode_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native.ENV, raising=False)
    assert mode() is LoopMode.AUTO
    monkeypatch.setenv(native.ENV, "Python")
    assert mode() is LoopMode.PYTHON
    assert not choose(cfake()).native
    monkeypatch.setenv(native.ENV, "fast")
    with pytest.raises(TargetError, match="COLLIE_VERBS_LOOP='fast' names no traffic loop"):
        mode()


def test_a_missing_native_module_is_one_warning_under_auto_and_an_error_when_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "module", lambda: (None, "no <infiniband/verbs.h> (apt-get install libibverbs-dev)"))
    monkeypatch.setenv(native.ENV, "auto")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        choice = choose(cfake())
    assert not choice.native and "libibverbs-dev" in choice.reason
    assert [str(w.message) for w in seen if w.category is NativeLoopWarning] == [
        "the native traffic loop is not available (no <infiniband/verbs.h> (apt-get install libibverbs-dev)); "
        "using the Python loop, which drives far fewer small messages per second"]
    monkeypatch.setenv(native.ENV, "native")
    with pytest.raises(TargetError, match="COLLIE_VERBS_LOOP=native but the native traffic loop is not available"):
        choose(cfake())


def test_a_pure_python_fake_runs_the_python_loop_without_a_word() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not choose(fake()).native


def test_the_loop_ceiling_is_measured_per_shape_and_post_lists_raise_it() -> None:
    from tests.unit.targets.verbs.cfakeverbs import native_module

    native_module()
    single = native.loop_ceiling(1, 100, 128, 1)
    lists = native.loop_ceiling(32, 32, 128, 1)
    assert 0 < single < float("inf")
    assert lists > single  # one post_send carries 32 WRs


def test_a_run_at_the_loops_own_ceiling_is_engine_bound(moving: Any, tmp_path: Path) -> None:
    """On the fake provider with no data moved the device costs nothing: the loop is the limit, and says so."""
    from collie.collectors.host import HostCollector, SourceUse
    from collie.model.workload import Workload
    from collie.targets.verbs import VerbsTarget
    from tests.conftest import ttar_tree
    from tests.unit.targets.verbs import cfakeverbs

    root = ttar_tree.make_rxe_tree(tmp_path / "rxe")
    collector = HostCollector("rxe0", 1, root=str(root), ethtool=SourceUse.OFF, netlink=SourceUse.OFF)
    flow = Flow(A, B, sizes=(64,), sq_depth=128, signal_every=100)
    cfakeverbs.move_data(False)
    with VerbsTarget(VerbsSpec("rxe0"), pyverbs=cfake(), warmup=0.02, collector=collector) as t:
        assert t.describe().details["traffic_loop"] == "native"
        r = t.run(Workload(flows=(flow,)), 0.1)
    assert r.errors == ()
    assert r.engine_bound


def test_at_ceiling_compares_each_workers_rate_with_its_shapes_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    from collie.targets.verbs.measure import FlowStats, combine

    monkeypatch.setattr(native, "loop_ceiling", lambda batch, every, depth, qps: 1_000_000.0)
    flow = Flow(A, B, sizes=(64,), qps=4, processes=2)

    def summary(wrs_per_s: float) -> Any:
        return combine(0, [FlowStats(flow=0, seconds=1.0, wrs=int(wrs_per_s), bytes=64, packets=1)])

    assert native.at_ceiling([(flow, summary(1_200_000))])  # 600 k/s per worker: above half the ceiling
    assert not native.at_ceiling([(flow, summary(800_000))])  # 400 k/s per worker


def test_collies_own_warnings_are_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from collie.cli import _one_line

    _one_line(NativeLoopWarning("the native traffic loop is not available (x)"), NativeLoopWarning, "f.py", 1)
    assert capsys.readouterr().err == "collie: warning: the native traffic loop is not available (x)\n"


@pytest.mark.parametrize("batch, every", [(1024, 1024), (4096, 3)], ids=["post-list-1024", "post-list-4096-odd"])
def test_post_lists_as_long_as_the_space_allows(batch: int, every: int, moving: Any) -> None:
    flow = Flow(A, B, sizes=(64,), batch=batch, signal_every=every, sq_depth=2 * batch)
    report = run_job(cfake(), job(flow))
    assert report.errors == ()
    (s,) = report.stats
    assert s.verified and s.wrs >= batch


def test_a_module_built_from_another_version_of_its_source_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    from collie.targets.verbs import native_build
    from tests.unit.targets.verbs.cfakeverbs import native_module

    assert native_build.source_digest(native_build.SOURCE) == native_module().SOURCE
    assert native.module()[0] is not None
    monkeypatch.setattr(native_build, "source_digest", lambda source: "0123456789abcdef")
    native.module.cache_clear()
    monkeypatch.setattr(native, "module", native.module.__wrapped__)  # undone after the test: the cache stays right
    mod, why = native.module()
    assert mod is None
    assert why == ("it was built from another version of _native.c than the one beside it; rebuild it: "
                   "python -m collie.targets.verbs.native_build")
