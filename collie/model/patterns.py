"""Collective patterns over N ranks: which rank sends how many bytes to which, in which step.

A :class:`Pattern` places ``len(hosts) * ranks_per_host`` ranks on named hosts (rank ``r`` on
``hosts[r // ranks_per_host]``), each rank on one of its host's first ``nics`` NICs (local rank ``i`` on NIC
``i mod nics``, as NCCL gives each GPU its nearest NIC: :meth:`Pattern.host_of` is the rank's NIC address,
``h3/1`` for NIC 1 of ``h3``, see :mod:`collie.model.flow`), and expands into

* **connections**: one :class:`~collie.model.flow.Flow` per ordered pair of ranks that exchange data (client =
  the sending rank's NIC, server = the receiving rank's NIC; two ranks on one NIC make a loopback flow), every
  flow shaped by the pattern's ``flow`` template (transport, opcodes, WR sizes, QPs per connection, ...);
* **steps**: the transfers of each step, ``(connection, bytes)``. A rank starts its transfers of step ``k + 1``
  only when its own transfers of step ``k`` are done and it has received every transfer of step ``k`` sent to
  it, as a ring rank in NCCL forwards a chunk only after receiving it: one slow link slows the whole ring.

The kinds, with ``S`` the pattern's ``size`` (bytes, what nccl-tests prints in its ``size`` column) and ``N``
the number of ranks:

==================  =========================================================  ==========  ==================
kind                transfers                                                  steps       busbw factor
==================  =========================================================  ==========  ==================
``ring_allreduce``  rank r -> r+1, S/N bytes (reduce-scatter, then all-gather)  2(N-1)      2(N-1)/N
``all_to_all``      every rank -> every other, S/N bytes each                   1           (N-1)/N
``incast``          every rank but 0 -> rank 0, S bytes each                    1           N-1
``outcast``         rank 0 -> every other rank, S bytes each                    1           N-1
``kv_scatter``      rank 0 -> every other rank, S bytes each, as WRITE_IMMs     1           N-1
``pairwise``        rank 2i <-> rank 2i+1, S bytes each way                     1           1
``permutation``     rank r -> p(r), S bytes (p: a derangement drawn from seed)  1           1
==================  =========================================================  ==========  ==================

The busbw factor makes ``busbw = algbw x factor`` the bytes per second through the busiest rank's port, as
nccl-tests defines it for its collectives (all-reduce ``2(n-1)/n``, all-to-all ``(n-1)/n``; see
``docs/collectives.md``); the patterns nccl-tests does not have follow the same rule.

A pattern may have a **victim** beside it: one flow of another tenant (``[pattern.victim]`` in a workload file:
a flow's fields with ``client`` and ``server``, hosts the pattern uses), run with the connections and judged
against its run alone, as a victim beside flows is (an isolation experiment); it is no part of the collective's
figures.

A pattern of the search space places its ranks on *host roles* ``r0``, ``r1``, ... (:func:`rank_hosts`), as a
two-host workload names the roles ``a`` and ``b``: a target plays role ``ri`` with its i-th host (a simulated
fleet's ``hi``, an inventory's i-th host).

Invariants:
    * a pattern is a frozen dataclass, hashable and compared by value; its expansion is a pure function of it;
    * every transfer of every step moves at least one byte over one of :meth:`Pattern.connections`;
    * ``pattern_from_dict(pattern_to_dict(p), where) == p`` (lossless round trip).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Final

from collie.codec import Reader, check_fields, expect_type
from collie.errors import InputError
from collie.model.flow import (
    MAX_NICS,
    Endpoint,
    Flow,
    address_name,
    flow_from_dict,
    flow_to_dict,
    nic_address,
    split_address,
)
from collie.model.units import parse_size


class PatternKind(Enum):
    """Which collective a pattern is (see the module docstring's table)."""

    RING_ALLREDUCE = "ring_allreduce"
    ALL_TO_ALL = "all_to_all"
    INCAST = "incast"
    OUTCAST = "outcast"
    KV_SCATTER = "kv_scatter"
    PAIRWISE = "pairwise"
    PERMUTATION = "permutation"


#: Opcodes a pattern's flows may use: each moves its payload from the sending rank to the receiving one.
PUSH_OPCODES: Final = frozenset(("WRITE", "WRITE_IMM", "SEND", "SEND_IMM"))
#: Most ranks a pattern may place, and most connections it may expand into (an all-to-all of N ranks has
#: N(N-1)): what one experiment can hold.
MAX_RANKS: Final = 4096
MAX_CONNECTIONS: Final = 16384
MAX_RANKS_PER_HOST: Final = 64
SIZE_RANGE: Final = (1, 1 << 40)
_TEMPLATE_HOSTS: Final = ("client", "server")
_RANK_HOST: Final = re.compile(r"r(0|[1-9][0-9]*)")
_FIELDS: Final = ("kind", "hosts", "ranks_per_host", "nics", "size", "seed", "flow", "victim")


@dataclass(frozen=True)
class Transfer:
    """Bytes one connection carries in one step (``connection`` indexes :meth:`Pattern.connections`)."""

    connection: int
    bytes: int


@dataclass(frozen=True)
class Pattern:
    """A collective over ranks placed on hosts (see the module docstring).

    Attributes:
        kind: which collective.
        hosts: the hosts the ranks are placed on, in rank order (rank ``r`` on ``hosts[r // ranks_per_host]``); a
            host may be one NIC of a host (``h3/1``: every rank on it uses that NIC; ``nics`` is then 1), as a
            fleet check's rounds over one rail are.
        ranks_per_host: ranks on each host.
        nics: NICs of each host its ranks use, 1 to ``ranks_per_host``: local rank ``i`` of a host uses its NIC
            ``i mod nics``.
        size: bytes per rank, as nccl-tests' ``size`` column (see the table for what each kind moves).
        flow: the shape of every connection's flow; its client and server are ignored (each connection has
            its own), its ``sizes`` are the WR sizes, each cut to the bytes of a transfer when larger.
        seed: the draw of ``permutation``'s derangement (other kinds ignore it).
        victim: a flow of another tenant beside the collective, between hosts of its own (they may be the
            pattern's), named by its ``victim``: the pattern's connections are its aggressors (an isolation
            experiment, as a victim beside flows); None: the collective alone.
    """

    kind: PatternKind
    hosts: tuple[str, ...]
    size: int
    ranks_per_host: int = 1
    flow: Flow = field(default_factory=lambda: Flow(Endpoint("a"), Endpoint("b")))
    seed: int = 0
    victim: Flow | None = None
    nics: int = 1

    @property
    def ranks(self) -> int:
        return len(self.hosts) * self.ranks_per_host

    def host_of(self, rank: int) -> str:
        """The address of the NIC rank ``rank`` uses: its host's name, with ``/i`` for the host's NIC ``i > 0``."""
        host, local = divmod(rank, self.ranks_per_host)
        return nic_address(self.hosts[host], local % self.nics)

    @property
    def busbw_factor(self) -> float:
        """``busbw / algbw`` (see the module docstring)."""
        n = self.ranks
        return {PatternKind.RING_ALLREDUCE: 2 * (n - 1) / n, PatternKind.ALL_TO_ALL: (n - 1) / n,
                PatternKind.INCAST: n - 1, PatternKind.OUTCAST: n - 1, PatternKind.KV_SCATTER: n - 1,
                PatternKind.PAIRWISE: 1.0, PatternKind.PERMUTATION: 1.0}[self.kind]

    def pairs(self) -> tuple[tuple[int, int], ...]:
        """The ordered (sending rank, receiving rank) pairs, one per connection, in connection order."""
        n = self.ranks
        kind = self.kind
        if kind is PatternKind.RING_ALLREDUCE:
            return tuple((r, (r + 1) % n) for r in range(n))
        if kind is PatternKind.ALL_TO_ALL:
            return tuple((r, d) for r in range(n) for d in range(n) if d != r)
        if kind is PatternKind.INCAST:
            return tuple((r, 0) for r in range(1, n))
        if kind in (PatternKind.OUTCAST, PatternKind.KV_SCATTER):
            return tuple((0, d) for d in range(1, n))
        if kind is PatternKind.PAIRWISE:
            return tuple(p for r in range(0, n - 1, 2) for p in ((r, r + 1), (r + 1, r)))
        return tuple(enumerate(derangement(n, self.seed)))

    def connections(self) -> tuple[Flow, ...]:
        """One flow per pair of :meth:`pairs`, shaped by :attr:`flow`, its WR sizes cut to a transfer's bytes."""
        chunk = self.transfer_bytes
        sizes = tuple(min(s, chunk) for s in self.flow.sizes)
        shaped = replace(self.flow, sizes=sizes)
        between: dict[tuple[str, str], Flow] = {}  # connections between the same two NICs are equal flows
        out = []
        for src, dst in self.pairs():
            ends = (self.host_of(src), self.host_of(dst))
            flow = between.get(ends)
            if flow is None:
                flow = between[ends] = replace(shaped, client=replace(self.flow.client, host=ends[0]),
                                               server=replace(self.flow.server, host=ends[1]))
            out.append(flow)
        return tuple(out)

    @property
    def transfer_bytes(self) -> int:
        """Bytes of each transfer (every transfer of a pattern moves the same)."""
        if self.kind in (PatternKind.RING_ALLREDUCE, PatternKind.ALL_TO_ALL):
            return max(1, self.size // self.ranks)
        return self.size

    @property
    def step_count(self) -> int:
        return 2 * (self.ranks - 1) if self.kind is PatternKind.RING_ALLREDUCE else 1

    def steps(self) -> tuple[tuple[Transfer, ...], ...]:
        """The transfers of each step, in step order (every connection in every step for these kinds)."""
        every = tuple(Transfer(i, self.transfer_bytes) for i in range(len(self.pairs())))
        return (every,) * self.step_count


def rank_hosts(n: int) -> tuple[str, ...]:
    """The host roles ``r0`` .. ``r{n-1}`` of a search space's pattern over ``n`` hosts."""
    return tuple(f"r{i}" for i in range(n))


def rank_host_index(name: str) -> int | None:
    """``i`` for the host role ``ri`` (``r0``, ``r12``; no leading zeros), None for any other name."""
    found = _RANK_HOST.fullmatch(name)
    return int(found[1]) if found else None


def derangement(n: int, seed: int) -> tuple[int, ...]:
    """A permutation of ``range(n)`` with no fixed point (one cycle, Sattolo's shuffle), drawn from ``seed``."""
    p = list(range(n))
    rng = random.Random(seed)
    for i in range(n - 1, 0, -1):
        j = rng.randrange(i)
        p[i], p[j] = p[j], p[i]
    return tuple(p)


def pattern_to_dict(p: Pattern) -> dict[str, Any]:
    """The file form of ``p`` (the ``[pattern]`` table of a workload file)."""
    template = {k: v for k, v in flow_to_dict(p.flow).items() if k not in _TEMPLATE_HOSTS}
    out: dict[str, Any] = {"kind": p.kind.value, "hosts": list(p.hosts), "size": p.size}
    if p.ranks_per_host != 1:
        out["ranks_per_host"] = p.ranks_per_host
    if p.nics != 1:
        out["nics"] = p.nics
    if p.kind is PatternKind.PERMUTATION:
        out["seed"] = p.seed
    out["flow"] = template
    if p.victim is not None:
        out["victim"] = flow_to_dict(p.victim)
    return out


def pattern_from_dict(raw: Any, where: str) -> Pattern:
    """Read the ``[pattern]`` table of a workload file (``where`` names it in every error).

    Raises:
        InputError: unknown or missing field, wrong type, a value out of range, a pattern that cannot be
            placed (too few ranks, an odd number for ``pairwise``) or a flow that does not push its payload;
            the message names the field.
    """
    expect_type(raw, dict, where, "a table")
    check_fields(raw, where, _FIELDS, required=("kind", "hosts", "size"))
    kind = Reader(where).at("kind").choice(raw["kind"], PatternKind, "a pattern kind")
    hosts_raw = expect_type(raw["hosts"], list, f"{where}.hosts", "a list of host names")
    hosts = tuple(expect_type(h, str, f"{where}.hosts[{i}]", "a host name") for i, h in enumerate(hosts_raw))
    if len(set(hosts)) != len(hosts):
        raise InputError(f"{where}.hosts: names a host twice; put more ranks on a host with ranks_per_host")
    rph = raw.get("ranks_per_host", 1)
    expect_type(rph, int, f"{where}.ranks_per_host", f"an integer from 1 to {MAX_RANKS_PER_HOST}")
    if isinstance(rph, bool) or not 1 <= rph <= MAX_RANKS_PER_HOST:
        raise InputError(f"{where}.ranks_per_host: {rph!r} is out of range; allowed is 1 to {MAX_RANKS_PER_HOST}")
    nics = raw.get("nics", 1)
    if isinstance(nics, bool) or not isinstance(nics, int) or not 1 <= nics <= MAX_NICS:
        raise InputError(f"{where}.nics: expected an integer from 1 to {MAX_NICS}, got {nics!r}")
    try:
        size = parse_size(raw["size"])
    except (ValueError, TypeError) as exc:
        raise InputError(f"{where}.size: {exc}") from None
    if not SIZE_RANGE[0] <= size <= SIZE_RANGE[1]:
        raise InputError(f"{where}.size: {size} bytes is out of range; allowed is 1 B to 1 TiB")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"{where}.seed: expected a non-negative integer, got {seed!r}")
    template_raw = raw.get("flow", {})
    expect_type(template_raw, dict, f"{where}.flow", "a table of flow fields")
    for name in _TEMPLATE_HOSTS:
        if name in template_raw:
            raise InputError(f"{where}.flow.{name}: a pattern places its ranks itself; leave {name} out")
    if kind is PatternKind.KV_SCATTER and "opcode" not in template_raw:
        template_raw = {**template_raw, "opcode": "WRITE_IMM"}
    template = flow_from_dict({**template_raw, "client": "a", "server": "b"}, f"{where}.flow")
    if "mr_size" not in template_raw:  # room for the largest WR, whatever the flow default says
        template = replace(template, mr_size=max(template.mr_size, *template.sizes))
    victim = None
    if "victim" in raw:
        victim_raw = expect_type(raw["victim"], dict, f"{where}.victim", "a table of flow fields")
        victim = flow_from_dict({"victim": "victim", **victim_raw}, f"{where}.victim")
    pattern = Pattern(kind=kind, hosts=hosts, size=size, ranks_per_host=rph, flow=template,
                      seed=seed if kind is PatternKind.PERMUTATION else 0, victim=victim, nics=nics)
    check_pattern(pattern, where)
    return pattern


def check_pattern(p: Pattern, where: str) -> None:
    """Raise :class:`InputError` (one sentence naming the field) when ``p`` cannot be expanded."""
    for i, h in enumerate(p.hosts):
        address_name(h, f"{where}.hosts[{i}]")
    on_nics = [h for h in p.hosts if split_address(h)[1]]
    if on_nics and p.nics > 1:
        raise InputError(f"{where}.nics: hosts names a host's NIC ({on_nics[0]}), and nics spreads each host's ranks "
                         "over its NICs; name hosts, or leave nics at 1")
    if p.nics > p.ranks_per_host:
        raise InputError(f"{where}.nics: {p.nics} NICs per host for {p.ranks_per_host} rank(s) per host; a rank "
                         "uses one NIC, so at most ranks_per_host")
    n = p.ranks
    if n < 2:
        raise InputError(f"{where}.hosts: a pattern needs at least 2 ranks, got {n} "
                         "(more hosts, or more ranks_per_host)")
    if n > MAX_RANKS:
        raise InputError(f"{where}.hosts: {n} ranks is more than {MAX_RANKS}")
    if p.kind is PatternKind.PAIRWISE and n % 2:
        raise InputError(f"{where}.hosts: pairwise pairs ranks 2i and 2i+1, so it needs an even number of ranks, "
                         f"got {n}")
    if p.kind is PatternKind.ALL_TO_ALL and n * (n - 1) > MAX_CONNECTIONS:
        raise InputError(f"{where}.hosts: an all_to_all over {n} ranks has {n * (n - 1)} connections; "
                         f"at most {MAX_CONNECTIONS} (about {int((MAX_CONNECTIONS) ** 0.5)} ranks)")
    if p.flow.victim:
        raise InputError(f"{where}.flow.victim: a pattern's connections are its own tenants; put a victim beside "
                         "them in a [pattern.victim] table")
    if p.victim is not None and not p.victim.victim:
        raise InputError(f"{where}.victim.victim: a victim beside a pattern needs a name")
    pulls = sorted(set(p.flow.opcodes) - PUSH_OPCODES)
    if pulls:
        raise InputError(f"{where}.flow.opcode: a pattern's ranks push their data to each other "
                         f"({', '.join(sorted(PUSH_OPCODES))}); {', '.join(pulls)} cannot be used")
    if p.kind is PatternKind.KV_SCATTER and set(p.flow.opcodes) != {"WRITE_IMM"}:
        raise InputError(f"{where}.flow.opcode: kv_scatter moves a KV cache with WRITE_IMM only, got "
                         f"{'/'.join(p.flow.opcodes)}")
