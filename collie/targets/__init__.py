"""Targets and the spec strings that name them: ``sim[:PROFILE|:PATH.toml]``, ``verbs:DEV[:PORT[:GID]]``,
``remote:INVENTORY.toml``."""

from __future__ import annotations

from typing import Final

from collie.errors import TargetError
from collie.targets.base import Target

KINDS: Final = ("sim", "verbs", "remote")
DEFAULT_TARGET: Final = "sim"


def open_target(spec: str, *, seed: int = 0, pace: float = 0.0) -> Target:
    """Create the target named by ``spec`` (not yet entered).

    Args:
        spec: ``sim`` (= ``sim:cx6-200g``), ``sim:NAME``, ``sim:PATH.toml``, ``verbs:DEVICE[:PORT[:GID]]``.
        seed: the simulator's noise seed (ignored by real targets).
        pace: simulator only: sleep this fraction of each experiment's duration (for demos).

    Raises:
        TargetError: unknown kind, or a spec the kind cannot parse (one sentence saying what is allowed).
    """
    kind, _, rest = spec.partition(":")
    if kind == "sim":
        from collie.targets.sim import SimTarget

        return SimTarget(rest or None, seed=seed, pace=pace)
    if kind == "verbs":
        from collie.targets.verbs import VerbsTarget

        return VerbsTarget(rest, seed=seed)
    if kind in KINDS:
        raise TargetError(f"target kind {kind!r} is not available in this version of collie yet")
    raise TargetError(f"unknown target {spec!r}; use one of: sim, sim:PROFILE, sim:PATH.toml, "
                      f"verbs:DEVICE[:PORT[:GID]], remote:INVENTORY.toml")
