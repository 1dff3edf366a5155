"""Planning of work requests (pure: no pyverbs needed).

The engine posts chains ("post lists") of ``batch`` work requests. Work request objects are built once and
reused (pyverbs leaks their buffers on every release), so everything a WR carries that does not change per
post is fixed here:

* **Slots.** The WRs of a flow walk a cycle of :attr:`WrCycle.length` slots; slot ``j`` is request ``j`` of
  the flow (``Flow.request``): opcode ``opcodes[j % len(opcodes)]`` carrying ``sizes[j % len(sizes)]`` bytes
  (an atomic: 8 B) from and to MR ``j % mrs``. The cycle is a multiple of ``batch`` and of both patterns'
  lengths, so chain ``c`` (slots ``c*batch .. c*batch+batch-1``) always has the same opcodes and sizes; it is
  long enough to touch every MR unless that would exceed :data:`MAX_CYCLE_WRS` WRs.
* **SGE layout.** A message is split over its SGEs contiguously from offset 0 of its MR, the first
  ``size % sges`` SGEs one byte longer: the gathered message is exactly ``mr[0:size]``, and so is the
  scattered one on the other side, which makes data verification a prefix comparison.
* **Signalling.** WR ``seq`` of a QP is signalled when ``(seq + 1) % signal_every == 0``; in addition the
  last WR of a chain is signalled when the unsignalled WRs after the last signalled one would leave no room
  for another chain (otherwise the QP would wait forever for a completion that never comes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, NamedTuple

from collie.model.flow import ATOMIC_BYTES, ATOMIC_OPCODES

#: Most WR slots of one flow's cycle (bounds WR objects per worker; MRs beyond the cycle are registered but
#: carry no traffic).
MAX_CYCLE_WRS: Final = 65536


#: One scatter/gather element: (address, length, lkey).
Sge = tuple[int, int, int]
#: Where a WR goes: (remote address, rkey, compare_add, swap, UD remote QPN, UD remote Q_Key).
Remote = tuple[int, int, int, int, int, int]
NO_REMOTE: Final[Remote] = (0, 0, 0, 0, 0, 0)


class SendDesc(NamedTuple):
    """One send work request, described: what both loops build their own WRs from (pyverbs ``SendWR`` objects
    for the Python loop, ``struct ibv_send_wr`` for the native one). ``opcode`` and ``flags`` are the verbs
    enum values; ``op`` the flow's name of the opcode (``WRITE``, ``ATOMIC_FA``, ...)."""

    wr_id: int
    opcode: int
    flags: int
    imm_data: int
    sges: tuple[Sge, ...]
    remote_addr: int
    rkey: int
    compare_add: int
    swap: int
    remote_qpn: int
    remote_qkey: int
    op: str = "WRITE"

    def native(self) -> tuple[int, int, int, int, tuple[Sge, ...], int, int, int, int, int, int]:
        """The fields the native loop takes (``_native.Loop.add_chain``), in its order."""
        return self[:11]


class RecvDesc(NamedTuple):
    """One receive work request, described (see :class:`SendDesc`)."""

    wr_id: int
    sges: tuple[Sge, ...]


def sge_layout(size: int, sges: int) -> tuple[tuple[int, int], ...]:
    """``(offset, length)`` of each SGE of a ``size``-byte message split over ``sges`` SGEs.

    Invariants: lengths sum to ``size``, differ by at most one, are all >= 1 (needs ``sges <= size``) and the
    SGEs tile ``[0, size)`` in order.
    """
    if not 1 <= sges <= size:
        raise ValueError(f"cannot split {size} B over {sges} SGEs")
    base, extra = divmod(size, sges)
    out = []
    off = 0
    for k in range(sges):
        length = base + (1 if k < extra else 0)
        out.append((off, length))
        off += length
    return tuple(out)


