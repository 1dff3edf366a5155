"""The real resources and engine code on a fake pyverbs (see fakeverbs): counting, signalling, verification."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from collie.model.flow import Endpoint, Flow
from collie.targets.verbs import engine, worker
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.spec import VerbsSpec
from collie.targets.verbs.worker import run_job
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")


WARMUP, DURATION = 0.02, 0.1


def job(flow: Flow, verify: bool = True, duration: float = DURATION) -> WorkerJob:
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0)
    return WorkerJob(worker=0, spec=VerbsSpec("fake0"), shares=(share,), timing=Timing(WARMUP, duration, 2.0),
                     verify=verify, seed=1)


#: Nanoseconds the engine's clock advances at each reading: not a divisor of the measured interval, so an interval that
#: is a multiple of it was measured between two readings, not copied from the configured duration.
TICK = 49_999
#: Clock readings one loop iteration of these flows may take (the loop's own, timed posts, polls): the most by
#: which the engine can notice an edge late.
ITERATION_READINGS = 16


class SteppingClock:
    """The ``time`` module as the engine sees it, with a monotonic clock that advances :data:`TICK` ns at every
    reading (and by the time slept): a run is a pure function of the engine's own steps, whatever the load."""

    def __init__(self) -> None:
        self.now = 1_000_000_000_000

    def monotonic_ns(self) -> int:
        self.now += TICK
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def stepping(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine and its worker read one :class:`SteppingClock`."""
    clock = SteppingClock()
    monkeypatch.setattr(engine, "time", clock)
    monkeypatch.setattr(worker, "time", clock)


#: Flow shapes every loop must count and verify (the native loop's tests run them too).
FLOWS = [
    Flow(A, B, sizes=(4096,)),
    Flow(A, B, sizes=(64, 1000, 4096), sges=4, batch=3, signal_every=2, sq_depth=3, qps=3, mrs=2),
    Flow(A, B, opcodes=("READ",), sizes=(8192,), sges=2, batch=8, signal_every=8),
    Flow(A, B, opcodes=("SEND",), sizes=(512, 2048), batch=4, signal_every=4, rq_depth=16, qps=2),
    Flow(A, B, opcodes=("WRITE_IMM",), sizes=(256,), batch=2, signal_every=5, sq_depth=8),
    Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(1024,), mtu=1024, batch=8, signal_every=8),
    Flow(A, B, opcodes=("ATOMIC_FA",), sizes=(8,), batch=4, signal_every=4, mrs=3),
    Flow(A, B, opcodes=("ATOMIC_CS",), sizes=(8,), batch=3, signal_every=3),
    Flow(A, B, opcodes=("ATOMIC_FA", "ATOMIC_CS"), sizes=(8,), batch=4, signal_every=2, qps=3),
    Flow(A, B, opcodes=("READ", "WRITE"), sizes=(1, 129, 4097), batch=4, signal_every=4, mrs=2, mr_size=4097),
    Flow(A, B, opcodes=("WRITE_IMM", "READ", "ATOMIC_FA", "SEND"), sizes=(129, 4097), sges=1, batch=4,
         signal_every=4, mr_size=8192),
    Flow(A, B, opcodes=("SEND",), sizes=(4097, 1), sges=1, rq_depth=12, sq_depth=64, recv_batch=3, recv_sges=4),
    Flow(A, B, transport="UC", opcodes=("WRITE", "SEND_IMM"), sizes=(129,), batch=2, signal_every=2),
]
IDS = ["write", "write-mix-odd-signal", "read", "send", "write-imm", "ud-send", "fetch-add", "compare-swap",
       "both-atomics-3-qps", "read-write-mix-odd-sizes", "four-opcodes", "recv-batch-sges", "uc-write-send-imm"]


@pytest.mark.parametrize("flow", FLOWS, ids=IDS)
def test_engine_counts_and_verifies_on_the_fake_device(flow: Flow, monkeypatch: pytest.MonkeyPatch) -> None:
    stepping(monkeypatch)
    report = run_job(fake(), job(flow))
    assert report.errors == ()
    (s,) = report.stats
    assert s.verified and not s.verify_errors, s.verify_errors
    assert s.wrs > 0 and s.bytes > 0 and s.packets >= s.wrs
    assert s.lat_ns and s.loops > 0
    # The measured interval is the one between the engine's two edges: two clock readings (a whole number of
    # ticks), the first after the warm-up, the second after the deadline, each noticed within one loop
    # iteration. The clock only moves when the engine reads it, so no load on the machine can change this.
    interval = round(s.seconds * 1e9)
    assert interval % TICK == 0, interval
    assert abs(interval - DURATION * 1e9) <= ITERATION_READINGS * TICK, interval


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


def posted_opcodes(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Record the opcodes of every post list the fake device sees."""
    from tests.unit.targets.verbs import fakeverbs

    lists: list[list[int]] = []
    original = fakeverbs.FakeQP.post_send

    def post_send(self: fakeverbs.FakeQP, wr: fakeverbs.FakeSendWR) -> None:
        ops, w = [], wr
        while w is not None:
            ops.append(w.opcode)
            w = w.next_wr  # type: ignore[assignment]
        lists.append(ops)
        original(self, wr)

    monkeypatch.setattr(fakeverbs.FakeQP, "post_send", post_send)
    return lists


def test_one_post_list_carries_each_requests_own_opcode(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.targets.verbs.fakeverbs import E

    lists = posted_opcodes(monkeypatch)
    flow = Flow(A, B, opcodes=("READ", "WRITE", "ATOMIC_CS"), sizes=(129,), batch=3, signal_every=3)
    (s,) = run_job(fake(), job(flow)).stats
    assert s.verified, s.verify_errors
    traffic = [ops for ops in lists if len(ops) == 3]
    assert traffic and all(ops == [E.IBV_WR_RDMA_READ, E.IBV_WR_RDMA_WRITE, E.IBV_WR_ATOMIC_CMP_AND_SWP]
                           for ops in traffic)
    # after the drain, one READ fetched the atomic counters back
    assert lists[-1] == [E.IBV_WR_RDMA_READ]


@pytest.mark.parametrize(("opcode", "tamper", "message"), [
    ("ATOMIC_FA", lambda old, add, swap: old + add + 1, "fetch-add counter holds"),
    ("ATOMIC_CS", lambda old, cmp, swap: swap + 5 if old == cmp else old, "compare-swap"),
])
def test_verification_catches_wrong_atomics(monkeypatch: pytest.MonkeyPatch, opcode: str, tamper: Any,
                                            message: str) -> None:
    from tests.unit.targets.verbs import fakeverbs

    original = fakeverbs.FakeQP._execute

    def execute(self: fakeverbs.FakeQP, wr: fakeverbs.FakeSendWR, flags: int) -> bool:
        if wr.opcode not in (fakeverbs.E.IBV_WR_ATOMIC_FETCH_AND_ADD, fakeverbs.E.IBV_WR_ATOMIC_CMP_AND_SWP):
            return original(self, wr, flags)
        mem, off = fakeverbs._slice(wr.remote[1], 8)
        old = int.from_bytes(mem[off:off + 8], "little")
        mem[off:off + 8] = tamper(old, *wr.atomic).to_bytes(8, "little")
        fakeverbs._scatter(wr.sg, old.to_bytes(8, "little"))
        if flags & fakeverbs.E.IBV_SEND_SIGNALED:
            self.scq.q.append(fakeverbs._wc(self.qp_num, wr.wr_id))
        return True

    monkeypatch.setattr(fakeverbs.FakeQP, "_execute", execute)
    (s,) = run_job(fake(), job(Flow(A, B, opcodes=(opcode,), sizes=(8,), batch=2, signal_every=2))).stats
    assert not s.verified
    assert s.verify_errors and message in s.verify_errors[0], s.verify_errors


def test_verification_catches_a_read_that_brought_the_wrong_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.targets.verbs import fakeverbs

    original = fakeverbs.FakeQP._execute

    def execute(self: fakeverbs.FakeQP, wr: fakeverbs.FakeSendWR, flags: int) -> bool:
        done = original(self, wr, flags)
        if wr.opcode == fakeverbs.E.IBV_WR_RDMA_READ:
            mem, off = fakeverbs._slice(wr.sg[0][0], 1)
            mem[off + 100] = 0xEE
        return done

    monkeypatch.setattr(fakeverbs.FakeQP, "_execute", execute)
    flow = Flow(A, B, opcodes=("WRITE", "READ"), sizes=(129,), batch=2, signal_every=2)
    (s,) = run_job(fake(), job(flow)).stats
    assert not s.verified and "READ destination 0 byte 100 is 238" in s.verify_errors[0], s.verify_errors


def test_receives_go_in_post_lists_of_recv_batch_with_recv_sges_each(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.targets.verbs import fakeverbs

    lists: list[list[int]] = []
    original = fakeverbs.FakeQP.post_recv

    def post_recv(self: fakeverbs.FakeQP, wr: fakeverbs.FakeRecvWR) -> None:
        sges, w = [], wr
        while w is not None:
            sges.append(len(w.sg))
            w = w.next_wr  # type: ignore[assignment]
        lists.append(sges)
        original(self, wr)

    monkeypatch.setattr(fakeverbs.FakeQP, "post_recv", post_recv)
    flow = Flow(A, B, opcodes=("SEND",), sizes=(100,), rq_depth=10, sq_depth=64, recv_batch=3, recv_sges=5)
    (s,) = run_job(fake(), job(flow)).stats
    assert s.verified, s.verify_errors
    assert len(lists) > 3 and all(sges == [5, 5, 5] for sges in lists)
    # the queue starts as full as whole post lists allow: 3 lists of 3 in a queue of 10
    assert lists[:3] == [[5, 5, 5]] * 3


def test_a_slow_receiver_draws_rnr_naks_and_the_run_still_completes(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.targets.verbs import fakeverbs

    stepping(monkeypatch)
    flow = Flow(A, B, opcodes=("SEND",), sizes=(64,), batch=4, signal_every=4, sq_depth=16, rq_depth=4,
                recv_batch=2)
    fakeverbs.RNR_NAKS[0] = 0
    (fast,) = run_job(fake(), job(flow)).stats
    assert fast.verified and fakeverbs.RNR_NAKS[0] == 0
    slow = replace(flow, recv_delay_us=2000)
    report = run_job(fake(), job(slow))
    (s,) = report.stats
    assert report.errors == () and s.verified, (report.errors, s.verify_errors)
    assert fakeverbs.RNR_NAKS[0] > 0  # the sender found the receive queue empty
    # paced: at most one post list of 2 per 2 ms, so about 1000 receives per second
    assert s.wrs / s.seconds <= 1.2 * 2 / 0.002
    assert s.wrs < fast.wrs
