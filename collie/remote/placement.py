"""Which inventory host plays each workload role ("a", "b") of a remote target, and who stands in for a host
taken out.

Rules (see docs/remote.md):

* a role named in the inventory's ``[place]`` table goes to that host, or to the first host carrying its tag
  (``tag:T``) that no earlier role took (when every such host is taken: the first one, loopback);
* a role not named takes the first host in inventory order that no earlier role took (default: the first two
  hosts); with one host, both roles are on it (loopback on that host's agent);
* hosts taken out (:func:`replace`) are never placed again; a stand-in must run the same target as the host it
  replaces, carry the role's tag when the role is placed by tag, and play no role yet;
* every sim host of a placement runs the same simulator profile.

Invariants: functions here are pure (an inventory and a set of names in, a mapping out); every refusal is one
:class:`~collie.errors.InputError` or :class:`NoStandIn` sentence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from collie.errors import InputError, TargetError
from collie.remote.inventory import ROLES, TAG_PREFIX, Host, Inventory, TargetKind


class NoStandIn(TargetError):
    """No unused host of the inventory can stand in for a host taken out."""


def place(inventory: Inventory, out: Iterable[str] = ()) -> dict[str, Host]:
    """Role -> host for every role in :data:`ROLES` (see the module rules).

    Raises:
        InputError: the placement mixes simulator profiles.
        NoStandIn: every host a role may go to is taken out.
    """
    gone = set(out)
    chosen: dict[str, Host] = {}
    for role in ROLES:
        rule = inventory.place.get(role)
        pool = [h for h in _allowed(inventory, rule) if h.name not in gone]
        if not pool:
            raise NoStandIn(f"no host of {inventory.path} is left for role {role!r} ({_rule_text(rule)}); the "
                            f"others were taken out")
        used = {h.name for h in chosen.values()}
        free = [h for h in pool if h.name not in used]
        chosen[role] = free[0] if free else pool[0]
    check_profiles(chosen)
    return chosen


def replace(inventory: Inventory, placement: Mapping[str, Host], lost: str, out: Iterable[str]) -> dict[str, Host]:
    """The placement with host ``lost`` (taken out, and in ``out``) replaced by one unused host that fits every
    role it played (see the module rules).

    Raises:
        NoStandIn: no unused host fits.
    """
    gone = set(out) | {lost}
    roles = [r for r, h in placement.items() if h.name == lost]
    if not roles:
        return dict(placement)
    old = placement[roles[0]]
    used = {h.name for h in placement.values()}
    fits = [h for h in inventory.hosts if h.name not in gone and h.name not in used and h.target == old.target
            and all(h in _allowed(inventory, inventory.place.get(r)) for r in roles)]
    if not fits:
        raise NoStandIn(f"no unused host of {inventory.path} runs {old.target.spec}"
                        f"{_tags_text(inventory, roles)} to stand in for {lost!r}")
    new = dict(placement)
    for r in roles:
        new[r] = fits[0]
    return new


def check_profiles(placement: Mapping[str, Host]) -> None:
    """Every sim host of a placement runs the same profile.

    Raises:
        InputError: two sim hosts run different profiles (one sentence naming them).
    """
    sims = {h.target.spec: (r, h) for r, h in placement.items() if h.target.kind is TargetKind.SIM}
    if len(sims) > 1:
        (s1, (r1, h1)), (s2, (r2, h2)) = list(sims.items())[:2]
        raise InputError(f"role {r1!r} is on host {h1.name!r} running {s1} and role {r2!r} on host {h2.name!r} "
                         f"running {s2}; every sim host of a remote target must run the same profile")


def _allowed(inventory: Inventory, rule: str | None) -> list[Host]:
    if rule is None:
        return list(inventory.hosts)
    if rule.startswith(TAG_PREFIX):
        return list(inventory.tagged(rule[len(TAG_PREFIX):]))
    return [inventory.host(rule)]


def _rule_text(rule: str | None) -> str:
    return "any host" if rule is None else f"place = {rule!r}"


def _tags_text(inventory: Inventory, roles: list[str]) -> str:
    tags = [inventory.place[r][len(TAG_PREFIX):] for r in roles
            if inventory.place.get(r, "").startswith(TAG_PREFIX)]
    return f" with tag {', '.join(map(repr, tags))}" if tags else ""
