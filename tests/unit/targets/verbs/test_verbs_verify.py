"""What verification expects of every opcode's buffers (pure functions) and the receiver's RNR timer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from collie.model.flow import Endpoint, Flow
from collie.targets.verbs.resources import PACED_STALL_S, RNR_RETRY, RNR_STALL_S, RNR_TIMERS, rnr_timer
from collie.targets.verbs.verify import (
    UNFETCHED,
    check_compare_swap,
    check_fetch_add,
    check_pulled,
    check_pushed,
    pull_pattern,
    pulls_land_apart,
    push_pattern,
)

A, B = Endpoint("a"), Endpoint("b")


@given(n=st.integers(1, 5000), flow=st.integers(0, 1000))
def test_patterns_have_no_zero_and_differ_at_every_byte(n: int, flow: int) -> None:
    push, pull = push_pattern(n, flow), pull_pattern(n, flow)
    assert 0 not in push and 0 not in pull
    assert all(a != b for a, b in zip(push, pull, strict=True))


def test_a_server_mr_is_the_push_pattern_then_untouched_bytes() -> None:
    push, pull = push_pattern(4097, 1), pull_pattern(4097, 1)
    assert check_pushed(push[:129] + pull[129:], push, pull) == (None, 129)
    assert check_pushed(push, push, bytes(4097)) == (None, 4097)
    problem, _ = check_pushed(push[:129] + bytes(10) + push[139:], push, bytes(4097))
    assert problem == "has a gap at byte 129: data after it was written"
    bad = bytearray(push)
    bad[7] = 0xFF if push[7] != 0xFF else 0xFE
    assert check_pushed(bytes(bad), push, bytes(4097))[0] == f"byte 7 is {bad[7]}, expected {push[7]}"


def test_a_read_destination_holds_bytes_of_either_pattern_then_zeros() -> None:
    push, pull = push_pattern(129, 2), pull_pattern(129, 2)
    mixed = bytes(p if i % 3 else q for i, (p, q) in enumerate(zip(push, pull, strict=True)))
    assert check_pulled(mixed, pull, push) == (None, 129)
    assert check_pulled(mixed, pull, None)[0] is not None  # a pure READ flow's server never changes
    assert check_pulled(pull[:1] + bytes(128), pull, None) == (None, 1)


def test_fetch_add_checks_the_count_and_the_fetched_values() -> None:
    assert check_fetch_add(5, 5, [2, 3, 4, UNFETCHED], in_order=True) is None
    assert "expected 6 adds" in (check_fetch_add(5, 6, [4], in_order=False) or "")
    assert check_fetch_add(5, 5, [3, 3, 4], in_order=False) == "fetch-add fetched the same value twice"
    assert "the last fetch-add fetched 3" in (check_fetch_add(5, 5, [2, 3], in_order=False) or "")
    assert "out of posting order" in (check_fetch_add(5, 5, [4, 3], in_order=True) or "")
    assert check_fetch_add(5, 5, [4, 3], in_order=False) is None  # several QPs interleave


def test_compare_swap_successes_form_a_chain() -> None:
    assert check_compare_swap(2, 5, [0, 1, 2], one_qp=True) is None  # 5 swaps along 0 -> 1 -> 2 -> 0
    assert "expected 5 swaps mod 3 = 2" in (check_compare_swap(1, 5, [0, 1, 2], one_qp=True) or "")
    assert "slot 1 on one QP fetched 0" in (check_compare_swap(2, 5, [0, 0, 2], one_qp=True) or "")
    assert check_compare_swap(0, 9, [1, 1, 2], one_qp=False) is None  # failed swaps on other QPs' turns
    assert "not a value of the chain" in (check_compare_swap(7, 9, [0, 1, 2], one_qp=False) or "")


def test_reads_land_apart_only_when_the_flow_also_pushes() -> None:
    assert not pulls_land_apart(Flow(A, B, opcodes=("READ",)))
    assert not pulls_land_apart(Flow(A, B, opcodes=("READ", "ATOMIC_FA")))
    assert pulls_land_apart(Flow(A, B, opcodes=("READ", "SEND")))


def test_the_rnr_timer_outlasts_the_receivers_delay() -> None:
    waits = dict(RNR_TIMERS)
    assert rnr_timer(0) == 20 and RNR_RETRY * waits[20] >= RNR_STALL_S  # 10.24 ms: the engine's own stalls
    for delay_us in (1, 500, 20_000, 100_000, 1_000_000):
        code = rnr_timer(delay_us)
        assert RNR_RETRY * waits[code] >= 2 * delay_us * 1e-6 + PACED_STALL_S
    assert rnr_timer(10_000_000) == 0  # the longest there is (655 ms)
