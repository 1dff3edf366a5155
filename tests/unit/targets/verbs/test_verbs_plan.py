"""WR planning: SGE layout, slot cycles, signalling, QP spreading, prefix sums."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collie.targets.verbs.plan import (
    CycleSums,
    WrCycle,
    packets_per_message,
    sge_layout,
    signal_positions,
    split_qps,
)


@given(size=st.integers(1, 1 << 20), sges=st.integers(1, 32))
def test_sge_layout_tiles_the_message(size: int, sges: int) -> None:
    if sges > size:
        with pytest.raises(ValueError):
            sge_layout(size, sges)
        return
    layout = sge_layout(size, sges)
    assert len(layout) == sges
    off = 0
    for o, n in layout:
        assert o == off and n >= 1
        off += n
    assert off == size
    lengths = [n for _, n in layout]
    assert max(lengths) - min(lengths) <= 1


def test_sge_layout_example() -> None:
    assert sge_layout(10, 3) == ((0, 4), (4, 3), (7, 3))


@given(n=st.integers(1, 8), batch=st.integers(1, 256), mrs=st.integers(1, 100_000))
def test_cycle_is_whole_chains_and_whole_size_periods(n: int, batch: int, mrs: int) -> None:
    sizes = tuple(64 * (i + 1) for i in range(n))
    c = WrCycle.for_flow(sizes, batch, mrs)
    assert c.length % batch == 0 and c.length % n == 0
    assert c.length >= math.lcm(batch, n)
    assert c.length <= max(65536, math.lcm(batch, n))
    if mrs * 1 <= 65536 // math.lcm(batch, n) * math.lcm(batch, n):
        assert c.mrs_touched == mrs
    # every chain keeps the same sizes each time round the cycle
    for j in range(0, c.length, max(1, c.length // 7)):
        assert c.slot_size(j) == c.slot_size(j + c.length)


def test_cycle_covers_mrs_and_caps() -> None:
    c = WrCycle.for_flow((64,), 8, 100)
    assert c.length == 104 and c.chains == 13 and c.mrs_touched == 100
    big = WrCycle.for_flow((64,), 8, 10_000_000, cap=1024)
    assert big.length == 1024 and big.mrs_touched == 1024
    assert [big.slot_mr(j) for j in (0, 1, 1023)] == [0, 1, 1023]


def test_signal_every_wr_and_every_fourth() -> None:
    assert signal_positions(0, 4, 1, 128, 0) == (0, 1, 2, 3)
    assert signal_positions(0, 8, 4, 128, 0) == (3, 7)
    assert signal_positions(2, 4, 4, 128, 0) == (1,)


def test_signal_forced_when_the_queue_would_stall() -> None:
    # depth 6, batch 4, one completion every 5: after 4 unsignalled WRs no other chain fits and nothing
    # signalled is in flight, so the chain's last WR must be signalled.
    assert signal_positions(0, 4, 5, 6, 0) == (3,)
    # batch 3, every 2, depth 3: WR 1 is signalled, but WR 2 would be left over with no room for a chain.
    assert signal_positions(0, 3, 2, 3, 0) == (1, 2)
    # ...but not when another chain still fits after the unsignalled tail.
    assert signal_positions(0, 4, 5, 64, 0) == ()
    assert signal_positions(0, 3, 2, 64, 0) == (1,)


@given(batch=st.integers(1, 16), every=st.integers(1, 64), extra=st.integers(0, 64))
def test_simulated_queue_never_deadlocks(batch: int, every: int, extra: int) -> None:
    """Model a QP: post whenever a chain fits, complete the oldest signalled WR otherwise. Progress must
    never stop (the property signal_positions exists for)."""
    depth = max(batch, every) + extra
    seq = done = 0
    sig: list[int] = []
    for _ in range(300):
        if seq - done + batch <= depth:
            pos = signal_positions(seq, batch, every, depth, sig[-1] if sig else done)
            sig.extend(seq + p + 1 for p in pos)
            seq += batch
        else:
            assert sig, (batch, every, depth, seq, done)
            done = sig.pop(0)


@given(qps=st.integers(1, 5000), workers=st.integers(1, 64))
def test_split_qps(qps: int, workers: int) -> None:
    if workers > qps:
        with pytest.raises(ValueError):
            split_qps(qps, workers)
        return
    parts = split_qps(qps, workers)
    assert sum(parts) == qps and len(parts) == workers and min(parts) >= 1
    assert max(parts) - min(parts) <= 1


def test_packets_per_message() -> None:
    assert packets_per_message(1, 4096) == 1
    assert packets_per_message(4096, 4096) == 1
    assert packets_per_message(4097, 4096) == 2
    assert packets_per_message(65536, 1024) == 64


def test_cycle_carries_each_requests_own_opcode_and_atomics_8_bytes() -> None:
    c = WrCycle.for_flow((129, 4097), 3, 2, opcodes=("READ", "WRITE", "ATOMIC_FA"))
    assert c.length % math.lcm(3, 2, 3) == 0
    assert [(c.slot_opcode(j), c.slot_size(j)) for j in range(6)] == [
        ("READ", 129), ("WRITE", 4097), ("ATOMIC_FA", 8), ("READ", 4097), ("WRITE", 129), ("ATOMIC_FA", 8)]
    assert c.slots_of(frozenset(("ATOMIC_FA",))) == tuple(range(2, c.length, 3))
    atomics = frozenset(("ATOMIC_FA",))
    for seq in (0, 1, 3, 5, 6, 7, 100):
        assert c.count(atomics, seq) == sum(1 for s in range(seq) if c.slot_opcode(s % c.length) == "ATOMIC_FA")


@given(a=st.integers(0, 10_000), n=st.integers(0, 10_000))
def test_cycle_sums_match_brute_force(a: int, n: int) -> None:
    c = WrCycle.for_flow((64, 4096, 9000), 4, 5)
    s = CycleSums.of(c, 4096)
    b = a + n
    assert s.bytes(a, b) == sum(c.slot_size(k % c.length) for k in range(a, b))
    assert s.packets(a, b) == sum(packets_per_message(c.slot_size(k % c.length), 4096) for k in range(a, b))
