"""The search space: typed dimensions over workload parameters, and how a point becomes a Workload.

A *point* is a ``dict`` from parameter name to a plain JSON value. The parameters (:data:`PARAMETERS`) are
fixed; a space file (``workloads/default.toml`` is the whole space, ``workloads/paper.toml`` the paper's)
declares which of them are searched (``[[dimension]]``) and which are pinned (``[fixed]``); any other parameter
takes its default. Its ``[victims.NAME]`` tables declare the victim flows the parameter ``victim`` names (a flow
without hosts: it runs beside the point's flows, from the client to the server of the first one).

Invariants:
    * :meth:`SearchSpace.sample` and :meth:`SearchSpace.mutate` only return points that
      :meth:`SearchSpace.validate` accepts (they resample, bounded, and raise if the space is unsatisfiable);
    * :meth:`SearchSpace.mutate` changes exactly one searched dimension (one that :meth:`SearchSpace.applies` to
      the point, unless it is named), except a *repaired* move, which
      changes one dimension and at most :data:`MAX_REPAIRS` others (to their repair values) to make the
      move legal;
    * :meth:`SearchSpace.simplest` is valid, and :meth:`SearchSpace.build` is a pure function of the point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from collie.codec import check_fields, expect_type
from collie.data import data_dir
from collie.errors import ConstraintError, InputError
from collie.model.constraints import CONSTRAINTS, LEGAL_OPCODES, WORKLOAD_CONSTRAINTS, violations
from collie.model.dimensions import SIZE_BOUNDARIES, Choice, Dimension, Flag, IntRange, OpcodePattern, SizeVector
from collie.model.flow import (
    ATOMIC_BYTES,
    ATOMIC_OPCODES,
    INLINE_OPCODES,
    MEMORY_PLACEMENTS,
    MTUS,
    OPCODES,
    RECV_CONSUMING,
    TCLASS_LIMITS,
    Endpoint,
    Flow,
    flow_from_dict,
    victim_name,
)
from collie.model.patterns import Pattern, PatternKind, check_pattern, rank_hosts
from collie.model.units import format_bytes
from collie.model.workload import Workload
from collie.tomlio import read_toml

OPS: Final = ("RC_SEND", "RC_WRITE", "RC_READ", "UC_SEND", "UC_WRITE", "UD_SEND", "RC_SEND_IMM", "RC_WRITE_IMM",
               "RC_ATOMIC_FA", "RC_ATOMIC_CS", "UC_SEND_IMM", "UC_WRITE_IMM", "UD_SEND_IMM")
#: The one table of what each direction is: its flows' (client host, server host) pairs, in flow order. The
#: space builds workloads from it, reads directions back from it, and calibration measures its first three.
DIRECTION_PAIRS: Final[Mapping[str, tuple[tuple[str, str], ...]]] = {
    "oneway": (("a", "b"),),
    "bidirectional": (("a", "b"), ("b", "a")),
    "loopback": (("a", "a"),),
    "incast": (("a", "b"), ("b", "b")),
}
DIRECTIONS: Final = tuple(DIRECTION_PAIRS)

#: Every parameter a point may set, with its default (used when a space neither searches nor fixes it).
PARAMETERS: Final[Mapping[str, Any]] = {
    "op": "RC_WRITE",
    "direction": "oneway",
    "qps": 1,
    "mrs": 1,
    "mr_size": 65536,
    "batch": 1,
    "sges": 1,
    "wq_depth": 128,
    "mtu": 4096,
    "sizes": [65536],
    "memory": "local",
    "processes": 1,
    "inline": 0,
    "signal_every": 1,
    "burst": False,
    "mix": [],
    "rq_depth": 0,
    "recv_batch": 1,
    "recv_sges": 1,
    "recv_delay_us": 0,
    "mr_churn": 0,
    "qp_churn": 0,
    "victim": "none",
    "tclass": "default",
    "pattern": "none",
    "hosts": 2,
    "ranks_per_host": 1,
    "nics": 1,
    "pattern_size": 1 << 26,
}
PARAMETER_HELP: Final[Mapping[str, str]] = {
    "op": "transport and the first opcode of each flow's pattern (RC_WRITE, RC_READ, RC_ATOMIC_FA, UD_SEND, ...)",
    "direction": "oneway a->b; bidirectional a<->b; loopback a->a; incast a->b plus b->b into one NIC",
    "qps": "queue pairs per flow (per direction)",
    "mrs": "memory regions per side of each flow",
    "mr_size": "bytes per memory region",
    "batch": "work requests per post list",
    "sges": "scatter/gather entries per work request",
    "wq_depth": "send queue depth (and the receive queue's, unless rq_depth sets it)",
    "mtu": "path MTU in bytes",
    "sizes": "request-size pattern cycled over work requests",
    "memory": "buffer placement: local NUMA node, remote socket, or GPU memory",
    "processes": "worker processes per host driving the QPs",
    "inline": "max inline data in bytes (0 = off)",
    "signal_every": "request a completion every N work requests",
    "burst": "on/off bursts instead of a steady stream",
    "mix": "opcodes cycled after op's over the work requests of the same QPs ([] = op's opcode only)",
    "rq_depth": "receive queue depth (0 = as wq_depth); for opcodes that consume receives",
    "recv_batch": "receive WQEs per receive post list",
    "recv_sges": "scatter/gather entries per receive WQE",
    "recv_delay_us": "the receiver waits this long (us) before reposting each receive post list (0 = at once)",
    "mr_churn": "MRs each side registers and deregisters per second during the traffic (0 = none)",
    "qp_churn": "QPs each side creates and destroys per second during the traffic (0 = none)",
    "victim": "a victim flow ([victims.NAME] of the space file) beside the flows, from the client to the server "
              "of the first, or beside a pattern, from r1 to its last host (none = no isolation experiment)",
    "tclass": "the traffic class (DSCP and ECN byte) of every flow's packets, which the fabric maps to a priority "
              "(default = the hosts' own, not set by collie)",
    "pattern": "a collective over hosts r0, r1, ... (ring_allreduce, all_to_all, incast, ...; none = the flows "
               "direction makes): its connections take the flow shape the other parameters describe, and "
               "direction does not apply",
    "hosts": "hosts a pattern's ranks are placed on (r0 .. r{hosts-1}); a target plays ri with its i-th host",
    "ranks_per_host": "a pattern's ranks on each host (ranks on one NIC talk over loopback)",
    "nics": "NICs of each host a pattern's ranks use: local rank i on NIC i mod nics (at most ranks_per_host)",
    "pattern_size": "a pattern's bytes per rank, as nccl-tests' size column",
}
#: The parameters of a collective pattern (searched by ``workloads/collective.toml``; the whole two-host space,
#: ``workloads/default.toml``, leaves them at their defaults: no pattern).
PATTERN_PARAMETERS: Final = ("pattern", "hosts", "ranks_per_host", "nics", "pattern_size")
_PATTERN_ONLY: Final = frozenset(PATTERN_PARAMETERS[1:])
_FLOWS_ONLY: Final = frozenset(("direction",))
#: The values of ``pattern``: none (a workload of flows), then every collective kind.
PATTERNS: Final = ("none", *(k.value for k in PatternKind))
#: The order the minimizer shrinks a point's dimensions in, unless the space file's ``[minimize]`` table sets its own
#: ``order`` (docs/search.md, "Minimizing"): the named dimensions one at a time, in this order; ``"*"`` stands for
#: every dimension not named, simplified in groups. A name the space does not search is skipped.
SHRINK_ORDER: Final = ("direction", "memory", "mix", "op", "*", "sizes", "victim")
DEFAULT_SPACE: Final = "default.toml"
_MAX_TRIES: Final = 2000
#: Other dimensions a repaired mutation may change to make it legal.
MAX_REPAIRS: Final = 2


@dataclass(frozen=True)
class SearchSpace:
    """Dimensions to search, values to pin, the victim flows ``victim`` names (hosts a -> b, victim unset: a
    point sets them), and the legality constraints of :mod:`collie.model.constraints`."""

    name: str
    dimensions: tuple[Dimension, ...]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    #: the order the minimizer shrinks dimensions in (see :data:`SHRINK_ORDER`)
    shrink_order: tuple[str, ...] = SHRINK_ORDER
    victims: Mapping[str, Flow] = field(default_factory=dict)
    #: numeric dimensions the minimizer shrinks once more when every other is simplified (``[minimize] again``)
    shrink_again: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)

    def dimension(self, name: str) -> Dimension:
        for d in self.dimensions:
            if d.name == name:
                return d
        raise KeyError(name)

    def applies(self, name: str, point: Mapping[str, Any]) -> bool:
        """Whether parameter ``name`` changes the workload ``point`` builds: a pattern's parameters only with a
        pattern (``nics`` only with more than one rank per host), ``direction`` only without one (a move or a
        minimizing probe of one that does not apply would run the same workload again)."""
        if name not in _PATTERN_ONLY and name not in _FLOWS_ONLY:
            return True
        plain = self.complete(point)["pattern"] == "none"
        if name == "nics" and self.complete(point)["ranks_per_host"] == 1:
            return False
        return plain if name in _FLOWS_ONLY else not plain

    def complete(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """The full parameter set of ``point``: defaults, then fixed values, then the point's own."""
        return {**PARAMETERS, **self.fixed, **point}

    def build(self, point: Mapping[str, Any]) -> Workload:
        """The workload a point describes, projected onto the nearest legal one.

        Parameters that cannot apply are clamped instead of rejected, so that one-dimension moves of a
        search never hit a wall: opcodes of the mix that the transport lacks are dropped (a UD flow mixes SENDs
        only), UD sizes are cut to the MTU, a flow of atomics only carries 8 B in one SGE, inline is 0 without
        WRITE or SEND, a send post list is at most its queue (``batch`` is cut to ``wq_depth``: the send
        queue's depth is the point's own, so a condition on it is never read as one on the post list), a
        receive queue is at least its post list, signalling happens at least once per queue, SGEs are at most
        the smallest message, an MR holds the largest message, and the receive side keeps its defaults unless
        an opcode consumes receives. The features of the built workload (not the raw point) are what quirks,
        minimal feature sets and reports speak of. A ``victim`` other than ``none``
        appends that victim flow, as declared, from the client to the server of the first flow. Only
        ``pinned_memory`` can still fail (see :meth:`validate`).

        A ``pattern`` other than ``none`` makes the workload that collective over ``hosts`` host roles ``r0``,
        ``r1``, ... with ``ranks_per_host`` ranks each spread over ``nics`` NICs of each host (cut to
        ``ranks_per_host``) and ``pattern_size`` bytes per rank, every connection
        shaped as the point's flow from ``a`` to ``b`` would be (``direction`` does not apply), and a ``victim``
        other than ``none`` beside it from ``r1`` to the pattern's last host (``r0`` of two: a victim runs between
        hosts its aggressors use); :meth:`problems` says when the pattern cannot be placed (an odd pairwise, a
        pulling opcode).
        """
        p = self.complete(point)
        transport, opcode = str(p["op"]).split("_", 1)
        opcodes = (opcode, *(o for o in p["mix"] if o in LEGAL_OPCODES[transport]))
        memory = str(p["memory"])
        sizes = tuple(p["sizes"])
        if all(o in ATOMIC_OPCODES for o in opcodes):
            sizes = (ATOMIC_BYTES,)
        if transport == "UD":
            sizes = tuple(min(s, p["mtu"]) for s in sizes)
        sges = 1 if all(o in ATOMIC_OPCODES for o in opcodes) else max(1, min(p["sges"], min(sizes)))
        depth = p["wq_depth"]
        batch = min(p["batch"], depth)
        inline = p["inline"] if INLINE_OPCODES.intersection(opcodes) else 0
        mr_size = max(p["mr_size"], max(sizes))
        if RECV_CONSUMING.intersection(opcodes):
            recv_batch = p["recv_batch"]
            rq_depth = max(p["rq_depth"] or depth, recv_batch)
            recv_sges = max(1, min(p["recv_sges"], min(sizes)))
            recv_delay = p["recv_delay_us"]
        else:
            recv_batch, rq_depth, recv_sges, recv_delay = 1, depth, 1, 0

        def flow(client: str, server: str) -> Flow:
            return Flow(
                client=Endpoint(client, memory), server=Endpoint(server, memory),
                transport=transport, opcodes=opcodes, sizes=sizes, qps=p["qps"],
                batch=batch, sges=sges, sq_depth=depth, rq_depth=rq_depth,
                mtu=p["mtu"], mrs=p["mrs"], mr_size=mr_size, inline=inline,
                signal_every=min(p["signal_every"], depth), burst=p["burst"], processes=p["processes"],
                recv_batch=recv_batch, recv_sges=recv_sges, recv_delay_us=recv_delay,
                mr_churn=p["mr_churn"], qp_churn=p["qp_churn"],
                tclass=None if p["tclass"] == "default" else p["tclass"],
            )

        if p["pattern"] != "none":
            hosts = rank_hosts(p["hosts"])
            victim = None if p["victim"] == "none" else self._victim(p["victim"], flow(*_victim_ends(hosts)))
            return Workload.of_pattern(Pattern(PatternKind(p["pattern"]), hosts, p["pattern_size"],
                                               p["ranks_per_host"], flow=flow("a", "b"), victim=victim,
                                               nics=min(p["nics"], p["ranks_per_host"])))
        flows = tuple(flow(c, s) for c, s in DIRECTION_PAIRS[p["direction"]])
        if p["victim"] != "none":
            flows = (*flows, self._victim(p["victim"], flows[0]))
        return Workload(flows=flows)

    def _victim(self, name: str, first: Flow) -> Flow:
        """The victim ``name`` as a point runs it: from the client to the server of its ``first`` flow."""
        return replace(self.victims[name], client=Endpoint(first.client.host), server=Endpoint(first.server.host),
                       victim=name)

    def legal_point(self, point: Mapping[str, Any], workload: Workload) -> dict[str, Any]:
        """``point`` as it runs: each of its parameters at its value in ``workload``, the one :meth:`build`
        made of it (inline 0 for a READ, an MR of at least one SGE, ...), for showing what ran rather than what
        was asked."""
        built = self.point_of(workload)
        return {k: built.get(k, v) for k, v in point.items()}

    def point_of(self, workload: Workload) -> dict[str, Any]:
        """The point of this space that builds ``workload`` (the inverse of :meth:`build`).

        Raises:
            InputError: the workload is not one this space can express (flows that differ in anything but
                their hosts, host pairs that are no direction, mixed memory placement, a victim that is not one
                of the space's as declared beside the first flow).
        """
        if workload.pattern is not None:
            return self._pattern_point(workload.pattern)
        aggressors = tuple(f for f in workload.flows if not f.victim)
        victims = [f for f in workload.flows if f.victim]
        pairs = tuple((f.client.host, f.server.host) for f in aggressors)
        direction = next((d for d, p in DIRECTION_PAIRS.items() if p == pairs), None)
        f = aggressors[0] if aggressors else workload.flows[0]
        memories = {e.memory for fl in aggressors for e in (fl.client, fl.server)}
        same = all(replace(x, client=f.client, server=f.server) == f for x in aggressors)
        if direction is None or not same or len(memories) != 1 or not self._declared(victims, f):
            raise InputError("this workload is not a point of the search space (its flows must be alike, on "
                             "hosts a and b, one-way, bidirectional, loopback or incast, with one memory "
                             "placement, and at most one victim, one of the space's [victims], beside the first)")
        point = _flow_point(f, direction, memories.pop(), victims[0].victim if victims else "none")
        return {k: v for k, v in point.items() if k in self.names}

    def _pattern_point(self, pattern: Pattern) -> dict[str, Any]:
        """The point of this space whose workload is ``pattern`` (placed on the host roles ``r0``, ...)."""
        f = pattern.flow
        hosts = pattern.hosts
        victims = [] if pattern.victim is None else [pattern.victim]
        client, server = _victim_ends(hosts)
        if hosts != rank_hosts(len(hosts)) or f.client.memory != f.server.memory or \
                not self._declared(victims, replace(f, client=Endpoint(client), server=Endpoint(server))):
            raise InputError("this pattern is not a point of the search space (a point's pattern places its ranks "
                             "on the hosts r0, r1, ... in order, with one memory placement, and at most one victim, "
                             "one of the space's [victims], from r1 to its last host)")
        point = {**_flow_point(f, PARAMETERS["direction"], f.client.memory, victims[0].victim if victims else "none"),
                 "pattern": pattern.kind.value, "hosts": len(pattern.hosts), "ranks_per_host": pattern.ranks_per_host,
                 "nics": pattern.nics, "pattern_size": pattern.size}
        return {k: v for k, v in point.items() if k in self.names}

    def _declared(self, victims: list[Flow], first: Flow) -> bool:
        """Whether ``victims`` is none, or one of this space's victims as :meth:`build` puts it beside ``first``."""
        if not victims:
            return True
        return len(victims) == 1 and victims[0].victim in self.victims and \
            self._victim(victims[0].victim, first) == victims[0]

    def problems(self, point: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Every reason ``point`` is not a legal experiment, as ``(constraint or dimension, sentence)``."""
        found: list[tuple[str, str]] = []
        for key in point:
            if key not in PARAMETERS:
                found.append(("unknown_parameter", f"{key!r} is not a parameter; use one of "
                              f"{', '.join(PARAMETERS)}"))
        for d in self.dimensions:
            if d.name in point:
                msg = d.check(point[d.name])
                if msg:
                    found.append((d.name, msg))
        if found:
            return found
        workload = self.build(point)
        if workload.pattern is not None:
            try:
                check_pattern(workload.pattern, "pattern")
            except InputError as exc:
                return [("pattern", str(exc))]
        return violations(workload.flows)

    def validate(self, point: Mapping[str, Any]) -> None:
        """Raise :class:`ConstraintError` naming the first problem of ``point``."""
        found = self.problems(point)
        if found:
            raise ConstraintError(*found[0])

    def is_valid(self, point: Mapping[str, Any]) -> bool:
        return not self.problems(point)

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """A uniformly sampled legal point (rejection sampling)."""
        for _ in range(_MAX_TRIES):
            point = {d.name: d.sample(rng) for d in self.dimensions}
            if self.is_valid(point):
                return point
        raise InputError(f"space {self.name!r}: no legal point found in {_MAX_TRIES} samples; "
                         "its fixed values and ranges contradict the constraints")

    def mutate(self, point: Mapping[str, Any], rng: np.random.Generator, name: str | None = None,
               repair: float = 0.0, refused: Callable[[Mapping[str, Any]], int] | None = None
               ) -> tuple[dict[str, Any], str]:
        """A legal neighbour of ``point`` differing in one dimension; returns it and that dimension's name.

        Args:
            point: a legal point of this space.
            rng: the random stream.
            name: mutate this dimension only (default: one chosen uniformly per try).
            repair: chance that a mutation which breaks a constraint (or is ``refused``) is repaired (see
                :meth:`repair`) rather than redrawn. Without repair a chain cannot cross a constraint that
                couples dimensions (UD carries 200 000 MRs that RC would have to pin: moving to RC needs
                smaller MRs at once), nor step around a region ``refused`` rules out.
            refused: how many reasons a legal neighbour is refused for (a search: how many known anomalies'
                regions hold it); a neighbour must have none.

        Returns ``(dict(point), name)`` unchanged when no acceptable neighbour is found.
        """
        searched = [d for d in self.dimensions if d.name == name or (name is None and self.applies(d.name, point))]
        if not searched:
            raise KeyError(name)
        # one dimension has few distinct moves: fewer tries before giving up on it
        for _ in range(_MAX_TRIES if name is None else _MAX_TRIES // 32):
            d = searched[int(rng.integers(len(searched)))]
            new = dict(point)
            new[d.name] = d.mutate(point[d.name], rng)
            if new[d.name] == point[d.name]:
                continue
            if self.is_valid(new) and (refused is None or not refused(new)):
                return new, d.name
            if repair and rng.random() < repair:
                fixed = self.repair(new, d.name, rng, refused)
                if fixed is not None:
                    return fixed, d.name
        return dict(point), searched[0].name

    def repair(self, point: Mapping[str, Any], keep: str, rng: np.random.Generator,
               refused: Callable[[Mapping[str, Any]], int] | None = None) -> dict[str, Any] | None:
        """Make ``point`` legal (and not ``refused``) by changing up to :data:`MAX_REPAIRS` dimensions but
        ``keep``.

        Each round changes one dimension to one of its repair values (halved, doubled, simplest, ...), drawn
        among the changes that leave fewer problems (broken constraints; for a legal point, the reasons it is
        ``refused``: a point inside two known regions gets out one at a time); None when no such sequence
        reaches a legal point refused for nothing.
        """

        def broken(p: Mapping[str, Any]) -> int:
            n = len(self.problems(p))
            return n if n or refused is None else int(refused(p))

        current = dict(point)
        worst = broken(current)
        for _ in range(MAX_REPAIRS):
            fixed: list[dict[str, Any]] = []
            better: list[tuple[dict[str, Any], int]] = []
            for d in self.dimensions:
                if d.name == keep:
                    continue
                for value in d.repairs(current[d.name]):
                    if value == current[d.name]:
                        continue
                    trial = {**current, d.name: value}
                    n = broken(trial)
                    if n == 0:
                        fixed.append(trial)
                    elif n < worst:
                        better.append((trial, n))
            if fixed:
                return fixed[int(rng.integers(len(fixed)))]
            if not better:
                return None
            current, worst = better[int(rng.integers(len(better)))]
        return None

    def simplest(self) -> dict[str, Any]:
        """The simplest point: every dimension at its declared simplest value."""
        return {d.name: d.simplest() for d in self.dimensions}

    def rows(self) -> list[dict[str, Any]]:
        """One row per parameter, for ``collie space show``."""
        out: list[dict[str, Any]] = []
        for pname, default in PARAMETERS.items():
            if pname in self.names:
                d = self.dimension(pname)
                out.append({"parameter": pname, "searched": True, "domain": d.domain(),
                            "simplest": d.simplest(), "meaning": d.help or PARAMETER_HELP[pname]})
            else:
                value = self.fixed.get(pname, default)
                out.append({"parameter": pname, "searched": False, "domain": f"fixed: {value}",
                            "simplest": value, "meaning": PARAMETER_HELP[pname]})
        for row in out:
            if row["parameter"] == "victim" and self.victims:
                row["meaning"] += "; " + "; ".join(
                    f"{name}: {f.transport} {f.verbs} of {'/'.join(format_bytes(s) for s in f.sizes)}, {f.qps} QP, "
                    f"depth {f.sq_depth}" for name, f in self.victims.items())
        return out


def _victim_ends(hosts: tuple[str, ...]) -> tuple[str, str]:
    """Where a victim beside a pattern over ``hosts`` runs: from the second host to the last (to the first of
    two; on the one host of a pattern of one, loopback)."""
    return hosts[1 % len(hosts)], hosts[-1] if len(hosts) > 2 else hosts[0]


def _flow_point(f: Flow, direction: str, memory: str, victim: str) -> dict[str, Any]:
    """Every flow parameter of a point whose flows are shaped as ``f`` (in :data:`PARAMETERS` order)."""
    return {"op": f"{f.transport}_{f.opcodes[0]}", "direction": direction, "qps": f.qps, "mrs": f.mrs,
            "mr_size": f.mr_size, "batch": f.batch, "sges": f.sges, "wq_depth": f.sq_depth, "mtu": f.mtu,
            "sizes": list(f.sizes), "memory": memory, "processes": f.processes, "inline": f.inline,
            "signal_every": f.signal_every, "burst": f.burst, "mix": list(f.opcodes[1:]),
            "rq_depth": f.rq_depth, "recv_batch": f.recv_batch, "recv_sges": f.recv_sges,
            "recv_delay_us": f.recv_delay_us, "mr_churn": f.mr_churn, "qp_churn": f.qp_churn, "victim": victim,
            "tclass": "default" if f.tclass is None else f.tclass}


def constraint_rows() -> list[dict[str, str]]:
    """The named constraints, for ``collie space show``."""
    rows = [{"constraint": c.name, "rule": c.summary} for c in CONSTRAINTS]
    rows += [{"constraint": c.name, "rule": c.summary} for c in WORKLOAD_CONSTRAINTS]
    rows.append({"constraint": "pinned_memory", "rule": "each host pins at most 64G of MRs"})
    rows.append({"constraint": "pattern", "rule": "a pattern's connections push (WRITE, WRITE_IMM, SEND, "
                 "SEND_IMM; kv_scatter WRITE_IMM only); pairwise needs an even number of ranks"})
    return rows


_KINDS: Final = ("choice", "int", "bool", "sizes", "opcodes")
_DIM_FIELDS: Final = {
    "choice": ("name", "kind", "values", "simplest", "ordered", "weights", "help"),
    "int": ("name", "kind", "min", "max", "scale", "simplest", "help"),
    "bool": ("name", "kind", "simplest", "help"),
    "sizes": ("name", "kind", "min", "max", "max_len", "simplest", "boundaries", "help"),
    "opcodes": ("name", "kind", "values", "max_len", "help"),
}
_CHOICE_DOMAINS: Final[Mapping[str, tuple[Any, ...]]] = {
    "op": OPS, "direction": DIRECTIONS, "memory": MEMORY_PLACEMENTS, "mtu": MTUS, "pattern": PATTERNS,
    "tclass": ("default", *range(TCLASS_LIMITS[0], TCLASS_LIMITS[1] + 1)),
}


def _dimension(raw: Any, where: str) -> Dimension:
    expect_type(raw, dict, where, "a table")
    kind = raw.get("kind")
    if kind not in _KINDS:
        raise InputError(f"{where}.kind: {kind!r} is not a dimension kind; use one of {', '.join(_KINDS)}")
    check_fields(raw, where, _DIM_FIELDS[kind], required=("name", "kind"))
    name = raw["name"]
    if name not in PARAMETERS:
        raise InputError(f"{where}.name: {name!r} is not a parameter; use one of {', '.join(PARAMETERS)}")
    help_text = expect_type(raw.get("help", ""), str, f"{where}.help", "a string")
    default = PARAMETERS[name]
    if kind == "choice":
        values = expect_type(raw.get("values"), list, f"{where}.values", "a non-empty list")
        allowed = _CHOICE_DOMAINS.get(name)
        for v in values:
            if allowed is not None and (v not in allowed or isinstance(v, bool)):
                raise InputError(f"{where}.values: {v!r} is not a legal {name}; use values from "
                                 f"{', '.join(map(str, allowed))}")
        if not values:
            raise InputError(f"{where}.values: expected a non-empty list")
        simplest = raw.get("simplest", default if default in values else values[0])
        if simplest not in values:
            raise InputError(f"{where}.simplest: {simplest!r} is not one of its values")
        ordered = expect_type(raw.get("ordered", False), bool, f"{where}.ordered", "true or false")
        weights = expect_type(raw.get("weights", []), list, f"{where}.weights", "a list of numbers")
        if weights and (len(weights) != len(values) or not all(
                isinstance(w, int | float) and not isinstance(w, bool) and w >= 0 for w in weights)
                or not sum(weights)):
            raise InputError(f"{where}.weights: expected one number >= 0 per value ({len(values)}), not all 0")
        return Choice(name, tuple(values), simplest, ordered, help_text, tuple(float(w) for w in weights))
    if kind == "opcodes":
        if name != "mix":
            raise InputError(f"{where}: kind \"opcodes\" is only for the parameter 'mix'")
        values = expect_type(raw.get("values", list(OPCODES)), list, f"{where}.values", "a list of opcodes")
        for v in values:
            if v not in OPCODES:
                raise InputError(f"{where}.values: {v!r} is not an opcode; use values from {', '.join(OPCODES)}")
        max_len = expect_type(raw.get("max_len", 3), int, f"{where}.max_len", "an integer from 1 to 7")
        if not values or not 1 <= max_len <= 7:
            raise InputError(f"{where}: needs at least one opcode in values and max_len from 1 to 7")
        return OpcodePattern(name, tuple(values), max_len, (), help_text)
    if kind == "bool":
        if not isinstance(default, bool):
            raise InputError(f"{where}: parameter {name!r} is not a flag; use kind = \"int\" or \"choice\"")
        simplest_b = expect_type(raw.get("simplest", default), bool, f"{where}.simplest", "true or false")
        return Flag(name, simplest_b, help_text)
    lo = expect_type(raw.get("min"), int, f"{where}.min", "an integer")
    hi = expect_type(raw.get("max"), int, f"{where}.max", "an integer")
    if not 0 <= lo <= hi or (lo == 0 and raw.get("scale", "log2") == "log2"):
        raise InputError(f"{where}: min {lo} and max {hi} must satisfy 0 <= min <= max (min >= 1 on a log2 "
                         "scale)")
    if kind == "sizes":
        if name != "sizes":
            raise InputError(f"{where}: kind \"sizes\" is only for the parameter 'sizes'")
        max_len = expect_type(raw.get("max_len", 8), int, f"{where}.max_len", "an integer from 1 to 8")
        if not 1 <= max_len <= 8:
            raise InputError(f"{where}.max_len: {max_len} is out of range; allowed is 1 to 8")
        simplest_s = raw.get("simplest", [max(lo, min(hi, 65536))])
        boundaries = expect_type(raw.get("boundaries", list(SIZE_BOUNDARIES)), list, f"{where}.boundaries",
                                 "a list of byte sizes (the profile's burst size, say)")
        if not boundaries or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in boundaries):
            raise InputError(f"{where}.boundaries: expected a non-empty list of integers >= 1, got {boundaries!r}")
        dim = SizeVector(name, lo, hi, max_len, tuple(simplest_s), help_text, tuple(boundaries))
    else:
        if isinstance(default, bool) or not isinstance(default, int):
            raise InputError(f"{where}: parameter {name!r} is not an integer; use kind = \"choice\"")
        scale = raw.get("scale", "log2")
        if scale not in ("log2", "linear"):
            raise InputError(f"{where}.scale: {scale!r} is not a scale; use log2 or linear")
        simplest_i = raw.get("simplest", min(hi, max(lo, default)))
        dim = IntRange(name, lo, hi, scale, simplest_i, help_text)  # type: ignore[assignment]
    msg = dim.check(dim.simplest())
    if msg:
        raise InputError(f"{where}.simplest: {msg}")
    return dim


def _shrink_order(raw: Any, where: str) -> tuple[str, ...]:
    """The ``[minimize]`` table's ``order``: parameters and one ``"*"``, each once (default :data:`SHRINK_ORDER`)."""
    expect_type(raw, dict, where, "a table")
    check_fields(raw, where, ("order", "again"))
    order = expect_type(raw.get("order", list(SHRINK_ORDER)), list, f"{where}.order",
                        'a list of parameters and one "*" (the others, in groups)')
    for name in order:
        if name != "*" and name not in PARAMETERS:
            raise InputError(f"{where}.order: {name!r} is not a parameter; use \"*\" or one of {', '.join(PARAMETERS)}")
    if order.count("*") != 1 or len(set(order)) != len(order):
        raise InputError(f'{where}.order: name each parameter at most once and "*" (the others, in groups) once')
    return tuple(order)


def _shrink_again(raw: Any, where: str, dimensions: tuple[Dimension, ...]) -> tuple[str, ...]:
    """The ``[minimize]`` table's ``again``: numeric or ordered dimensions of the space, each once (default none)."""
    again = expect_type(raw.get("again", []), list, f"{where}.again", "a list of numeric dimensions of the space")
    numeric = {d.name for d in dimensions if isinstance(d, IntRange) or (isinstance(d, Choice) and d.ordered)}
    for name in again:
        if name not in numeric:
            raise InputError(f"{where}.again: {name!r} is not a numeric or ordered dimension of this space; use one "
                             f"of {', '.join(sorted(numeric)) or 'none'}")
    if len(set(again)) != len(again):
        raise InputError(f"{where}.again: names a dimension twice")
    return tuple(again)


def _victims(raw: Any, where: str) -> dict[str, Flow]:
    """The ``[victims.NAME]`` tables of a space file: each a flow without hosts (a point puts it beside its first
    flow), legal on its own.

    Raises:
        InputError: a name that cannot name a victim, a table that sets hosts or a victim, a bad field, or a flow
            that breaks a constraint (the message names the table).
    """
    expect_type(raw, dict, where, "a table of [victims.NAME] tables")
    out: dict[str, Flow] = {}
    for name, table in raw.items():
        at = f"{where}.{victim_name(name, where)}"
        expect_type(table, dict, at, "a table of flow fields")
        for key in ("client", "server", "victim"):
            if key in table:
                raise InputError(f"{at}.{key}: a victim's hosts and name come from the point; leave {key} out")
        flow = flow_from_dict({**table, "client": "a", "server": "b"}, at)
        found = violations((flow,))
        if found:
            raise InputError(f"{at}: {found[0][1]}")
        out[name] = flow
    return out


def load_space(path: str | Path | None = None) -> SearchSpace:
    """Load a space file (default: the whole space, ``workloads/default.toml``).

    Raises:
        InputError: malformed file, unknown field, unknown parameter, bad range, or an illegal simplest point.
    """
    p = Path(path) if path is not None else data_dir("workloads") / DEFAULT_SPACE
    raw = read_toml(p)
    where = str(p)
    check_fields(raw, where, ("name", "description", "dimension", "fixed", "minimize", "victims"),
                 required=("dimension",))
    dims_raw = expect_type(raw["dimension"], list, f"{where}: dimension", "a list of [[dimension]] tables")
    dims = tuple(_dimension(d, f"{where}: dimension[{i}]") for i, d in enumerate(dims_raw))
    seen: set[str] = set()
    for d in dims:
        if d.name in seen:
            raise InputError(f"{where}: dimension {d.name!r} is declared twice")
        seen.add(d.name)
    fixed = expect_type(raw.get("fixed", {}), dict, f"{where}: fixed", "a table of parameter = value")
    for key in fixed:
        if key not in PARAMETERS:
            raise InputError(f"{where}: fixed.{key}: not a parameter; use one of {', '.join(PARAMETERS)}")
        if key in seen:
            raise InputError(f"{where}: fixed.{key}: is also a searched dimension; keep one of the two")
    victims = _victims(raw.get("victims", {}), f"{where}: victims")
    named = [*(d.values for d in dims if d.name == "victim" and isinstance(d, Choice)), [fixed.get("victim", "none")]]
    for value in (v for values in named for v in values):
        if value != "none" and value not in victims:
            raise InputError(f"{where}: victim {value!r} is not declared; declare a [victims.{value}] table or use "
                             f"one of: none{''.join(', ' + n for n in victims)}")
    space = SearchSpace(
        name=expect_type(raw.get("name", p.stem), str, f"{where}: name", "a string"),
        dimensions=dims,
        fixed=dict(fixed),
        description=expect_type(raw.get("description", ""), str, f"{where}: description", "a string"),
        shrink_order=_shrink_order(raw.get("minimize", {}), f"{where}: minimize"),
        victims=victims,
        shrink_again=_shrink_again(raw.get("minimize", {}), f"{where}: minimize", dims),
    )
    problems = space.problems(space.simplest())
    if problems:
        raise InputError(f"{where}: the simplest point is illegal: {problems[0][1]}")
    return space
