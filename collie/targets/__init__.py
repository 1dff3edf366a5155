"""Targets and the spec strings that name them: ``sim[:PROFILE|:PATH.toml]``, ``verbs:DEV[:PORT[:GID]]``,
``remote:INVENTORY.toml``."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from collie.errors import TargetError
from collie.targets.base import Target

KINDS: Final = ("sim", "verbs", "remote")
DEFAULT_TARGET: Final = "sim"


def canonical_spec(spec: str) -> str:
    """``spec`` with the file it names made absolute (``sim:PATH.toml``, ``remote:HOSTS.toml``), so the spec a
    campaign or case records opens the same target from any folder; any other spec, or a file that does not
    exist (``open_target`` says so), is returned unchanged."""
    kind, _, rest = spec.partition(":")
    names_file = rest.endswith(".toml") or "/" in rest
    if kind not in ("sim", "remote") or not names_file:
        return spec
    path = Path(rest).expanduser()
    return f"{kind}:{path.resolve()}" if path.is_file() else spec


def open_target(spec: str, *, seed: int = 0, pace: float = 0.0, accept_new_host_keys: bool = False) -> Target:
    """Create the target named by ``spec`` (not yet entered).

    Args:
        spec: ``sim`` (= ``sim:cx6-200g``), ``sim:NAME``, ``sim:PATH.toml``, ``verbs:DEVICE[:PORT[:GID]]``,
            ``remote:INVENTORY.toml``.
        seed: the simulator's noise seed (ignored by real targets; remote sim hosts get it).
        pace: simulator only: sleep this fraction of each experiment's duration (for demos).
        accept_new_host_keys: remote only: record the key of a host that has none recorded (never a changed
            one).

    Raises:
        TargetError: unknown kind, or a spec the kind cannot parse (one sentence saying what is allowed).
        InputError: a remote inventory with a mistake (one sentence naming the line and field).
    """
    kind, _, rest = spec.partition(":")
    if kind == "sim":
        from collie.targets.sim import SimTarget

        return SimTarget(rest or None, seed=seed, pace=pace)
    if kind == "verbs":
        from collie.targets.verbs import VerbsTarget

        return VerbsTarget(rest, seed=seed)
    if kind == "remote":
        from collie.remote.orchestrator import open_remote

        return open_remote(rest, seed=seed, accept_new_host_keys=accept_new_host_keys)
    raise TargetError(f"unknown target {spec!r}; use one of: sim, sim:PROFILE, sim:PATH.toml, "
                      f"verbs:DEVICE[:PORT[:GID]], remote:INVENTORY.toml")