@dataclass(frozen=True)
class WrCycle:
    """The slot cycle of one flow (see the module docstring)."""

    sizes: tuple[int, ...]
    batch: int
    mrs: int
    length: int
    opcodes: tuple[str, ...] = ("WRITE",)

    @classmethod
    def for_flow(cls, sizes: tuple[int, ...], batch: int, mrs: int, cap: int = MAX_CYCLE_WRS,
                 opcodes: tuple[str, ...] = ("WRITE",)) -> WrCycle:
        """The shortest cycle that is a multiple of ``lcm(batch, len(sizes), len(opcodes))`` and covers ``mrs``
        slots, at most ``cap`` slots (but never shorter than one period)."""
        period = math.lcm(batch, len(sizes), len(opcodes))
        reps = max(1, -(-mrs // period))
        reps = max(1, min(reps, cap // period))
        return cls(sizes=sizes, batch=batch, mrs=mrs, length=period * reps, opcodes=opcodes)

    @property
    def chains(self) -> int:
        return self.length // self.batch

    def slot_opcode(self, j: int) -> str:
        return self.opcodes[j % len(self.opcodes)]

    def slot_size(self, j: int) -> int:
        """Payload bytes of slot ``j`` (an atomic operates on :data:`~collie.model.flow.ATOMIC_BYTES`)."""
        if self.slot_opcode(j) in ATOMIC_OPCODES:
            return ATOMIC_BYTES
        return self.sizes[j % len(self.sizes)]

    def slots_of(self, opcodes: frozenset[str]) -> tuple[int, ...]:
        """The slots whose opcode is one of ``opcodes``, ascending."""
        period = tuple(k for k, op in enumerate(self.opcodes) if op in opcodes)
        return tuple(j + k for j in range(0, self.length, len(self.opcodes)) for k in period)

    def count(self, opcodes: frozenset[str], seq: int) -> int:
        """How many of a QP's first ``seq`` WRs have an opcode in ``opcodes`` (WR ``s`` is request ``s``: the
        opcode pattern repeats within the cycle)."""
        q, r = divmod(seq, len(self.opcodes))
        return q * sum(op in opcodes for op in self.opcodes) + sum(op in opcodes for op in self.opcodes[:r])

    def slot_mr(self, j: int) -> int:
        return j % self.mrs

    def chain_slots(self, c: int) -> range:
        return range(c * self.batch, (c + 1) * self.batch)

    def chain_bytes(self, c: int) -> int:
        return sum(self.slot_size(j) for j in self.chain_slots(c))

    @property
    def mrs_touched(self) -> int:
        return min(self.mrs, self.length)


def signal_positions(seq0: int, batch: int, signal_every: int, sq_depth: int,
                     last_signalled: int) -> tuple[int, ...]:
    """Positions (0-based, ascending) in a chain of ``batch`` WRs starting at per-QP sequence ``seq0`` that
    must carry ``IBV_SEND_SIGNALED``.

    Args:
        seq0: sequence number of the chain's first WR on its QP.
        batch: WRs in the chain.
        signal_every: one completion every this many WRs.
        sq_depth: the send queue's depth.
        last_signalled: one past the sequence number of the QP's latest signalled WR (0 if none yet).

    Invariant (no deadlock): once every signalled WR up to and including this chain has completed, the WRs
    still outstanding (the unsignalled tail) leave room for another chain; otherwise the chain's last WR is
    signalled too.
    """
    first = (-(seq0 + 1)) % signal_every
    pos = list(range(first, batch, signal_every))
    settled = seq0 + pos[-1] + 1 if pos else last_signalled
    tail = seq0 + batch - settled
    if tail and tail + batch > sq_depth:
        pos.append(batch - 1)
    return tuple(pos)


def packets_per_message(size: int, mtu: int) -> int:
    """Data packets on the wire for one message (a zero-byte message is still one packet)."""
    return max(1, -(-size // mtu))


def packets_per_cycle_chain(cycle: WrCycle, c: int, mtu: int) -> int:
    return sum(packets_per_message(cycle.slot_size(j), mtu) for j in cycle.chain_slots(c))


def split_qps(qps: int, workers: int) -> tuple[int, ...]:
    """QPs of each worker when ``qps`` QPs are spread over ``workers`` processes (as even as possible, the
    first ones get the extra; every worker at least one). Sums to ``qps``."""
    if not 1 <= workers <= qps:
        raise ValueError(f"cannot spread {qps} QPs over {workers} workers")
    base, extra = divmod(qps, workers)
    return tuple(base + (1 if w < extra else 0) for w in range(workers))


@dataclass(frozen=True)
class CycleSums:
    """Prefix sums of bytes and packets over a :class:`WrCycle`, so the payload of any run of per-QP sequence
    numbers ``[a, b)`` costs O(1): WR ``seq`` occupies slot ``seq % cycle.length``."""

    length: int
    bytes_prefix: tuple[int, ...]
    packets_prefix: tuple[int, ...]

    @classmethod
    def of(cls, cycle: WrCycle, mtu: int) -> CycleSums:
        b = [0]
        p = [0]
        for j in range(cycle.length):
            size = cycle.slot_size(j)
            b.append(b[-1] + size)
            p.append(p[-1] + packets_per_message(size, mtu))
        return cls(length=cycle.length, bytes_prefix=tuple(b), packets_prefix=tuple(p))

    def _upto(self, prefix: tuple[int, ...], x: int) -> int:
        q, r = divmod(x, self.length)
        return q * prefix[-1] + prefix[r]

    def bytes(self, a: int, b: int) -> int:
        """Payload bytes of WRs ``a .. b-1``."""
        return self._upto(self.bytes_prefix, b) - self._upto(self.bytes_prefix, a)

    def packets(self, a: int, b: int) -> int:
        """Data packets of WRs ``a .. b-1``."""
        return self._upto(self.packets_prefix, b) - self._upto(self.packets_prefix, a)
