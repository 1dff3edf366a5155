"""Named legality constraints of RDMA workloads, shared by workload files and the search space.

Each constraint looks at one flow and returns ``None`` when it holds, or a sentence that says what is wrong and
what is allowed. :func:`violations` lists every broken one; :func:`validate_flows` raises on the first.
The names are stable: presets, docs and tests refer to them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from collie.errors import ConstraintError
from collie.model.flow import ATOMIC_BYTES, ATOMIC_OPCODES, INLINE_OPCODES, Flow, hosts_of
from collie.model.units import format_bytes

LEGAL_OPCODES: Final = {
    "RC": ("WRITE", "WRITE_IMM", "READ", "SEND", "SEND_IMM", "ATOMIC_FA", "ATOMIC_CS"),
    "UC": ("WRITE", "WRITE_IMM", "SEND", "SEND_IMM"),
    "UD": ("SEND", "SEND_IMM"),
}
#: Registered memory one host may pin for one workload (all flows, both roles).
MAX_PINNED_BYTES: Final = 64 << 30


@dataclass(frozen=True)
class Constraint:
    """A named rule over one flow."""

    name: str
    summary: str
    check: Callable[[Flow], str | None]


def _legal_opcode(f: Flow) -> str | None:
    legal = LEGAL_OPCODES[f.transport]
    for opcode in f.opcodes:
        if opcode not in legal:
            return f"{f.transport} does not support {opcode}; {f.transport} allows {', '.join(legal)}"
    return None


def _ud_msg_le_mtu(f: Flow) -> str | None:
    if f.transport == "UD" and f.max_size > f.mtu:
        return (f"UD messages must fit in one MTU: {f.max_size} B is larger than the MTU of {f.mtu} B; "
                f"use sizes <= {f.mtu} or a larger MTU")
    return None


def _atomics(f: Flow) -> str | None:
    if f.opcode in ATOMIC_OPCODES and (set(f.sizes) != {ATOMIC_BYTES} or f.sges != 1):
        return (f"atomic {f.opcode} operates on exactly {ATOMIC_BYTES} B in one SGE; set sizes = [{ATOMIC_BYTES}] "
                f"and sges = 1 (in a pattern mixed with other opcodes, atomic requests take {ATOMIC_BYTES} B "
                f"whatever the sizes say)")
    return None


def _depth_ge_batch(f: Flow) -> str | None:
    if f.sq_depth < f.batch:
        return (f"sq_depth {f.sq_depth} is below batch {f.batch}: a post list cannot exceed the send queue; "
                f"use sq_depth >= {f.batch}")
    return None


def _signal_within_depth(f: Flow) -> str | None:
    if f.signal_every > f.sq_depth:
        return (f"signal_every {f.signal_every} exceeds sq_depth {f.sq_depth}: the send queue would fill "
                f"before a completion frees it; use signal_every <= {f.sq_depth}")
    return None


def _sges_le_min_size(f: Flow) -> str | None:
    if f.sges > f.min_size:
        return f"{f.sges} SGEs cannot split a {f.min_size} B message; use sges <= {f.min_size}"
    return None


def _msg_fits_mr(f: Flow) -> str | None:
    if f.max_size > f.mr_size:
        return (f"a message of {format_bytes(f.max_size)} does not fit an MR of {format_bytes(f.mr_size)} (a "
                f"message's range, all its SGEs, lies in one MR); use mr_size >= {format_bytes(f.max_size)}")
    return None


def _inline(f: Flow) -> str | None:
    if f.inline and not INLINE_OPCODES.intersection(f.opcodes):
        return f"inline data only applies to WRITE and SEND, not {f.opcode}; set inline = 0"
    return None


def _recv_depth_ge_batch(f: Flow) -> str | None:
    if f.rq_depth < f.recv_batch:
        return (f"rq_depth {f.rq_depth} is below recv_batch {f.recv_batch}: a receive post list cannot exceed "
                f"the receive queue; use rq_depth >= {f.recv_batch}")
    return None


def _recv_sges_le_min_size(f: Flow) -> str | None:
    if f.recv_sges > f.min_size:
        return f"{f.recv_sges} receive SGEs cannot split a {f.min_size} B message; use recv_sges <= {f.min_size}"
    return None


CONSTRAINTS: Final[tuple[Constraint, ...]] = (
    Constraint("legal_opcode", "every opcode of the pattern: UD SEND only; UC SEND and WRITE; RC all",
               _legal_opcode),
    Constraint("ud_msg_le_mtu", "UD messages are at most one MTU", _ud_msg_le_mtu),
    Constraint("atomics_8b", "atomics are RC only, 8 B, one SGE", _atomics),
    Constraint("depth_ge_batch", "sq_depth >= batch", _depth_ge_batch),
    Constraint("signal_within_depth", "signal_every <= sq_depth", _signal_within_depth),
    Constraint("sges_le_min_size", "every SGE carries at least one byte", _sges_le_min_size),
    Constraint("msg_fits_mr", "a message's range lies in one MR", _msg_fits_mr),
    Constraint("inline_needs_write_or_send", "inline data only for WRITE and SEND", _inline),
    Constraint("recv_depth_ge_batch", "rq_depth >= recv_batch", _recv_depth_ge_batch),
    Constraint("recv_sges_le_min_size", "every receive SGE holds at least one byte", _recv_sges_le_min_size),
)


@dataclass(frozen=True)
class WorkloadConstraint:
    """A named rule over a workload's flows together."""

    name: str
    summary: str
    check: Callable[[Sequence[Flow]], str | None]


