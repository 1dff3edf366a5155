"""Control-path churn in the base model: MR register/deregister and QP create/destroy beside the data path.

Each side of a flow registers and deregisters ``Flow.mr_churn`` MRs of ``mr_size`` bytes per second, and creates
and destroys ``Flow.qp_churn`` QPs per second, on its own host's NIC (a loopback flow churns twice on its host).
Per host:

    * **firmware command path**: an MR costs 2 commands (register, deregister), a QP 5 (create, INIT, RTR, RTS,
      destroy); the firmware executes one in ``model.fw_cmd_us``. Its load ``rho`` is commands/s x that time;
      beyond 1 it saturates: only ``1 / rho`` of the asked churn is done, and every command waits
      ``fw_cmd_us x rho / (1 - rho)`` (M/M/1), ``19 x fw_cmd_us x rho / 0.95`` from ``rho = 0.95`` on;
    * **cache pressure**: a registration loads one MPT entry and ``ceil(mr_size / MTT_SPAN)`` MTT entries, a QP
      creation one QP context; each holds its slot ``cache.residency_ms``. The churned occupancy (in cache
      capacities) adds to the data path's working set, so its miss ratio ``soft_fraction(data + churn)`` rises
      by ``extra`` over ``soft_fraction(data)``; each extra miss costs the NIC's packet pipeline
      ``cache.miss_ns`` (translation misses per packet, QP-context misses per message). The data path's own
      misses cost nothing here: those are quirks' business (#7, #8).

What a flow's churn itself measures (:func:`flow_figures`): per side, the share of the asked churn the firmware
executes, and each operation's latency, fixed costs plus its commands' waits (p99: each wait at its 99th
percentile).

Invariants: a workload without churn has no :class:`HostChurn` (the model runs as before); everything rises
monotonically with the churn rates; pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from collie.codec import built
from collie.model.flow import Flow
from collie.model.workload import Workload
from collie.targets.sim.profile import Profile
from collie.targets.sim.quirks import soft_fraction

#: Bytes one cached MTT entry translates (the unit of the data path's translation working set as well).
MTT_SPAN: Final = 65536
#: Firmware commands of one MR churned (register, deregister) and of one QP (create, INIT, RTR, RTS, destroy).
MR_COMMANDS: Final = 2
QP_COMMANDS: Final = 5
#: Pipeline slots per packet below which churn's extra misses are not charged (a rate change under 0.1 %).
NEGLIGIBLE: Final = 1e-3
#: The 99th percentile of a command's wait in its M/M/1 queue, in mean waits (an exponential wait: ln 100).
P99_WAIT: Final = math.log(100)
#: Above this firmware load the M/M/1 wait stops growing as 1 / (1 - rho) and grows in proportion to rho.
_KNEE: Final = 0.95


@dataclass(frozen=True)
class HostChurn:
    """The churn one host's NIC carries (per second) and what it costs.

    Attributes:
        fw_load: firmware command-path load asked (commands/s x ``fw_cmd_us``; may exceed 1).
        done: fraction of the asked churn the firmware executes (``min(1, 1 / fw_load)``).
        wait_us: mean wait of one firmware command in its queue.
        xlate: translation-cache occupancy of the churned MPT and MTT entries, in cache capacities.
        qpc: QP-context-cache occupancy of the churned QPs, in cache capacities.
    """

    fw_load: float
    done: float
    wait_us: float
    xlate: float
    qpc: float


def host_churn(profile: Profile, workload: Workload) -> dict[str, HostChurn]:
    """Every host with churn on its NIC (empty when the workload churns nothing)."""
    mr: dict[str, float] = {}
    xlate_entries: dict[str, float] = {}
    qp: dict[str, float] = {}
    cache = profile.cache
    for f in workload.flows:
        if not (f.mr_churn or f.qp_churn):
            continue
        per_mr = 1.0 / cache.mpt_entries + math.ceil(f.mr_size / MTT_SPAN) / cache.mtt_entries
        for h in (f.client.host, f.server.host):
            mr[h] = mr.get(h, 0.0) + f.mr_churn
            xlate_entries[h] = xlate_entries.get(h, 0.0) + f.mr_churn * per_mr
            qp[h] = qp.get(h, 0.0) + f.qp_churn
    out: dict[str, HostChurn] = {}
    if not mr:
        return out
    fw_s = profile.model.fw_cmd_us * 1e-6
    hold = cache.residency_ms * 1e-3
    for h in mr:
        load = (MR_COMMANDS * mr[h] + QP_COMMANDS * qp[h]) * fw_s
        if load > 0:
            done = 1.0 / load
            done = done if done < 1.0 else 1.0  # min(1.0, 1 / load)
        else:
            done = 1.0
        out[h] = built(HostChurn, {"fw_load": load, "done": done,
                                   "wait_us": profile.model.fw_cmd_us * _queueing(load),
                                   "xlate": xlate_entries[h] * done * hold,
                                   "qpc": qp[h] * done * hold / cache.qpc_entries})
    return out


def _queueing(load: float) -> float:
    """Mean queueing wait of a command in command times at firmware load ``load`` (continuous, rising)."""
    if load < _KNEE:
        return load / (1.0 - load)
    return _KNEE / (1.0 - _KNEE) * load / _KNEE


def extra_miss(data: float, churn: float) -> float:
    """How much churn occupying ``churn`` cache capacities raises the miss ratio of a working set of ``data``."""
    return soft_fraction(data + churn) - soft_fraction(data) if churn > 0 else 0.0


def mr_latency_us(profile: Profile, mr_size: int, wait_us: float) -> float:
    """Latency of one churned MR on a host whose commands each wait ``wait_us``: its registration
    (``setup_mr_us`` + pinning ``mr_size`` bytes at ``setup_pin_gbps``) and its deregistration (one command)."""
    m = profile.model
    return (m.setup_mr_us + mr_size * 8 / (m.setup_pin_gbps * 1e3) + m.fw_cmd_us
            + MR_COMMANDS * wait_us)


def qp_latency_us(profile: Profile, wait_us: float) -> float:
    """Latency of one churned QP on a host whose commands each wait ``wait_us``: created and brought to RTS
    (``setup_qp_us``), then destroyed (one command)."""
    m = profile.model
    return m.setup_qp_us + m.fw_cmd_us + QP_COMMANDS * wait_us


def flow_figures(profile: Profile, flow: Flow, churn: Mapping[str, HostChurn],
                 noise: Callable[[], float]) -> dict[str, float]:
    """The churn figures of ``flow``'s :class:`~collie.targets.base.FlowResult` (its ``*_churn_*`` fields; empty
    when it churns nothing), from both sides' hosts in ``churn``.

    Per kind it churns: the achieved rate per side (the asked one times the share its host's firmware executes,
    the mean of both sides), the mean latency (the mean of both sides') and the p99 latency (the higher side's,
    every command waiting :data:`P99_WAIT` times its mean wait). ``noise()`` is drawn once per kind, MRs first,
    and scales both latencies.
    """
    out: dict[str, float] = {}
    if not (flow.mr_churn or flow.qp_churn):
        return out
    # both sides, client first; each sum below is sum() over the two (0.0 + the client's + the server's)
    cl, sv = churn[flow.client.host], churn[flow.server.host]
    size = flow.mr_size
    if flow.mr_churn:
        n = noise()
        out["mr_churn_per_s"] = flow.mr_churn * (0.0 + cl.done + sv.done) / 2
        out["mr_churn_us"] = n * (0.0 + mr_latency_us(profile, size, cl.wait_us)
                                  + mr_latency_us(profile, size, sv.wait_us)) / 2
        hi_cl = mr_latency_us(profile, size, P99_WAIT * cl.wait_us)
        hi_sv = mr_latency_us(profile, size, P99_WAIT * sv.wait_us)
        out["mr_churn_p99_us"] = n * (hi_sv if hi_sv > hi_cl else hi_cl)
    if flow.qp_churn:
        n = noise()
        out["qp_churn_per_s"] = flow.qp_churn * (0.0 + cl.done + sv.done) / 2
        out["qp_churn_us"] = n * (0.0 + qp_latency_us(profile, cl.wait_us) + qp_latency_us(profile, sv.wait_us)) / 2
        hi_cl = qp_latency_us(profile, P99_WAIT * cl.wait_us)
        hi_sv = qp_latency_us(profile, P99_WAIT * sv.wait_us)
        out["qp_churn_p99_us"] = n * (hi_sv if hi_sv > hi_cl else hi_cl)
    return out


def miss_slots(profile: Profile, churn: dict[str, HostChurn], xlate_data: float,
               qpc_data: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Per churning host: packet-pipeline slots (in packet times at ``msg_rate_mpps``) that churn's extra misses
    add to the data path, per packet (translations) and per message (QP contexts); hosts where they stay below
    :data:`NEGLIGIBLE` are left out.

    Args:
        xlate_data: the data path's translation working set, in cache capacities (:func:`xlate_working_set`).
        qpc_data: per host, the data path's QPs over ``qpc_entries``.
    """
    k = profile.cache.miss_ns * 1e-9 * profile.nic.msg_rate_mpps * 1e6
    out = {h: (k * extra_miss(xlate_data, c.xlate), k * extra_miss(qpc_data.get(h, 0.0), c.qpc))
           for h, c in churn.items()}
    return {h: s for h, s in out.items() if s[0] + s[1] >= NEGLIGIBLE}


def xlate_working_set(profile: Profile, mrs_host: int, mr_footprint: int) -> float:
    """The data path's translation working set in cache capacities: its MRs over ``mpt_entries`` plus its
    registered bytes over what ``mtt_entries`` entries of ``MTT_SPAN`` bytes translate."""
    return mrs_host / profile.cache.mpt_entries + mr_footprint / (profile.cache.mtt_entries * float(MTT_SPAN))
