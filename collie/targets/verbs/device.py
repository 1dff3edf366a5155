"""Finding the device, reading its limits and fingerprint.

Every way the device can be unusable ends in one :class:`~collie.errors.TargetError` sentence: pyverbs missing
(``compat``), no RDMA device at all, the named device absent (the ones present are listed), the port absent or
not ACTIVE, the GID index empty.
"""

from __future__ import annotations

import os
import platform
import re
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from collie.errors import TargetError
from collie.model.flow import FLOW_LIMITS
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.limits import MTU_BYTES, DeviceLimits
from collie.targets.verbs.spec import VerbsSpec

SYSFS: Final = Path("/sys/class/infiniband")
NO_DEVICE: Final = ("no RDMA device found on this machine; load a driver or create a soft-RoCE device "
                    "(modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE)")
_DRIVERS: Final = (("rxe", "rxe"), ("siw", "siw"), ("mlx5", "mlx5"), ("mlx4", "mlx4"), ("bnxt_re", "bnxt_re"),
                   ("irdma", "irdma"), ("efa", "efa"), ("hfi1", "hfi1"), ("qedr", "qedr"), ("erdma", "erdma"))


def _name(dev: Any) -> str:
    n = dev.name
    return n.decode() if isinstance(n, bytes) else str(n)


def device_names(pv: Pyverbs) -> list[str]:
    """Names of the RDMA devices pyverbs sees (``[]`` when there are none: pyverbs raises then)."""
    try:
        return sorted(_name(d) for d in pv.device.get_device_list())
    except pv.error:
        return []


def check_present(pv: Pyverbs, spec: VerbsSpec) -> None:
    """Raise a one-sentence :class:`TargetError` unless ``spec.device`` exists."""
    names = device_names(pv)
    if not names:
        raise TargetError(NO_DEVICE)
    if spec.device not in names:
        raise TargetError(f"RDMA device {spec.device!r} not found; devices here: {', '.join(names)}")


def guess_driver(device: str, sysfs: Path = SYSFS) -> str:
    """The kernel driver behind ``device``: the PCI driver's name (``mlx5_core`` -> ``mlx5``) or, for
    software devices, the name prefix (``rxe0`` -> ``rxe``); ``""`` when unknown."""
    try:
        drv = os.path.basename(os.readlink(sysfs / device / "device" / "driver"))
    except OSError:
        drv = ""
    for prefix, name in _DRIVERS:
        if drv.startswith(prefix) or (not drv and device.startswith(prefix)):
            return name
    return drv


def line_rate_bps(device: str, port: int, sysfs: Path = SYSFS) -> float:
    """Port rate from ``ports/P/rate`` (``"100 Gb/sec (4X EDR)"``) in bits/s; 0.0 when unreadable."""
    try:
        text = (sysfs / device / "ports" / str(port) / "rate").read_text(encoding="ascii")
    except OSError:
        return 0.0
    m = re.match(r"\s*([0-9.]+)\s*Gb/sec", text)
    return float(m.group(1)) * 1e9 if m else 0.0


