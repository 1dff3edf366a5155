"""A device's limits and the check of a workload against them (pure: no pyverbs needed).

:class:`DeviceLimits` is a plain record filled from ``ibv_query_device``/``ibv_query_port`` (see
``device.py``) or, in tests, by hand. :func:`check_workload` lists every reason a workload cannot run on the
device; the target raises :class:`~collie.targets.base.Unsupported` with the first one.

On a local verbs target every host name of a workload maps onto the one device, so both ends of every flow
(``qps`` client QPs and ``qps`` server QPs, ``mrs`` MRs on each side) live on it: the totals checked here
count both sides. On one host of a cross-host run (``roles``: the workload hosts it plays) only the ends on
its roles count, and flows with no end there are not checked.

Control-path churn (``mr_churn``, ``qp_churn``; see ``churn``) counts one second of it per churning end against
the device as if nothing churned within the second were freed yet (a device may reclaim destroyed objects
lazily): ``mr_churn`` MRs against ``max_mr`` and their bytes against the pinned-memory budget, ``qp_churn`` QPs
against ``max_qp``; on a cross-host run each host counts the churning ends on its roles.

Memory: the MRs' bytes (``registered_bytes``) may pin at most half of the host's available memory (and no more
than ``RLIMIT_MEMLOCK``), and the MRs with their whole pages and bookkeeping (``mr_memory_bytes``: small MRs cost
several times their size) may take at most 90 % of it; beyond, the kernel's OOM killer would end the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from collie.model.flow import ATOMIC_OPCODES, INLINE_OPCODES, Flow, nic_problem
from collie.model.units import format_bytes
from collie.model.workload import Workload

#: IBV MTU enum value -> bytes.
MTU_BYTES: Final = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
#: Room a UD receive buffer needs in front of the payload for the Global Route Header.
GRH_BYTES: Final = 40
#: At most this many worker processes per run (all flows).
MAX_WORKERS: Final = 256
#: The largest share of the host's available memory one run may register (MRs are pinned: they cannot be swapped).
MAX_PINNED_FRACTION: Final = 0.5
#: Bytes of a memory page: pinning and pyverbs' MR buffers (``posix_memalign`` to a page) go by whole pages.
PAGE_BYTES: Final = 4096
#: Memory an MR takes beyond its own pages: pyverbs' page-aligned buffer costs the process one more page (the
#: allocator's header sits in front of the aligned address), the kernel's MR record and page map the rest.
#: Measured on rxe in the soft-RoCE guest (2026-12-08): 100,000 MRs of 4 KiB took 8.5 KiB of RSS and 13.3 KiB of
#: ``MemAvailable`` each.
MR_OVERHEAD_BYTES: Final = 9 * 1024
#: The most of the host's available memory a run's MRs may take, their overhead included (beyond it the kernel's
#: OOM killer, not collie, ends the run: 200,000 MRs of 4 KiB, 800 MiB pinned, killed a 2 GiB guest).
MAX_MR_MEMORY_FRACTION: Final = 0.9
#: READs/atomics the engine lets a QP keep outstanding (its ``max_rd_atomic`` and ``max_dest_rd_atomic``) where
#: the device allows as many.
ENGINE_RD_ATOMIC: Final = 16


@dataclass(frozen=True)
class DeviceLimits:
    """What one device and port allow (names follow ``struct ibv_device_attr`` / ``ibv_port_attr``).

    Attributes:
        max_qp, max_qp_wr, max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd: device ceilings.
        max_mr_size: largest MR in bytes.
        max_qp_rd_atom: outstanding READ/atomic requests a QP may have as responder/initiator.
        atomics: the device executes atomics (``atomic_caps`` is not ``IBV_ATOMIC_NONE``).
        active_mtu, max_mtu: port MTUs in bytes.
        numa_nodes: NUMA nodes of the host (1 when unknown).
        memlock_bytes: the process's RLIMIT_MEMLOCK (``None`` = unlimited).
        available_memory_bytes: the host's ``MemAvailable`` when the device was opened (``None`` = unknown);
            a run may pin at most :data:`MAX_PINNED_FRACTION` of it.
        max_inline_data: the most inline data a QP of the device accepts (``ibv_query_device`` does not say:
            probed by creating QPs, see ``device.probe_inline``; ``None`` = not probed).
    """

    max_qp: int
    max_qp_wr: int
    max_sge: int
    max_sge_rd: int
    max_cq: int
    max_cqe: int
    max_mr: int
    max_pd: int
    max_mr_size: int
    max_qp_rd_atom: int
    atomics: bool
    active_mtu: int
    max_mtu: int
    numa_nodes: int = 1
    memlock_bytes: int | None = None
    available_memory_bytes: int | None = None
    max_inline_data: int | None = None


def rd_atomic_window(lim: DeviceLimits) -> int:
    """READs/atomics a QP of the engine keeps outstanding on this device: :data:`ENGINE_RD_ATOMIC`, within
    ``max_qp_rd_atom``."""
    return min(ENGINE_RD_ATOMIC, lim.max_qp_rd_atom)


def send_cqes_per_qp(flow: Flow) -> int:
    """CQ entries one client QP can have outstanding: one per signalled WR in a full send queue, plus one for
    the forced signal at the end of a window (see ``plan.signal_positions``)."""
    return -(-flow.sq_depth // flow.signal_every) + 1


def ends_here(flow: Flow, roles: tuple[str, ...] | None) -> tuple[bool, bool]:
    """(client end, server end) of ``flow`` on a host playing ``roles`` (``None``: every role)."""
    if roles is None:
        return True, True
    return flow.client.host in roles, flow.server.host in roles


def registered_bytes(workload: Workload, roles: tuple[str, ...] | None = None) -> int:
    """Memory the run registers on the device: ``mrs x mr_size`` on both sides of every flow (UD receive MRs
    get room for the GRH) plus one second of MR churn (``mr_churn x mr_size``) on each; with ``roles``, on the
    ends of those roles only."""
    total = 0
    for f in workload.flows:
        grh = GRH_BYTES if f.transport == "UD" else 0
        client, server = ends_here(f, roles)
        total += client * f.mrs * f.mr_size + server * f.mrs * (f.mr_size + grh)
        total += (client + server) * f.mr_churn * f.mr_size
    return total


def mr_memory_bytes(workload: Workload, roles: tuple[str, ...] | None = None) -> int:
    """Memory the run's MRs take, counted as :func:`registered_bytes` counts them (both sides, one second of
    ``mr_churn``; with ``roles``, the ends of those roles only) but each MR in whole pages plus
    :data:`MR_OVERHEAD_BYTES`: small MRs cost far more than their ``mr_size``."""
    total = 0
    for f in workload.flows:
        grh = GRH_BYTES if f.transport == "UD" else 0
        client, server = ends_here(f, roles)
        per = f.mrs + f.mr_churn
        total += client * per * (_pages(f.mr_size) + MR_OVERHEAD_BYTES)
        total += server * per * (_pages(f.mr_size + grh) + MR_OVERHEAD_BYTES)
    return total


def _pages(n: int) -> int:
    return -(-n // PAGE_BYTES) * PAGE_BYTES


def _flow_problems(i: int, f: Flow, lim: DeviceLimits, many: bool, roles: tuple[str, ...] | None) -> list[str]:
    where = f"flows[{i}]: " if many else ""
    out: list[str] = []
    reads = "READ" in f.opcodes
    sge_cap = min(lim.max_sge, lim.max_sge_rd) if reads else lim.max_sge
    if f.sges > sge_cap:
        which = "max_sge_rd" if reads and lim.max_sge_rd < lim.max_sge else "max_sge"
        out.append(f"{where}sges {f.sges} > device {which} {sge_cap}")
    if f.consumes_receives and f.recv_sges > lim.max_sge:
        out.append(f"{where}recv_sges {f.recv_sges} > device max_sge {lim.max_sge}")
    if f.sq_depth > lim.max_qp_wr:
        out.append(f"{where}sq_depth {f.sq_depth} > device max_qp_wr {lim.max_qp_wr}")
    inline = lim.max_inline_data
    if inline is not None and f.inline > inline and INLINE_OPCODES.intersection(f.opcodes):
        out.append(f"{where}inline {f.inline} > device max_inline_data {inline}")
    if f.consumes_receives and f.rq_depth > lim.max_qp_wr:
        out.append(f"{where}rq_depth {f.rq_depth} > device max_qp_wr {lim.max_qp_wr}")
    if send_cqes_per_qp(f) > lim.max_cqe:
        out.append(f"{where}sq_depth {f.sq_depth} needs {send_cqes_per_qp(f)} CQ entries per QP > device "
                   f"max_cqe {lim.max_cqe}")
    if f.consumes_receives and f.rq_depth > lim.max_cqe:
        out.append(f"{where}rq_depth {f.rq_depth} > device max_cqe {lim.max_cqe}")
    if f.mtu > lim.active_mtu:
        out.append(f"{where}mtu {f.mtu} > port active_mtu {lim.active_mtu}")
    if f.transport == "UD" and f.max_size > min(f.mtu, lim.active_mtu):
        out.append(f"{where}UD message {f.max_size} B > port active_mtu {lim.active_mtu}")
    if f.max_size > f.mr_size:
        out.append(f"{where}message {format_bytes(f.max_size)} > mr_size {format_bytes(f.mr_size)}: a message "
                   f"lies in one MR, whatever its SGEs (msg_fits_mr)")
    mr_bytes = f.mr_size + (GRH_BYTES if f.transport == "UD" else 0)
    if mr_bytes > lim.max_mr_size:
        out.append(f"{where}mr_size {format_bytes(f.mr_size)} > device max_mr_size "
                   f"{format_bytes(lim.max_mr_size)}")
    atomics = sorted(ATOMIC_OPCODES.intersection(f.opcodes))
    if atomics and not lim.atomics:
        out.append(f"{where}{atomics[0]} needs atomics; the device reports atomic_caps IBV_ATOMIC_NONE")
    for side, ep in (("client", f.client), ("server", f.server)):
        if ep.memory == "gpu":
            out.append(f"{where}{side}.memory gpu is not supported by the verbs target "
                       "(no GPU-Direct buffers)")
        elif ep.memory == "remote" and lim.numa_nodes < 2:
            out.append(f"{where}{side}.memory remote needs a second NUMA node; this host has "
                       f"{lim.numa_nodes}")
    if f.processes > f.qps:
        out.append(f"{where}processes {f.processes} > qps {f.qps}: every worker process drives at least "
                   "one QP")
    return out


def check_workload(workload: Workload, lim: DeviceLimits, roles: tuple[str, ...] | None = None) -> list[str]:
    """Every reason ``workload`` cannot run on a device with limits ``lim`` (empty: it can); ``roles``: the
    workload hosts this host plays in a cross-host run (``None``: a local run, every end here).

    Each reason is a short phrase naming the workload field, its value and the device limit, e.g.
    ``qps 600000 x 2 sides = 1200000 > device max_qp 1048560``.
    """
    many = len(workload.flows) > 1
    out: list[str] = []
    nics = nic_problem(workload.hosts)
    if nics:
        out.append(nics)
    here = [(i, f, sum(ends_here(f, roles))) for i, f in enumerate(workload.flows)]
    here = [(i, f, n) for i, f, n in here if n]
    for i, f, _ in here:
        out.extend(_flow_problems(i, f, lim, many, roles))
    qps = sum(n * f.qps for _, f, n in here)
    mrs = sum(n * f.mrs for _, f, n in here)
    churn_qps = sum(n * f.qp_churn for _, f, n in here)
    churn_mrs = sum(n * f.mr_churn for _, f, n in here)
    sides = roles is None  # a local run: every flow end counted on both sides of this device

    def amount(name: str, n: int) -> str:
        return f"{name} {n // 2} x 2 sides" if sides else f"{name} of this host's flow ends {n}"

    for name, n, unit, churn, limit, bound in (("qp", qps, "QPs", churn_qps, "max_qp", lim.max_qp),
                                               ("mr", mrs, "MRs", churn_mrs, "max_mr", lim.max_mr)):
        if n > bound:
            out.append(f"{amount(name + 's', n)}{f' = {n}' if sides else ''} > device {limit} {bound}")
        if churn and n + churn > bound:
            out.append(f"{amount(name + '_churn', churn)} beside {n} {unit} = {n + churn} {unit} in a second "
                       f"> device {limit} {bound}")
    workers = sum(f.processes for _, f, _ in here)
    if workers > MAX_WORKERS:
        out.append(f"processes {workers} in all > {MAX_WORKERS} worker processes per run")
    if workers > lim.max_pd:
        out.append(f"{workers} worker processes need {workers} PDs > device max_pd {lim.max_pd}")
    pinned = registered_bytes(workload, roles)
    what = "of MRs and a second of mr_churn" if any(f.mr_churn for _, f, _ in here) else "of MRs"
    if lim.memlock_bytes is not None and pinned > lim.memlock_bytes:
        out.append(f"{format_bytes(pinned)} {what} > RLIMIT_MEMLOCK {format_bytes(lim.memlock_bytes)} "
                   f"(raise it with ulimit -l or limits.conf)")
    available = lim.available_memory_bytes
    if available is not None and pinned > MAX_PINNED_FRACTION * available:
        out.append(f"{format_bytes(pinned)} {what} > {MAX_PINNED_FRACTION:.0%} of the host's available memory "
                   f"{format_bytes(available)} (pinning more invites the kernel's OOM killer)")
    elif available is not None and (taken := mr_memory_bytes(workload, roles)) > MAX_MR_MEMORY_FRACTION * available:
        which = f"{mrs} MRs{' and a second of mr_churn' if churn_mrs else ''}"
        out.append(f"{which} take about {format_bytes(taken)} with their pages and bookkeeping "
                   f"({format_bytes(MR_OVERHEAD_BYTES)} each beyond their pages) > {MAX_MR_MEMORY_FRACTION:.0%} of "
                   f"the host's available memory {format_bytes(available)}")
    return out
