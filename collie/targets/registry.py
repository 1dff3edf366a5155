"""The target kinds by name: parse a spec string once, open its target, open a host session of it.

``sim`` and ``verbs`` are registered when this module is imported; ``remote`` registers itself when
:mod:`collie.remote.kind` is imported (:mod:`collie.services` does, so every command knows it), so this layer
never imports the remote layer.

Invariants:
    * a spec string is split into ``KIND`` and ``REST`` here and nowhere else (``REST`` only by its kind's
      parser);
    * a kind is registered once under its name; registering the same record again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from collie.errors import TargetError
from collie.targets.base import Target
from collie.targets.kind import TargetKind, TargetSpec
from collie.targets.session import HostSession
from collie.targets.sim.kind import SIM
from collie.targets.verbs.kind import VERBS

DEFAULT_TARGET: Final = "sim"

_KINDS: dict[str, TargetKind[Any]] = {}


class UnknownTargetKind(TargetError):
    """A spec string whose ``KIND`` no registered kind has."""


def register_kind(kind: TargetKind[Any]) -> None:
    """Make ``kind`` known by its name.

    Raises:
        ValueError: another kind already has that name.
    """
    held = _KINDS.setdefault(kind.name, kind)
    if held is not kind:
        raise ValueError(f"target kind {kind.name!r} is already registered")


def kinds() -> tuple[str, ...]:
    """The registered kinds' names, in registration order."""
    return tuple(_KINDS)


def parse_target(text: str) -> TargetSpec:
    """The spec ``text`` names (``sim``, ``sim:PROFILE``, ``sim:PATH.toml``, ``verbs:DEVICE[:PORT[:GID]]``,
    ``remote:INVENTORY.toml``, ...), a file it names made absolute when it exists.

    Raises:
        UnknownTargetKind: no registered kind is called ``KIND`` (one sentence listing what is allowed).
        TargetError: the kind cannot read ``REST`` (one sentence saying what is allowed).
    """
    name, _, rest = text.partition(":")
    kind = _KINDS.get(name)
    if kind is None:
        raise UnknownTargetKind(f"unknown target {text!r}; use one of: "
                                f"{', '.join(k.usage for k in _KINDS.values())}")
    spec: TargetSpec = kind.parse(rest)
    return spec


def open_target(spec: TargetSpec, *, seed: int = 0, pace: float = 0.0,
                accept_new_host_keys: bool = False) -> Target:
    """Create the target ``spec`` names (not yet entered).

    Args:
        spec: a parsed spec (:func:`parse_target`).
        seed: the simulator's noise seed (real targets: their PSNs; remote sim hosts get it).
        pace: simulator only: sleep this fraction of each experiment's duration (for demos).
        accept_new_host_keys: remote only: record the key of a host that has none recorded (never a changed
            one).

    Raises:
        TargetError: the target cannot be created (one sentence).
        InputError: a file the spec names has a mistake (one sentence naming the line and field).
    """
    target: Target = _kind(spec).open(spec, seed=seed, pace=pace, accept_new_host_keys=accept_new_host_keys)
    return target


def open_session(spec: TargetSpec, *, target: Callable[[], Target], seed: int, netdev: str | None) -> HostSession:
    """One host's side of a cross-host run on the device target ``spec`` (see
    :class:`~collie.targets.kind.SessionOpener` for the arguments).

    Raises:
        TargetError: the kind cannot be a remote host, or this host cannot run its sessions (one sentence).
    """
    opener = _kind(spec).open_session
    if opener is None:
        raise TargetError(f"a {spec.kind} target cannot be a remote host: {spec} has no host session")
    session: HostSession = opener(spec, target=target, seed=seed, netdev=netdev)
    return session


def _kind(spec: TargetSpec) -> TargetKind[Any]:
    kind = _KINDS.get(spec.kind)
    if kind is None:
        raise TargetError(f"target kind {spec.kind!r} of {spec} is not registered here")
    return kind


register_kind(SIM)
register_kind(VERBS)
