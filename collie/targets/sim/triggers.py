"""The concrete triggers of the 18 published anomalies, and variants that break one necessary condition each.

Each :class:`Trigger` is the "concrete trigger that reproduced it" column of ANOMALIES.md Table 2, written as
a :class:`~collie.workload.Workload` on the built-in profile that has the anomaly, plus ``breaks``: the same
workload with exactly one necessary condition broken (other opcode, smaller post list, one direction, local
memory, ...). They are ground truth for tests and benchmarks; no strategy, oracle or minimizer may use them.

Deviations from the paper's wording, forced by collie's workload constraints:
    * #18: the table's condition says batch >= 32 but its own trigger posts 16; the quirk (and this trigger)
      use batch 16. Its 12 KB MRs cannot hold a 64 KB single-SGE message (constraint ``sge_fits_mr``), so
      the trigger registers 64 KB MRs.
    * #9/#12: "SGEs [128 B, 64 KB, 1 KB]" becomes sizes = [128, 64K, 1K] over 3 SGEs (collie splits each
      message evenly over its SGEs).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from collie.workload import Endpoint, Flow, Workload

K = 1024
M = 1024 * 1024


def _flow(client: str = "a", server: str = "b", cmem: str = "local", smem: str = "local",
          **kw: Any) -> Flow:
    depth = kw.pop("wq", None)
    if depth is not None:
        kw.setdefault("sq_depth", depth)
        kw.setdefault("rq_depth", depth)
    return Flow(client=Endpoint(client, cmem), server=Endpoint(server, smem), **kw)


def one(name: str = "", **kw: Any) -> Workload:
    """A one-way workload a -> b."""
    return Workload(flows=(_flow(**kw),), name=name)


def bi(name: str = "", amem: str = "local", bmem: str = "local", **kw: Any) -> Workload:
    """The same flow in both directions (a -> b and b -> a)."""
    return Workload(flows=(_flow("a", "b", amem, bmem, **kw), _flow("b", "a", bmem, amem, **kw)), name=name)


def with_flows(w: Workload, **kw: Any) -> Workload:
    """``w`` with every flow's fields replaced by ``kw`` (``wq`` sets both queue depths)."""
    depth = kw.pop("wq", None)
    if depth is not None:
        kw.setdefault("sq_depth", depth)
        kw.setdefault("rq_depth", depth)
    return w.with_flows(tuple(replace(f, **kw) for f in w.flows))


def one_way(w: Workload) -> Workload:
    """Keep only the first flow, with the QPs of both directions (so QP totals stay the same)."""
    f = w.flows[0]
    return w.with_flows((replace(f, qps=sum(x.qps for x in w.flows)),))


@dataclass(frozen=True)
class Trigger:
    """A published concrete trigger.

    Attributes:
        quirk: the quirk id it must fire.
        anomaly: Table 2 number.
        profile: the built-in profile that has it.
        workload: the concrete trigger.
        pause: the symptom includes PFC pause (else "no pause").
        low_throughput: the symptom includes throughput below 0.8 of both ceilings.
        breaks: condition broken -> workload (or ``(profile, workload)`` when the break is the subsystem).
    """

    quirk: str
    anomaly: int
    profile: str
    workload: Workload
    pause: bool
    low_throughput: bool
    breaks: dict[str, Workload | tuple[str, Workload]] = field(default_factory=dict)