def numa_node(device: str, sysfs: Path = SYSFS) -> int | None:
    """The NIC's NUMA node, ``None`` when unknown (software devices, single-node hosts report -1)."""
    try:
        n = int((sysfs / device / "device" / "numa_node").read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return n if n >= 0 else None


def numa_nodes(root: Path = Path("/sys/devices/system/node")) -> list[int]:
    try:
        nodes = sorted(int(p.name[4:]) for p in root.iterdir() if re.fullmatch(r"node\d+", p.name))
    except OSError:
        return [0]
    return nodes or [0]


def memlock_bytes() -> int | None:
    """RLIMIT_MEMLOCK of this process; ``None`` when unlimited or when running as root (CAP_IPC_LOCK)."""
    if os.geteuid() == 0:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def available_memory_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """``MemAvailable`` of the host (what can be allocated without swapping); ``None`` when unknown."""
    try:
        with open(meminfo, encoding="ascii") as fh:
            for line in fh:
                name, _, value = line.partition(":")
                if name == "MemAvailable":
                    return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def probe_inline(pv: Pyverbs, ctx: Any) -> int:
    """The most inline data (bytes, up to the largest a flow may ask) an RC QP of ``ctx``'s device accepts:
    ``ibv_query_device`` does not report it, so QPs asking for more or less are created (and destroyed) in a
    binary search."""
    pd = pv.pd.PD(ctx)
    cq = pv.cq.CQ(ctx, 1)

    def accepts(inline: int) -> bool:
        cap = pv.qp.QPCap(max_send_wr=1, max_recv_wr=1, max_send_sge=1, max_recv_sge=1, max_inline_data=inline)
        try:
            qp = pv.qp.QP(pd, pv.qp.QPInitAttr(qp_type=pv.e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap, sq_sig_all=0))
        except pv.error:
            return False
        qp.close()
        return True

    lo, hi = 0, FLOW_LIMITS["inline"][1]  # lo is accepted (no inline at all), hi + 1 is not
    if accepts(hi):
        return hi
    hi -= 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if accepts(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True)
class DeviceFacts:
    """Limits and fingerprint of one device port."""

    limits: DeviceLimits
    fw_version: str
    vendor_id: int
    vendor_part_id: int
    driver: str
    line_rate_bps: float
    gid: str
    numa_node: int | None


def query(pv: Pyverbs, spec: VerbsSpec) -> DeviceFacts:
    """Open ``spec.device``, read its attributes and port, and close it again."""
    check_present(pv, spec)
    e = pv.e
    try:
        ctx = pv.device.Context(name=spec.device)
    except pv.error as exc:
        raise TargetError(f"cannot open RDMA device {spec.device}: {exc}") from None
    try:
        attr = ctx.query_device()
        nports = int(attr.phys_port_cnt)
        if not 1 <= spec.port <= nports:
            raise TargetError(f"RDMA device {spec.device} has no port {spec.port}; it has ports 1 to "
                              f"{nports}")
        pattr = ctx.query_port(spec.port)
        if int(pattr.state) != e.IBV_PORT_ACTIVE:
            raise TargetError(f"port {spec.port} of {spec.device} is not ACTIVE (state {int(pattr.state)}); "
                              f"bring its link up first")
        if spec.gid_index >= int(pattr.gid_tbl_len):
            raise TargetError(f"GID index {spec.gid_index} is beyond the GID table of {spec.device} port "
                              f"{spec.port} ({int(pattr.gid_tbl_len)} entries)")
        try:
            gid = str(ctx.query_gid(spec.port, spec.gid_index))
        except pv.error:
            gid = ""
        if not gid or set(gid.replace(":", "")) <= {"0"}:
            raise TargetError(f"GID index {spec.gid_index} of {spec.device} port {spec.port} is empty; give "
                              f"its netdev an IP address or choose another index (verbs:{spec.device}:"
                              f"{spec.port}:GID)")
        node = numa_node(spec.device)
        limits = DeviceLimits(
            max_qp=int(attr.max_qp), max_qp_wr=int(attr.max_qp_wr), max_sge=int(attr.max_sge),
            max_sge_rd=int(attr.max_sge_rd), max_cq=int(attr.max_cq), max_cqe=int(attr.max_cqe),
            max_mr=int(attr.max_mr), max_pd=int(attr.max_pd), max_mr_size=int(attr.max_mr_size),
            max_qp_rd_atom=int(attr.max_qp_rd_atom), atomics=int(attr.atomic_caps) != e.IBV_ATOMIC_NONE,
            active_mtu=MTU_BYTES.get(int(pattr.active_mtu), 256),
            max_mtu=MTU_BYTES.get(int(pattr.max_mtu), 256),
            numa_nodes=len(numa_nodes()), memlock_bytes=memlock_bytes(),
            available_memory_bytes=available_memory_bytes(), max_inline_data=probe_inline(pv, ctx),
        )
        return DeviceFacts(
            limits=limits, fw_version=str(attr.fw_version), vendor_id=int(attr.vendor_id),
            vendor_part_id=int(attr.vendor_part_id), driver=guess_driver(spec.device),
            line_rate_bps=line_rate_bps(spec.device, spec.port), gid=gid, numa_node=node,
        )
    finally:
        ctx.close()


def kernel_release() -> str:
    return platform.release()
