"""``collie sim``: the built-in simulated subsystems (profiles) and the shared quirk library."""

from __future__ import annotations

from typing import Any

import click

from collie.cli.render import emit, format_option, render
from collie.model.rocev2 import PRIORITIES
from collie.targets.sim import builtin_names, library, load_profile
from collie.targets.sim.model import HOST_PRIORITY, HOST_TCLASS
from collie.targets.sim.profile import Profile
from collie.targets.sim.quirks import describe_quirks


def _summary(p: Profile) -> dict[str, Any]:
    return {
        "name": p.name,
        "nic": p.nic.model,
        "line_rate_gbps": p.nic.line_rate_gbps,
        "msg_rate_mpps": p.nic.msg_rate_mpps,
        "dialect": p.dialect,
        "quirks": len(p.active_quirks),
        "description": p.description,
    }


def _details(p: Profile) -> dict[str, Any]:
    return {
        "name": p.name,
        "description": p.description,
        "source": p.source,
        "dialect": p.dialect,
        "hosts": list(p.hosts),
        "nic": p.nic.model,
        "firmware": p.nic.firmware,
        "driver": p.nic.driver,
        "line_rate_gbps": p.nic.line_rate_gbps,
        "msg_rate_mpps": p.nic.msg_rate_mpps,
        "loopback_gbps": p.nic.loopback_gbps,
        "base_latency_us": p.nic.base_latency_us,
        "limits": f"max_qp {p.nic.max_qp}, max_mr {p.nic.max_mr}, max_sge {p.nic.max_sge}, "
                  f"max_qp_wr {p.nic.max_qp_wr}",
        "pcie": f"Gen{p.pcie.gen} x{p.pcie.width} ({p.pcie.gbps:.0f} Gb/s usable), MPS {p.pcie.mps}, "
                f"relaxed ordering {'on' if p.pcie.relaxed_ordering else 'off'}",
        "host": f"{p.host.cpu_model or p.host.cpu_vendor} ({p.host.cpu_vendor}), {p.host.sockets} socket(s), "
                f"NIC on node {p.host.nic_numa_node}, kernel {p.host.kernel}",
        "nics": _nic_words(p),
        "gpu": p.host.gpu,
        "caches": f"QPC {p.cache.qpc_entries}, MPT {p.cache.mpt_entries}, MTT {p.cache.mtt_entries}, "
                  f"RX WQE {p.cache.rx_wqe_entries} entries",
        "noise": p.model.noise,
        "fabric": _fabric_words(p),
    }


def _nic_words(p: Profile) -> str:
    """The NICs of each host, in words."""
    n, shared = p.host.nics, p.host.shared_pcie_gbps
    if n == 1:
        return "one per host"
    return (f"{n} per host ({p.hosts[0]}, {p.hosts[0]}/1, ...), each its own device, port and PCIe link"
            + (f"; they share {shared:g} Gb/s of PCIe to the host's memory" if shared else ""))


def _fabric_words(p: Profile) -> str:
    """The switches under the hosts, in words."""
    f = p.fabric
    if f is None:
        return "one ideal non-blocking switch (nothing paused or dropped)"
    leaves = -(-len(p.hosts) // f.hosts_per_leaf)
    return (f"{leaves} leaf switch(es) of up to {f.hosts_per_leaf} hosts, {f.spines} spine(s), uplinks of "
            f"{f.uplink_gbps:g} Gb/s, {_pfc_words(f.protected)}, " + (
                f"a shared buffer of {f.buffer_mib:g} MiB per switch (a congested queue holds {f.alpha:g} x the "
                f"free buffer, {f.lossy_alpha:g} x on a priority PFC does not protect)" if f.buffer_mib else
                f"a congested queue holds {f.xoff_kib:g} KiB"))


def _pfc_words(lossless: frozenset[int]) -> str:
    """Which priorities PFC protects, in words."""
    if not lossless:
        return "no PFC (drops)"
    if len(lossless) == PRIORITIES:
        return "PFC (lossless)"
    listed = ", ".join(map(str, sorted(lossless)))
    return (f"PFC on priorit{'y' if len(lossless) == 1 else 'ies'} {listed} (lossless; the others drop; "
            f"a flow's priority is its traffic class / 32, the hosts' own class {HOST_TCLASS} is priority "
            f"{HOST_PRIORITY})")


def _quirk_rows(p: Profile) -> list[dict[str, Any]]:
    rows = [{"state": "active", **r} for r in describe_quirks(p.active_quirks)]
    for q, why in p.inactive_quirks:
        rows.extend({"state": f"inactive: {why}", **r} for r in describe_quirks([q]))
    return rows


@click.group("sim")
def sim() -> None:
    """The simulated RDMA subsystem: built-in profiles and the quirk library."""


@sim.command("profiles")
@format_option
def profiles(fmt: str) -> None:
    """List the built-in simulated subsystems (use one with --target sim:NAME)."""
    rows = [_summary(load_profile(n)) for n in builtin_names()]
    emit(render(rows, fmt, title="built-in simulator profiles"))


@sim.command("show")
@click.argument("profile")
@format_option
def show(profile: str, fmt: str) -> None:
    """Print one profile (a built-in NAME or a PATH.toml): its subsystem and its quirks.

    table and json print both; csv and jsonl print one row per quirk.
    """
    p = load_profile(profile)
    quirks = _quirk_rows(p)
    if fmt == "json":
        emit(render({**_details(p), "quirks": quirks}, "json"))
    elif fmt == "table":
        emit(render(_details(p), "table", title=f"profile {p.name}"))
        if quirks:
            emit(render(quirks, "table", title="quirks",
                        columns=["id", "anomaly", "state", "when", "pause", "throughput", "diagnostics"]))
        else:
            emit("no quirks: the base model alone")
    else:
        emit(render([{"profile": p.name, **q} for q in quirks], fmt))


@sim.command("quirks")
@format_option
def quirks(fmt: str) -> None:
    """List the shared quirk library (each published anomaly declared once)."""
    rows = describe_quirks(list(library().values()))
    emit(render(rows, fmt, title="quirk library", columns=["id", "anomaly", "summary", "when", "pause",
                                                            "throughput", "loss", "diagnostics"]))
