"""What data verification expects of every opcode's buffers (pure: no pyverbs needed).

Payload moves two ways. *Pushes* (WRITE, WRITE_IMM, SEND, SEND_IMM) gather the prefix ``[0, size)`` of a client
MR and land it at the prefix of a server MR (a receive WQE's SGEs tile ``[0, max_size)`` of its server MR, so a
SEND lands there too). *Pulls* (READ) gather the prefix of a server MR and land it at the prefix of a client
buffer. Each direction has its own pattern (:func:`push_pattern`, :func:`pull_pattern`), both free of zero bytes
and different from each other at every byte:

* client MRs hold the push pattern, server MRs the pull pattern when the flow pulls (zeros otherwise); pushes
  overwrite a server MR's prefix with the push pattern, so a server MR ends as push pattern up to the longest
  push that landed, then untouched bytes (:func:`check_pushed`);
* a pull lands in the client's MRs when the flow only pulls, in a landing buffer of its own when it also
  pushes (a READ racing a WRITE on the same server bytes may bring either pattern, byte by byte), zeroed
  first, so it ends as bytes of either pattern up to the longest pull, then zeros (:func:`check_pulled`).

Atomics operate on counters of their own (one FETCH_AND_ADD and one CMP_AND_SWP counter per share, in a server
MR apart) and land the value they fetched in a client slot per WR slot, which starts at :data:`UNFETCHED`:

* fetch-add adds :data:`ADDEND`: the final counter is the number of adds times the addend, every fetched value is
  a distinct multiple of the addend below it, the largest is the final value minus one addend, and on one QP
  (atomics on a QP execute in order) the values of the latest pass over the slots rise in posting order
  (:func:`check_fetch_add`);
* compare-and-swap slot ``k`` (the ``k``-th CMP_AND_SWP of the cycle, ``c`` of them) swaps ``k`` for
  ``(k + 1) % c``: the swaps that succeed form a chain ``0 -> 1 -> ... -> c-1 -> 0``, so every fetched value and
  the final counter lie on it, and on one QP every swap succeeds and the counter ends at the number of swaps
  mod ``c`` (:func:`check_compare_swap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

from collie.model.flow import Flow

#: Opcodes that move payload from the client's MR to the server's.
PUSH_OPCODES: Final = frozenset(("WRITE", "WRITE_IMM", "SEND", "SEND_IMM"))
#: Opcodes that move payload from the server's MR to the client's.
PULL_OPCODES: Final = frozenset(("READ",))
#: What every fetch-add adds.
ADDEND: Final = 1
#: What a fetch slot holds before its WR ever executed (no counter of a run reaches it).
UNFETCHED: Final = (1 << 64) - 1
#: Offsets of the two counters in the server's atomic MR, and its size.
FA_OFFSET: Final = 0
CS_OFFSET: Final = 8
COUNTERS_BYTES: Final = 16


def push_pattern(n: int, flow_index: int) -> bytes:
    """The ``n``-byte pattern pushes carry: no zero byte (a zero marks "not written")."""
    return (1 + (np.arange(n, dtype=np.int64) * 7 + flow_index * 13) % 251).astype(np.uint8).tobytes()


def pull_pattern(n: int, flow_index: int) -> bytes:
    """The ``n``-byte pattern pulls carry: no zero byte, and unlike :func:`push_pattern` at every byte."""
    push = np.frombuffer(push_pattern(n, flow_index), dtype=np.uint8).astype(np.int64)
    return (1 + (push - 1 + 125) % 251).astype(np.uint8).tobytes()


def _first(mask: np.ndarray) -> int:
    """Index of the first True of ``mask``, its length when there is none."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else len(mask)


def longest(flow: Flow, opcodes: frozenset[str]) -> int:
    """The largest payload of the flow's requests with an opcode in ``opcodes`` (0: none)."""
    return max((size for op, size in flow.requests() if op in opcodes), default=0)


def pulls_land_apart(flow: Flow) -> bool:
    """READs land in a client buffer of their own: the flow's client MRs are also the source of pushes."""
    return bool(longest(flow, PULL_OPCODES) and longest(flow, PUSH_OPCODES))


