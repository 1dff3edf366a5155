"""The real resources and engine code on a fake pyverbs (see fakeverbs): counting, signalling, verification."""

from __future__ import annotations

import pytest

from collie.targets.verbs.engine import run_job
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.spec import VerbsSpec
from collie.workload import Endpoint, Flow
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")


def job(flow: Flow, verify: bool = True, duration: float = 0.1) -> WorkerJob:
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0)
    return WorkerJob(worker=0, spec=VerbsSpec("fake0"), shares=(share,), timing=Timing(0.02, duration, 2.0),
                     verify=verify, seed=1)


@pytest.mark.parametrize("flow", [
    Flow(A, B, sizes=(4096,)),
    Flow(A, B, sizes=(64, 1000, 4096), sges=4, batch=3, signal_every=2, sq_depth=3, qps=3, mrs=2),
    Flow(A, B, opcode="READ", sizes=(8192,), sges=2, batch=8, signal_every=8),
    Flow(A, B, opcode="SEND", sizes=(512, 2048), batch=4, signal_every=4, rq_depth=16, qps=2),
    Flow(A, B, opcode="WRITE_IMM", sizes=(256,), batch=2, signal_every=5, sq_depth=8),
    Flow(A, B, transport="UD", opcode="SEND", sizes=(1024,), mtu=1024, batch=8, signal_every=8),
    Flow(A, B, opcode="ATOMIC_FA", sizes=(8,), batch=4, signal_every=4, mrs=3),
], ids=["write", "write-mix-odd-signal", "read", "send", "write-imm", "ud-send", "fetch-add"])
def test_engine_counts_and_verifies_on_the_fake_device(flow: Flow) -> None:
    report = run_job(fake(), job(flow))
    assert report.errors == ()
    (s,) = report.stats
    assert s.verified and not s.verify_errors, s.verify_errors
    assert s.wrs > 0 and s.bytes > 0 and s.packets >= s.wrs
    assert s.lat_ns and s.loops > 0
    assert abs(s.seconds - 0.1) < 0.05


def test_verification_catches_corrupted_data(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.targets.verbs import fakeverbs

    original = fakeverbs.FakeQP.post_send

    def corrupt(self: fakeverbs.FakeQP, wr: fakeverbs.FakeSendWR) -> None:
        original(self, wr)
        mem, off = fakeverbs._slice(wr.remote[1], 1)
        mem[off + 5] ^= 0xFF

    monkeypatch.setattr(fakeverbs.FakeQP, "post_send", corrupt)
    (s,) = run_job(fake(), job(Flow(A, B, sizes=(64,)))).stats
    assert not s.verified
    assert s.verify_errors and "byte 5" in s.verify_errors[0]


def test_bytes_follow_the_size_vector() -> None:
    (s,) = run_job(fake(), job(Flow(A, B, sizes=(100, 300), batch=2, signal_every=2), verify=False)).stats
    # every completed chain carries one 100 B and one 300 B message
    assert s.bytes == s.wrs // 2 * 400
