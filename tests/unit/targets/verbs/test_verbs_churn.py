"""Control-path churn on the fake device: pacing, what is reported, limits, failing and interrupted workers."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collie.collectors.host import HostCollector, SourceUse
from collie.errors import TargetError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.verbs import churn, workers
from collie.targets.verbs.churn import ChurnJob, churn_jobs, run_churn
from collie.targets.verbs.limits import DeviceLimits, check_workload
from collie.targets.verbs.spec import VerbsSpec, parse_spec
from collie.targets.verbs.target import VerbsTarget
from tests.conftest import ttar_tree
from tests.unit.targets.verbs import fakeverbs
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")
SPEC = VerbsSpec("fake0")
COST_S = 50e-6


class Clock:
    """``time`` as the churn worker sees it: the monotonic clock advances 1 µs per reading and by what is slept,
    so a run is a pure function of the worker's own steps."""

    def __init__(self) -> None:
        self.now = 1_000_000_000_000

    def monotonic_ns(self) -> int:
        self.now += 1_000
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


class Sync:
    """The coordinator's side of the handshake: start at once."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def prepared(self, endpoints: list[Any]) -> list[Any]:
        assert endpoints == []
        return []

    def ready(self, setup_s: float) -> int:
        return self.clock.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(churn, "time", c)
    monkeypatch.setattr(fakeverbs, "CLOCK", [c])
    monkeypatch.setattr(fakeverbs, "CONTROL_COST_S", [COST_S])
    return c


def job(mr: int = 0, qp: int = 0, mr_size: int = 65536, duration: float = 0.1) -> ChurnJob:
    return ChurnJob(flow_index=0, side="client", spec=SPEC, mr_churn=mr, mr_size=mr_size, qp_churn=qp, warmup=0.01,
                    duration=duration)


def test_churn_is_paced_at_the_asked_rates_and_timed(clock: Clock) -> None:
    r = run_churn(fake(), job(mr=1000, qp=200), Sync(clock))
    assert r.errors == ()
    # operation k is due k / rate after the interval opened: 0.1 s holds exactly 100 MRs and 20 QPs
    assert (r.mr.ops, r.qp.ops) == (100, 20)
    assert r.mr.rate == pytest.approx(1000) and r.qp.rate == pytest.approx(200)
    assert r.mr.asked == 1000 and r.qp.asked == 200
    # each operation costs the fake's control cost plus the clock readings inside it
    for s in (r.mr, r.qp):
        assert COST_S * 1e6 <= s.mean_us <= s.p99_us < COST_S * 1e6 + 10
    assert "mr 1000/s asked, 1000/s done" in r.line() and "qp 200/s asked" in r.line()


def test_a_device_slower_than_asked_bounds_the_achieved_rate(clock: Clock) -> None:
    r = run_churn(fake(), job(mr=100_000), Sync(clock))
    # 50 µs per registration: about 20,000/s, not 100,000/s, and the churn stops at the interval's end
    assert 0.9 * 20_000 <= r.mr.rate <= 20_000
    assert r.qp.ops == 0 and r.qp.mean_us == 0.0 and "qp" not in r.line()


def test_a_failing_registration_stops_the_churn_with_one_sentence(clock: Clock,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fakeverbs, "MR_BUDGET", [5])
    r = run_churn(fake(), job(mr=1000, qp=100), Sync(clock))
    assert r.mr.ops == 5
    (err,) = r.errors
    assert err.startswith("flow 0 client churn: registering a 64 KiB MR failed after 5 operations:")
    assert "ENOMEM" in err


def test_a_churn_job_per_churning_end() -> None:
    flows = [(0, Flow(A, B), True, True), (1, Flow(A, B, mr_churn=10, mr_size=4096), True, True),
             (2, Flow(A, B, qp_churn=5), False, True)]
    jobs = churn_jobs(flows, SPEC, 0.1, 1.0)
    assert [(j.flow_index, j.side, j.mr_churn, j.mr_size, j.qp_churn) for j in jobs] == [
        (1, "client", 10, 4096, 0), (1, "server", 10, 4096, 0), (2, "server", 0, 65536, 5)]


LIM = DeviceLimits(max_qp=1000, max_qp_wr=1 << 15, max_sge=32, max_sge_rd=32, max_cq=1 << 16, max_cqe=1 << 15,
                   max_mr=5000, max_pd=1 << 16, max_mr_size=1 << 40, max_qp_rd_atom=16, atomics=True,
                   active_mtu=4096, max_mtu=4096, available_memory_bytes=1 << 30)


def one(**kw: Any) -> Workload:
    return Workload(flows=(Flow(A, B, **kw),))


def test_churn_the_device_cannot_hold_is_refused_naming_the_field() -> None:
    assert check_workload(one(mr_churn=1000, qp_churn=100), LIM) == []
    (p,) = check_workload(one(qps=100, qp_churn=450), LIM)
    assert p == "qp_churn 450 x 2 sides beside 200 QPs = 1100 QPs in a second > device max_qp 1000"
    (p,) = check_workload(one(sizes=(4096,), mr_churn=2500, mr_size=4096), LIM)
    assert p.startswith("mr_churn 2500 x 2 sides beside 2 MRs = 5002 MRs in a second > device max_mr 5000")
    # 2 x 2,000 x 1 MiB a second > half of 1 GiB
    (p,) = check_workload(one(mr_churn=2000, mr_size=1 << 20), LIM)
    assert "of MRs and a second of mr_churn > 50% of the host's available memory" in p
    # one host of a cross-host run: only the churning ends on its roles count
    assert check_workload(one(qps=100, qp_churn=450), LIM, roles=("a",)) == []
    (p,) = check_workload(one(qps=100, qp_churn=950), LIM, roles=("b",))
    assert p == "qp_churn of this host's flow ends 950 beside 100 QPs = 1050 QPs in a second > device max_qp 1000"
    (p,) = check_workload(one(mr_churn=5000), LIM, roles=("a",))
    assert p.startswith("mr_churn of this host's flow ends 5000 beside 1 MRs = 5001 MRs in a second > device max_mr")


@pytest.fixture
def target(tmp_path: Path) -> Iterator[VerbsTarget]:
    root = ttar_tree.make_rxe_tree(tmp_path / "rxe")
    collector = HostCollector("rxe0", 1, root=str(root), ethtool=SourceUse.OFF, netlink=SourceUse.OFF)
    with VerbsTarget(parse_spec("rxe0"), verify=True, warmup=0.02, pyverbs=fake(), collector=collector) as t:
        yield t
    assert multiprocessing.active_children() == []


def test_a_run_with_churn_reports_it_per_flow_and_in_the_details(target: VerbsTarget,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fakeverbs, "CONTROL_COST_S", [20e-6])
    w = Workload(flows=(Flow(A, B, sizes=(4096,)), Flow(B, A, sizes=(4096,), mr_churn=200, qp_churn=50)))
    r = target.run(w, 0.2)
    assert r.errors == ()
    plain, churned = r.flows
    assert plain.mr_churn_us == plain.qp_churn_us == 0.0 and "mr_churn_us" not in plain.to_dict()
    assert churned.mr_churn_us >= 20 and churned.qp_churn_us >= 20
    assert churned.to_dict()["mr_churn_us"] == churned.mr_churn_us
    details = target.last_details
    assert details is not None
    assert [(c.flow_index, c.side) for c in details.churn] == [(1, "client"), (1, "server")]
    for c in details.churn:
        assert c.mr.ops > 0 and c.qp.ops > 0 and 0 < c.mr.rate <= 200 * 1.05 and c.qp.p99_us >= c.qp.mean_us
    assert churned.mr_churn_us == pytest.approx(sum(c.mr.mean_us for c in details.churn) / 2)
    assert churned.mr_churn_per_s == pytest.approx(sum(c.mr.rate for c in details.churn) / 2)
    assert churned.qp_churn_p99_us == max(c.qp.p99_us for c in details.churn) >= churned.qp_churn_us
    assert not any(k.startswith(("mr_churn", "qp_churn")) for k in plain.to_dict())
    assert all(s.verified for s in details.summaries)


def test_a_churn_worker_that_fails_fails_the_run(target: VerbsTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fakeverbs, "MR_BUDGET", [3])  # per process (each forks its own copy)
    r = target.run(one(sizes=(4096,), mr_churn=100), 0.1)
    assert [e for e in r.errors if "churn" in e] == [
        f"flow 0 {side} churn: registering a 64 KiB MR failed after 3 operations: ibv_reg_mr failed: errno 12 "
        "(ENOMEM)" for side in ("client", "server")], r.errors


def test_a_churn_worker_whose_device_is_gone_raises_and_is_reaped(target: VerbsTarget,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def gone(self: Any) -> None:
        raise fakeverbs.FakeError("ibv_open_device failed: errno 19 (ENODEV)")

    monkeypatch.setattr(churn._Device, "open", gone)
    with pytest.raises(TargetError, match="a verbs worker failed: FakeError: ibv_open_device failed"):
        target.run(one(sizes=(4096,), qp_churn=10), 0.1)


def test_ctrl_c_reaps_every_worker(target: VerbsTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(self: Any, timeout_s: float) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(workers.WorkerPool, "gather", interrupted)
    with pytest.raises(KeyboardInterrupt):
        target.run(one(sizes=(4096,), mr_churn=100, qp_churn=10), 5.0)
    assert multiprocessing.active_children() == []