def check_pushed(data: bytes, push: bytes, untouched: bytes) -> tuple[str | None, int]:
    """Check a server MR's first ``len(push)`` bytes: the push pattern up to some length, then ``untouched``.

    Returns:
        (the first problem as a phrase or ``None``, the length of the push-pattern prefix).
    """
    n = len(push)
    got = np.frombuffer(data, dtype=np.uint8, count=n)
    want, rest = np.frombuffer(push, dtype=np.uint8), np.frombuffer(untouched, dtype=np.uint8, count=n)
    w = _first(got != want)
    bad = w + _first(got[w:] != rest[w:])
    if bad < n:
        if bad == w or got[bad] not in (want[bad], rest[bad]):
            return f"byte {bad} is {got[bad]}, expected {want[bad]}", w
        return f"has a gap at byte {w}: data after it was written", w
    return None, w


def check_pulled(data: bytes, pull: bytes, push: bytes | None) -> tuple[str | None, int]:
    """Check a pull destination's first ``len(pull)`` bytes: bytes of the pull pattern (or, when ``push`` is
    given, of either pattern) up to some length, then zeros.

    Returns:
        (the first problem as a phrase or ``None``, the length before the first zero).
    """
    n = len(pull)
    got = np.frombuffer(data, dtype=np.uint8, count=n)
    want = np.frombuffer(pull, dtype=np.uint8)
    w = _first(got == 0)
    wrong = got[:w] != want[:w]
    if push is not None:
        wrong &= got[:w] != np.frombuffer(push, dtype=np.uint8, count=w)
    bad = _first(wrong)
    if bad < w:
        return f"byte {bad} is {got[bad]}, expected {want[bad]}", w
    if np.count_nonzero(got[w:]):
        return f"has a gap at byte {w}: data after it was written", w
    return None, w


def check_fetch_add(final: int, adds: int, fetched: Sequence[int], in_order: bool) -> str | None:
    """Check a fetch-add counter after ``adds`` adds of :data:`ADDEND`; ``fetched``: the values the slots
    fetched in their latest execution (:data:`UNFETCHED` for a slot that never ran), in posting order of that
    latest pass when ``in_order`` (one QP)."""
    if final != adds * ADDEND:
        return f"fetch-add counter holds {final}, expected {adds} adds x {ADDEND} = {adds * ADDEND}"
    seen = [v for v in fetched if v != UNFETCHED]
    if len(set(seen)) != len(seen):
        return "fetch-add fetched the same value twice"
    odd = [v for v in seen if v % ADDEND or v >= final]
    if odd:
        return f"fetch-add fetched {odd[0]}, not a multiple of {ADDEND} below the final {final}"
    if seen and max(seen) != final - ADDEND:
        return f"the last fetch-add fetched {max(seen)}, expected {final - ADDEND}"
    if in_order and seen != sorted(seen):
        return "fetch-adds on one QP fetched values out of posting order"
    return None


def check_compare_swap(final: int, swaps: int, fetched: Sequence[int], one_qp: bool) -> str | None:
    """Check a compare-and-swap counter after ``swaps`` swaps along the chain of ``len(fetched)`` slots
    (see the module docstring); ``one_qp``: every swap was posted on one QP, so every one succeeded."""
    c = len(fetched)
    if not c:
        return None
    if not 0 <= final < c:
        return f"compare-swap counter holds {final}, not a value of the chain 0..{c - 1}"
    off = [(k, v) for k, v in enumerate(fetched) if v != UNFETCHED and not 0 <= v < c]
    if off:
        return f"compare-swap slot {off[0][0]} fetched {off[0][1]}, not a value of the chain 0..{c - 1}"
    if one_qp:
        failed = [k for k, v in enumerate(fetched) if v not in (k, UNFETCHED)]
        if failed:
            return f"compare-swap slot {failed[0]} on one QP fetched {fetched[failed[0]]}, expected {failed[0]}"
        if final != swaps % c:
            return f"compare-swap counter holds {final}, expected {swaps} swaps mod {c} = {swaps % c}"
    return None