def _triggers() -> list[Trigger]:
    out: list[Trigger] = []
    # F, Intel and AMD hosts -----------------------------------------------------------------------------
    w = one("#1", transport="UD", opcode="SEND", qps=1, mr_size=64 * K, wq=256, mtu=2048, batch=64,
            sizes=(2 * K,))
    out.append(Trigger("f01-ud-rx-wqe", 1, "cx6-200g", w, True, True, {
        "batch >= 64": with_flows(w, batch=32),
        "wq_depth >= 256": with_flows(w, wq=128),
        "transport == UD": with_flows(w, transport="RC"),
    }))
    w = one("#2", transport="UD", opcode="SEND", qps=16, wq=1024, mtu=1024, batch=4, sizes=(1 * K,))
    out.append(Trigger("f02-ud-small-many-qp", 2, "cx6-200g", w, False, True, {
        "batch <= 8": with_flows(w, batch=16),
        "wq_depth >= 1024": with_flows(w, wq=512),
        "max_msg <= 1K": with_flows(w, mtu=2048, sizes=(2 * K,)),
        "qps_total >= 16": with_flows(w, qps=8),
        "transport == UD": with_flows(w, transport="RC"),
    }))
    w = one("#3", transport="RC", opcode="READ", qps=8, mrs=1, mr_size=4 * M, wq=128, mtu=1024,
            sizes=(4 * M,))
    out.append(Trigger("f03-read-mtu1k", 3, "cx6-200g", w, True, True, {
        "mtu <= 1K": with_flows(w, mtu=4096),
        "opcode == READ": with_flows(w, opcode="WRITE"),
        "max_msg >= 16K": with_flows(w, sizes=(8 * K,)),
    }))
    w = bi("#4", transport="RC", opcode="READ", qps=80, mr_size=64 * K, wq=128, mtu=4096, batch=128, sges=4,
           sizes=(128,))
    out.append(Trigger("f04-bi-read-sge", 4, "cx6-200g", w, True, True, {
        "bidirectional": one_way(w),
        "batch >= 32": with_flows(w, batch=16),
        "sges >= 4": with_flows(w, sges=2),
        "qps_total >= 160": with_flows(w, qps=40),
        "opcode == READ": with_flows(w, opcode="WRITE"),
    }))
    w = one("#5", transport="RC", opcode="SEND", qps=1, wq=1024, mtu=1024, batch=64, sges=2, sizes=(2 * K,))
    out.append(Trigger("f05-rc-send-batch", 5, "cx6-200g", w, True, True, {
        "mtu <= 1K": with_flows(w, mtu=4096),
        "batch >= 64": with_flows(w, batch=32),
        "wq_depth >= 1024": with_flows(w, wq=512),
        "min_msg >= 2K": with_flows(w, sizes=(1 * K,)),
        "max_msg <= 8K": with_flows(w, sizes=(16 * K,)),
        "opcode == SEND": with_flows(w, opcode="WRITE"),
    }))
    w = one("#6", transport="RC", opcode="SEND", qps=32, wq=1024, mtu=1024, batch=8, sges=2, sizes=(1 * K,))
    out.append(Trigger("f06-rc-send-sge", 6, "cx6-200g", w, False, True, {
        "mtu <= 1K": with_flows(w, mtu=4096),
        "batch <= 16": with_flows(w, batch=32),
        "sges >= 2": with_flows(w, sges=1),
        "wq_depth >= 1024": with_flows(w, wq=512),
        "max_msg <= 1K": with_flows(w, sizes=(2 * K,)),
        "qps_total >= 32": with_flows(w, qps=16),
        "opcode == SEND": with_flows(w, opcode="WRITE"),
    }))
    w = one("#7", transport="RC", opcode="WRITE", qps=24, mrs=24 * 1024, mr_size=64 * K, wq=128, mtu=1024,
            batch=1, sizes=(512,))
    out.append(Trigger("f07-write-many-mr", 7, "cx6-200g", w, False, True, {
        "batch <= 1": with_flows(w, batch=2),
        "max_msg <= 1K": with_flows(w, sizes=(2 * K,)),
        "mrs_host >= 12000": with_flows(w, mrs=4096),
        "opcode == WRITE": with_flows(w, opcode="SEND"),
        "transport == RC": with_flows(w, transport="UC"),
    }))
    w = one("#8", transport="RC", opcode="WRITE", qps=480, wq=16, mtu=1024, batch=1, sizes=(512,))
    out.append(Trigger("f08-write-many-qp", 8, "cx6-200g", w, False, True, {
        "batch <= 1": with_flows(w, batch=2),
        "wq_depth <= 16": with_flows(w, wq=32),
        "max_msg <= 1K": with_flows(w, sizes=(2 * K,)),
        "qps_total >= 450": with_flows(w, qps=200),
        "transport == RC": with_flows(w, transport="UC"),
    }))
    w = bi("#9", transport="RC", opcode="WRITE", qps=8, mr_size=4 * M, wq=128, mtu=4096, batch=8, sges=3,
           sizes=(128, 64 * K, 1 * K))
    out.append(Trigger("f09-bi-sge-mix-noro", 9, "cx6-200g-amd", w, True, True, {
        "bidirectional": one_way(w),
        "sges >= 3": with_flows(w, sges=2),
        "size_mix (small)": with_flows(w, sizes=(128, 1 * K)),
        "size_mix (large)": with_flows(w, sizes=(64 * K,)),
        "relaxed ordering off": ("cx6-200g", w),
    }))
    w = bi("#10", transport="RC", opcode="WRITE", qps=320, mr_size=64 * K, wq=128, mtu=1024, batch=64,
           sizes=(64 * K, 128, 128, 128))
    out.append(Trigger("f10-bi-write-mix", 10, "cx6-200g", w, True, False, {
        "bidirectional": one_way(w),
        "batch >= 64": with_flows(w, batch=32),
        "size_mix": with_flows(w, sizes=(128,)),
        "qps_total >= 320": with_flows(w, qps=100),
        "opcode == WRITE": with_flows(w, opcode="SEND"),
    }))
    w = bi("#11", amem="local", bmem="remote", transport="RC", opcode="WRITE", qps=1, mrs=32, mr_size=4 * M,
           wq=128, mtu=4096, batch=16, sizes=(256 * K,))
    out.append(Trigger("f11-bi-remote-numa", 11, "cx6-200g-amd", w, True, False, {
        "bidirectional": one_way(w),
        "remote_numa": bi("#11 local", transport="RC", opcode="WRITE", qps=1, mrs=32, mr_size=4 * M, wq=128,
                          mtu=4096, batch=16, sizes=(256 * K,)),
        "AMD host": ("cx6-200g", w),
    }))
    w = bi("#12", amem="gpu", bmem="gpu", transport="RC", opcode="WRITE", qps=8, mr_size=4 * M, wq=128,
           mtu=4096, batch=8, sges=3, sizes=(128, 64 * K, 1 * K))
    out.append(Trigger("f12-gpu-acs", 12, "cx6-200g-amd", w, True, True, {
        "gpu": bi("#12 host memory", transport="RC", opcode="WRITE", qps=8, mr_size=4 * M, wq=128, mtu=4096,
                  batch=8, sges=3, sizes=(128, 64 * K, 1 * K)),
        "misconfigured PCIe switch": ("cx6-200g", w),
    }))
    common: dict[str, Any] = {"transport": "RC", "opcode": "WRITE", "mrs": 32, "mr_size": 4 * M, "wq": 128,
                              "mtu": 4096, "batch": 16, "sizes": (256 * K,)}
    w = Workload(flows=(_flow("a", "b", qps=8, **dict(common)), _flow("b", "b", qps=8, **dict(common))),
                 name="#13")
    out.append(Trigger("f13-loopback-incast", 13, "cx6-200g", w, True, False, {
        "incast (no loopback)": Workload(flows=(_flow("a", "b", qps=16, **dict(common)),)),
        "incast (loopback only)": Workload(flows=(_flow("b", "b", qps=16, **dict(common)),)),
    }))
    # H ------------------------------------------------------------------------------------------------
    w = bi("#14", transport="RC", opcode="WRITE", qps=1024, mr_size=256 * K, wq=128, mtu=4096, batch=1,
           sges=4, sizes=(64 * K,))
    out.append(Trigger("h14-bi-mtu4k-sge", 14, "p2100g-100g", w, False, True, {
        "mtu >= 4K": with_flows(w, mtu=1024),
        "sges >= 4": with_flows(w, sges=2),
        "qps_total >= 1300": with_flows(w, qps=512),
        "bidirectional": one_way(w),
    }))
    w = one("#15", transport="UD", opcode="SEND", qps=32, mr_size=4 * K, wq=64, mtu=2048, batch=1,
            sizes=(256, 1 * K, 64, 1 * K))
    out.append(Trigger("h15-ud-many-qp", 15, "p2100g-100g", w, True, False, {
        "wq_depth >= 64": with_flows(w, wq=32),
        "qps_total >= 32": with_flows(w, qps=16),
        "transport == UD": with_flows(w, transport="RC"),
    }))
    w = one("#16", transport="RC", opcode="READ", qps=500, mr_size=256 * K, wq=128, mtu=1024, batch=8,
            sizes=(64 * K,))
    out.append(Trigger("h16-read-mtu1k-qps", 16, "p2100g-100g", w, True, False, {
        "mtu <= 1K": with_flows(w, mtu=4096),
        "batch >= 8": with_flows(w, batch=4),
        "qps_total >= 500": with_flows(w, qps=250),
        "opcode == READ": with_flows(w, opcode="WRITE"),
    }))
    w = one("#17", transport="RC", opcode="SEND", qps=80, mr_size=1 * M, wq=128, mtu=1024, batch=1,
            sizes=(1 * K,))
    out.append(Trigger("h17-send-small-qps", 17, "p2100g-100g", w, True, False, {
        "batch <= 16": with_flows(w, batch=32),
        "wq_depth >= 128": with_flows(w, wq=64),
        "max_msg <= 1K": with_flows(w, sizes=(2 * K,)),
        "qps_total >= 64": with_flows(w, qps=32),
        "opcode == SEND": with_flows(w, opcode="WRITE"),
    }))
    w = bi("#18", transport="RC", opcode="WRITE", qps=16, mr_size=64 * K, wq=64, mtu=1024, batch=16,
           sizes=(64 * K,))
    out.append(Trigger("h18-bi-write-mtu1k", 18, "p2100g-100g", w, True, False, {
        "bidirectional": one_way(w),
        "mtu <= 1K": with_flows(w, mtu=4096),
        "batch >= 16": with_flows(w, batch=8),
        "max_msg <= 64K": with_flows(w, sizes=(128 * K,), mr_size=128 * K),
        "qps_total >= 30": with_flows(w, qps=8),
        "opcode == WRITE": with_flows(w, opcode="READ"),
    }))
    return out


TRIGGERS: tuple[Trigger, ...] = tuple(_triggers())
