"""The disjoint host groups of ``collie campaign --parallel K``: one per search chain, each a remote target.

The rule (docs/remote.md, "Parallel chains"): the inventory's hosts are split, in inventory order, into K
consecutive groups as equal in size as possible (when K does not divide the number of hosts, the first groups
get one host more); each group is an inventory of its own, with the file's settings and ``[place]`` table, and
its chain places roles ``a`` and ``b`` inside it by the usual rules (:mod:`collie.remote.placement`). Its other
hosts are the stand-ins of its chain only, so no host is ever driven by two chains.

Invariants: every group holds at least two hosts (one per role); ``[place]`` may only name tags (a host named
there is in one group only); every group's sim hosts run the same profile (the campaign calibrates once, on
group 0). Every refusal is one :class:`~collie.errors.InputError` sentence (exit 2), before any host is reached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from collie.errors import InputError
from collie.remote.inventory import ROLES, TAG_PREFIX, Inventory, TargetKind, load_inventory
from collie.remote.orchestrator import RemoteTarget
from collie.remote.placement import NoStandIn, place


def split(inventory: Inventory, k: int) -> list[Inventory]:
    """The ``k`` host groups of ``inventory`` (see the module rule), each checked to place every role.

    Raises:
        InputError: the inventory cannot give ``k`` disjoint groups (one sentence saying why).
    """
    hosts = inventory.hosts
    need = len(ROLES) * k
    if len(hosts) < need:
        raise InputError(f"{inventory.path} has {len(hosts)} host{'s' if len(hosts) != 1 else ''}, but --parallel "
                         f"{k} needs at least {need}: {k} disjoint groups of {len(ROLES)} (one host per role "
                         f"{' and '.join(ROLES)})")
    named = {r: rule for r, rule in inventory.place.items() if not rule.startswith(TAG_PREFIX)}
    if named:
        role, rule = next(iter(named.items()))
        raise InputError(f"{inventory.path}: place.{role} names host {rule!r}, which can be in one group only; "
                         f"with --parallel {k}, place roles by tag (\"tag:T\") so that every group can play them")
    size, extra = divmod(len(hosts), k)
    groups: list[Inventory] = []
    start = 0
    for i in range(k):
        end = start + size + (i < extra)
        group = dataclasses.replace(inventory, hosts=hosts[start:end])
        start = end
        for role, rule in inventory.place.items():
            if not group.tagged(rule[len(TAG_PREFIX):]):
                raise InputError(f"--parallel {k}: group {i} of {inventory.path} (hosts {_names(group)}) has no "
                                 f"host tagged {rule[len(TAG_PREFIX):]!r} for role {role!r} (place.{role} = "
                                 f"{rule!r}); tag a host of every group, or run fewer chains")
        try:
            place(group)
        except (InputError, NoStandIn) as exc:
            raise InputError(f"--parallel {k}: group {i} of {inventory.path} (hosts {_names(group)}) cannot "
                             f"place the roles: {_bare(exc)}") from None
        groups.append(group)
    _check_same_profile(groups, k)
    return groups


def open_groups(rest: str, seeds: Sequence[int], *, accept_new_host_keys: bool = False) -> list[RemoteTarget]:
    """One remote target per chain (``len(seeds)`` of them) over the disjoint groups of inventory ``rest``;
    chain ``i``'s sim hosts get ``seeds[i]``. Nothing is reached before the targets are entered.

    Raises:
        InputError: a mistake in the inventory, or it cannot give the groups.
    """
    inventory = load_inventory(rest)
    return [RemoteTarget(group, seed=seed, spec=f"remote:{rest}", accept_new_host_keys=accept_new_host_keys)
            for group, seed in zip(split(inventory, len(seeds)), seeds, strict=True)]


def _check_same_profile(groups: Sequence[Inventory], k: int) -> None:
    first = {h.target.spec for h in place(groups[0]).values() if h.target.kind is TargetKind.SIM}
    for i, group in enumerate(groups[1:], start=1):
        sims = {h.target.spec for h in place(group).values() if h.target.kind is TargetKind.SIM}
        if sims and first and sims != first:
            raise InputError(f"--parallel {k}: group {i} (hosts {_names(group)}) runs {', '.join(sorted(sims))} "
                             f"and group 0 (hosts {_names(groups[0])}) runs {', '.join(sorted(first))}; every "
                             "group's sim hosts must run the same profile (the campaign calibrates once, on group 0)")


def _names(group: Inventory) -> str:
    return ", ".join(repr(h.name) for h in group.hosts)


def _bare(exc: Exception) -> str:
    """The sentence of ``exc`` without its trailing period (it goes inside another)."""
    return str(exc).rstrip(".")