def _victim_needs_aggressor(flows: Sequence[Flow]) -> str | None:
    if any(f.victim for f in flows) and all(f.victim for f in flows):
        return "a victim needs an aggressor: at least one flow must not be a victim (leave its victim unset)"
    return None


def _victim_shares_hosts(flows: Sequence[Flow]) -> str | None:
    aggressors = set(hosts_of(f for f in flows if not f.victim))
    for f in flows:
        if f.victim and aggressors and not {f.client.host, f.server.host} <= aggressors:
            return (f"victim {f.victim!r} runs {f.client.host} -> {f.server.host}, but its aggressors use only "
                    f"{', '.join(sorted(aggressors))}: a victim runs between hosts its aggressors use")
    return None


WORKLOAD_CONSTRAINTS: Final[tuple[WorkloadConstraint, ...]] = (
    WorkloadConstraint("victim_needs_aggressor", "a victim flow needs at least one aggressor flow beside it",
                       _victim_needs_aggressor),
    WorkloadConstraint("victim_shares_hosts", "a victim runs between hosts its aggressors use",
                       _victim_shares_hosts),
)


def pinned_bytes_per_host(flows: Sequence[Flow]) -> dict[str, int]:
    """Registered memory each host pins (hosts sorted): every flow registers ``mrs x mr_size`` on both of its
    ends."""
    out: dict[str, int] = dict.fromkeys(hosts_of(flows), 0)
    for f in flows:
        out[f.client.host] += f.mrs * f.mr_size
        out[f.server.host] += f.mrs * f.mr_size
    return out


def violations(flows: Sequence[Flow]) -> list[tuple[str, str]]:
    """Every broken constraint of a workload's ``flows`` as ``(name, sentence)``, flows in order; empty when the
    workload is legal."""
    found: list[tuple[str, str]] = []
    many = len(flows) > 1
    for i, flow in enumerate(flows):
        for c in CONSTRAINTS:
            msg = c.check(flow)
            if msg is not None:
                found.append((c.name, f"flows[{i}]: {msg}" if many else msg))
    for wc in WORKLOAD_CONSTRAINTS:
        msg = wc.check(flows)
        if msg is not None:
            found.append((wc.name, msg))
    for host, pinned in pinned_bytes_per_host(flows).items():
        if pinned > MAX_PINNED_BYTES:
            found.append(("pinned_memory", f"host {host} would pin {format_bytes(pinned)} of MRs; allowed is "
                          f"at most {format_bytes(MAX_PINNED_BYTES)} (fewer or smaller MRs)"))
    return found


def validate_flows(flows: Sequence[Flow], source: str = "workload") -> None:
    """Raise :class:`ConstraintError` for the first broken constraint of a workload's ``flows``."""
    found = violations(flows)
    if found:
        name, msg = found[0]
        raise ConstraintError(name, f"{source}: {msg}")
