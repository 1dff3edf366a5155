"""The ``sim`` target kind: ``sim`` (the default profile), ``sim:PROFILE``, ``sim:PATH.toml``.

Invariant: a profile that names an existing file is recorded as its absolute path, so a campaign or case opens
the same profile from any folder; a name or a missing file is kept as given (opening says what is wrong).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from collie.targets.base import Target
from collie.targets.kind import TargetKind, TargetSpec
from collie.targets.session import HostSession
from collie.targets.sim.session import SimSession
from collie.targets.sim.target import SimTarget


@dataclass(frozen=True)
class SimSpec(TargetSpec):
    """A simulator target.

    Attributes:
        profile: a built-in profile's name, a profile file's path, or ``""`` for the default profile.
    """

    kind: ClassVar[str] = "sim"
    profile: str = ""

    def __str__(self) -> str:
        return f"sim:{self.profile}" if self.profile else "sim"


def parse(rest: str) -> SimSpec:
    """The spec ``sim:REST`` (``REST`` empty: the default profile)."""
    if rest.endswith(".toml") or "/" in rest:
        path = Path(rest).expanduser()
        if path.is_file():
            return SimSpec(str(path.resolve()))
    return SimSpec(rest)


def open_sim(spec: SimSpec, /, *, seed: int, pace: float, accept_new_host_keys: bool) -> Target:
    """A :class:`SimTarget` of the spec's profile (``accept_new_host_keys`` does not apply)."""
    return SimTarget(spec.profile or None, seed=seed, pace=pace)


def open_sim_session(spec: SimSpec, /, *, target: Callable[[], Target], seed: int,
                     netdev: str | None) -> HostSession:
    """A :class:`SimSession` on the host's own simulator (which carries the seed; no netdev)."""
    sim = target()
    assert isinstance(sim, SimTarget), f"the target of {spec} is a {type(sim).__name__}"
    return SimSession(sim)


SIM: TargetKind[SimSpec] = TargetKind("sim", "sim, sim:PROFILE, sim:PATH.toml", parse, open_sim, open_sim_session)
