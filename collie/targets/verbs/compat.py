"""Lazy import of pyverbs and the few names collie uses, across rdma-core versions.

pyverbs is optional: nothing in collie imports it at module import time. :func:`load` imports it on first use
and raises :class:`~collie.errors.TargetError` with how to install Debian's ``python3-pyverbs`` when it is
missing. Enums: rdma-core <= 49 has ``pyverbs.enums`` (flat names); >= 59 only ``pyverbs.libibverbs_enums``
(class-qualified, ``ibv_qp_type.IBV_QPT_RC``). :class:`Enums` resolves either into plain ints.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final

from collie.errors import TargetError

DEBIAN_DIST_PACKAGES: Final = "/usr/lib/python3/dist-packages"

INSTALL_HINT: Final = (
    "the verbs target needs pyverbs, which is not importable by this Python; install Debian's package "
    "(apt-get install python3-pyverbs rdma-core ibverbs-providers) and run collie with /usr/bin/python3, "
    f"or add {DEBIAN_DIST_PACKAGES} to PYTHONPATH (a venv made with --system-site-packages from "
    "/usr/bin/python3 also works)"
)

#: Enum names collie needs, grouped by their rdma-core >= 59 class.
_ENUM_CLASSES: Final = {
    "ibv_qp_type": ("IBV_QPT_RC", "IBV_QPT_UC", "IBV_QPT_UD"),
    "ibv_access_flags": ("IBV_ACCESS_LOCAL_WRITE", "IBV_ACCESS_REMOTE_WRITE", "IBV_ACCESS_REMOTE_READ",
                         "IBV_ACCESS_REMOTE_ATOMIC"),
    "ibv_wr_opcode": ("IBV_WR_RDMA_WRITE", "IBV_WR_RDMA_WRITE_WITH_IMM", "IBV_WR_RDMA_READ", "IBV_WR_SEND",
                      "IBV_WR_SEND_WITH_IMM", "IBV_WR_ATOMIC_FETCH_AND_ADD", "IBV_WR_ATOMIC_CMP_AND_SWP"),
    "ibv_send_flags": ("IBV_SEND_SIGNALED", "IBV_SEND_INLINE"),
    "ibv_wc_status": ("IBV_WC_SUCCESS",),
    "ibv_atomic_cap": ("IBV_ATOMIC_NONE",),
    "ibv_mtu": ("IBV_MTU_256", "IBV_MTU_512", "IBV_MTU_1024", "IBV_MTU_2048", "IBV_MTU_4096"),
    "ibv_port_state": ("IBV_PORT_ACTIVE",),
}


@dataclass(frozen=True)
class Pyverbs:
    """The imported pyverbs modules (``device``, ``pd``, ``mr``, ``cq``, ``qp``, ``wr``, ``addr``) and ``e``,
    the resolved enum names as attributes holding ints."""

    device: ModuleType
    pd: ModuleType
    mr: ModuleType
    cq: ModuleType
    qp: ModuleType
    wr: ModuleType
    addr: ModuleType
    e: Any
    error: tuple[type[BaseException], ...]
    version: str
    #: a fake's own raw ``struct ibv_*`` pointer of a QP, CQ or AH object (tests); ``None`` for pyverbs, whose
    #: pointers ``native.Handles`` finds and checks.
    raw: Callable[[Any], int] | None = None
    #: the native loop can drive these objects (pyverbs, or a fake with ``raw``); a pure-Python fake cannot.
    native: bool = True


class _Enums:
    def __init__(self, values: dict[str, int]) -> None:
        self.__dict__.update(values)
        self._by_value_status: dict[int, str] = {}

    def status_name(self, status: int) -> str:
        return self._by_value_status.get(status, f"status {status}")


def _resolve_enums() -> _Enums:
    values: dict[str, int] = {}
    status_names: dict[int, str] = {}
    try:
        import pyverbs.enums as flat
        for names in _ENUM_CLASSES.values():
            for n in names:
                values[n] = int(getattr(flat, n))
        for n in dir(flat):
            if (n.startswith("IBV_WC_") and n.endswith("ERR")) or n in ("IBV_WC_SUCCESS",):
                status_names.setdefault(int(getattr(flat, n)), n)
    except ImportError:
        import pyverbs.libibverbs_enums as q
        for cls_name, names in _ENUM_CLASSES.items():
            cls = getattr(q, cls_name)
            for n in names:
                values[n] = int(getattr(cls, n))
        for member in q.ibv_wc_status:
            status_names[int(member)] = member.name
    out = _Enums(values)
    out._by_value_status = status_names
    return out


_LOADED: Pyverbs | None = None


def load() -> Pyverbs:
    """Import pyverbs (once) or raise :class:`TargetError` saying how to install it.

    When the running Python cannot see pyverbs but Debian's dist-packages has it and the ABI matches
    (same major.minor), that directory is appended to ``sys.path`` (the machine's own Python 3.11 then works).
    """
    global _LOADED
    if _LOADED is not None:
        return _LOADED
    try:
        import pyverbs
    except ImportError:
        candidate = os.path.join(DEBIAN_DIST_PACKAGES, "pyverbs")
        same_abi = sys.version_info[:2] == (3, 11)
        if same_abi and os.path.isdir(candidate) and DEBIAN_DIST_PACKAGES not in sys.path:
            sys.path.append(DEBIAN_DIST_PACKAGES)
        try:
            import pyverbs  # noqa: F401
        except ImportError:
            raise TargetError(INSTALL_HINT) from None
    try:
        import pyverbs.addr as addr
        import pyverbs.cq as cq
        import pyverbs.device as device
        import pyverbs.mr as mr
        import pyverbs.pd as pd
        import pyverbs.pyverbs_error as perr
        import pyverbs.qp as qp
        import pyverbs.wr as wr
    except ImportError as exc:
        raise TargetError(f"pyverbs is installed but incomplete ({exc}); reinstall python3-pyverbs") from None
    errors: tuple[type[BaseException], ...] = (perr.PyverbsError,)
    version = getattr(sys.modules["pyverbs"], "__version__", "")
    _LOADED = Pyverbs(device=device, pd=pd, mr=mr, cq=cq, qp=qp, wr=wr, addr=addr, e=_resolve_enums(),
                      error=errors, version=str(version))
    return _LOADED
