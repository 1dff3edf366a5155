"""``collie hosts``: list an inventory (offline) and check that each host is usable (over SSH).

Exit codes: 0 when every host is usable, 1 when at least one is not (its problem says why), 2 for a mistake in
the inventory or the options (one sentence).
"""

from __future__ import annotations

import ipaddress
import sys
from typing import TYPE_CHECKING, Any

import click

from collie.cli.render import emit, format_option, render, render_notes
from collie.errors import CollieError, InputError
from collie.remote.inventory import load_inventory

if TYPE_CHECKING:
    from collie.remote.check import HostCheck

inventory_option = click.option("--inventory", "inventory_path", required=True, metavar="HOSTS.toml",
                                 type=click.Path(dir_okay=False), help="The inventory of hosts (see docs/remote.md).")
CHECK_COLUMNS = ("host", "address", "status", "agent", "target", "counters", "clock_skew_ms")
#: Facts too long for a table cell, or only some hosts have, listed under the table host by host: (label, row key).
NOTES = (("deployed", "deployed"), ("nic", "nic"), ("port", "port"), ("gid", "gid"), ("mtu", "mtu"),
         ("host key", "host_key"), ("sources", "sources"), ("problem", "problem"))


@click.group("hosts")
def hosts() -> None:
    """Remote hosts of an inventory (hosts.toml): list them, check that each one is usable."""


@hosts.command("list")
@inventory_option
@click.option("--parallel", type=click.IntRange(min=1), default=None, metavar="K",
              help="Show the host group (chain) of each host and the roles it plays in it under "
                   "collie campaign --parallel K (refused in one sentence when the inventory cannot give K groups).")
@format_option
def list_hosts(inventory_path: str, parallel: int | None, fmt: str) -> None:
    """Validate an inventory and list its hosts (no network), with the workload roles each one plays as
    ``--target remote:HOSTS.toml`` (or in its group, with ``--parallel K``)."""
    from collie.remote.groups import split
    from collie.remote.placement import place

    inv = load_inventory(inventory_path)
    groups = split(inv, parallel) if parallel else [inv]
    chain_of: dict[str, int] = {}
    roles: dict[str, str] = {}
    for i, group in enumerate(groups):
        try:
            placement = place(group)
        except CollieError as exc:  # still a valid inventory for hosts check; only the remote target refuses it
            click.echo(f"warning: --target remote:{inv.path} would refuse this inventory: {exc}", err=True)
            placement = {}
        for h in group.hosts:
            chain_of[h.name] = i
            roles[h.name] = ", ".join(r for r, p in placement.items() if p.name == h.name)
    rows = [{"host": h.name, "address": h.address, "port": h.port, "user": h.user, "target": h.target.spec,
             **({"chain": chain_of[h.name]} if parallel else {}), "roles": roles[h.name] or None,
             "identity": str(h.identity) if h.identity else None, "netdev": h.netdev, "numa": h.numa,
             "tags": list(h.tags)} for h in inv.hosts]
    emit(render(rows, fmt, title=f"{inv.path}: {len(rows)} host(s)"))


def _row(c: HostCheck) -> dict[str, Any]:
    problem = c.problem
    if c.notes:
        problem = "; ".join([p for p in (problem, *c.notes) if p])
    sources = ", ".join(c.sources)
    if c.unreadable:
        sources += f" (unreadable: {', '.join(c.unreadable)})"
    agent = f"{c.agent_version} (protocol {c.protocol})" if c.agent_version else None
    key = f"{c.host_key.split()[-1]} ({c.host_key_state})" if c.host_key else None
    return {"host": c.host, "address": f"{c.user}@{c.address}:{c.port}", "status": c.status.value,
            "host_key": key, "agent": agent,
            "deployed": f"{c.deployed} ({c.deploy_action})" if c.deployed else None, "target": c.target,
            "nic": c.nic_model or None, **_port_cells(c),
            "counters": c.counters if c.agent_version else None, "sources": sources or None,
            "clock_skew_ms": (round(c.clock_skew_ms, 1) or 0.0) if c.clock_skew_ms is not None else None,
            "problem": problem or None}


def _short_gid(gid: str) -> str:
    """``0000:...:ffff:c000:020a`` -> ``::ffff:192.0.2.10``; anything unparsable as it is."""
    try:
        addr = ipaddress.IPv6Address(gid)
    except ValueError:
        return gid
    return f"::ffff:{addr.ipv4_mapped}" if addr.ipv4_mapped is not None else addr.compressed


def _port_cells(c: HostCheck) -> dict[str, str | None]:
    """The port, GID and MTU cells of a verbs host (None for a sim host or one not reached)."""
    if not c.port_state and c.gid_index is None:
        return {"port": None, "gid": None, "mtu": None}
    port: str | None = None
    if c.port_state:  # empty when the device or port is absent (the problem says so)
        port = c.port_state + (f" ({c.phys_state})" if c.phys_state else "")
    if port and c.link_layer and c.link_layer != "Ethernet":
        port += f" {c.link_layer}"
    has_gid = bool(set(c.gid.replace(":", "")) - {"0"})
    gid = f"[{c.gid_index}] " + (f"{_short_gid(c.gid)} {c.gid_type or 'type unknown'}" if has_gid else "none")
    mtu = None
    if c.active_mtu is not None or c.netdev_mtu is not None:
        mtu = f"{c.active_mtu or '?'}" + (f" ({c.netdev} {c.netdev_mtu})" if c.netdev_mtu is not None else "")
    return {"port": port, "gid": gid, "mtu": mtu}


@hosts.command("check")
@inventory_option
@click.option("--accept-new-host-keys", is_flag=True,
              help="Record the key of a host that has none recorded yet (a changed key is never accepted).")
@format_option
def check(inventory_path: str, accept_new_host_keys: bool, fmt: str) -> None:
    """Check every host: reachable, host key, agent version, port state, GID, MTU, target fingerprint, counters,
    clock skew.

    Exits 1 when a host is not usable; its problem, under the table, says why.
    """
    inv = load_inventory(inventory_path)
    try:  # paramiko is only needed here: the other commands run where it is not installed (a bare python3)
        from collie.remote.check import check_inventory
    except ImportError as exc:
        raise InputError(f"collie hosts check needs {exc.name or 'paramiko'}; install it with "
                         "'pip install paramiko' (or Debian's python3-paramiko)") from None
    results = check_inventory(inv, accept_new_host_keys=accept_new_host_keys)
    if fmt == "table":
        usable = sum(c.usable for c in results)
        rows = [_row(c) for c in results]
        emit(render(rows, fmt, columns=CHECK_COLUMNS,
                    title=f"{inv.path}: {usable} of {len(results)} host(s) usable"))
        emit(render_notes([(r["host"], label, r[key]) for r in rows for label, key in NOTES if r[key]]))
    else:
        emit(render([c.to_dict() for c in results], fmt))
    if not all(c.usable for c in results):
        sys.exit(1)
