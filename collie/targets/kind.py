"""What a target kind is: a typed spec record and the record of how to parse, open and host-session it.

A spec string ``KIND[:REST]`` names a target; :mod:`collie.targets.registry` splits it once, and the kind's
``parse`` turns ``REST`` into its :class:`TargetSpec`. Kinds: ``sim`` and ``verbs`` (this layer), ``remote``
(registered from :mod:`collie.remote`, which sits above the targets).

Invariants: a :class:`TargetSpec` is frozen; ``str(spec)`` is its canonical string (a file it names absolute,
anything else as given), and parsing that string again gives an equal spec.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Generic, Protocol, TypeVar

from collie.targets.base import Target
from collie.targets.session import HostSession


@dataclass(frozen=True)
class TargetSpec(ABC):
    """A parsed target spec; each kind defines its own fields.

    Attributes:
        kind: the kind's name, the part of the spec string before the first colon.
    """

    kind: ClassVar[str]

    @abstractmethod
    def __str__(self) -> str:
        """The canonical spec string."""


S = TypeVar("S", bound=TargetSpec)
S_contra = TypeVar("S_contra", bound=TargetSpec, contravariant=True)


class Opener(Protocol[S_contra]):
    """Creates the target a spec names (not yet entered)."""

    def __call__(self, spec: S_contra, /, *, seed: int, pace: float, accept_new_host_keys: bool) -> Target:
        """Args: ``seed`` the simulator's noise (and the PSNs of real targets), ``pace`` simulator-only sleep per
        run, ``accept_new_host_keys`` remote-only. Raises one-sentence ``CollieError``s."""
        ...


class SessionOpener(Protocol[S_contra]):
    """Creates one host's side of a cross-host run (a :class:`~collie.targets.session.HostSession`)."""

    def __call__(self, spec: S_contra, /, *, target: Callable[[], Target], seed: int,
                 netdev: str | None) -> HostSession:
        """Args: ``target`` hands out the host's own entered target of this spec (opened on first call),
        ``seed`` the hello's seed, ``netdev`` the netdev of the host's port (``None``: found from sysfs)."""
        ...


@dataclass(frozen=True)
class TargetKind(Generic[S]):
    """One target kind as the registry holds it.

    Attributes:
        name: the spec strings' prefix (``sim``).
        usage: the spec forms it accepts, for error sentences (``sim, sim:PROFILE, sim:PATH.toml``).
        parse: ``REST`` of ``NAME[:REST]`` (``""`` when there is no colon) to the spec; raises a one-sentence
            :class:`~collie.errors.TargetError` for a spec it cannot read.
        open: creates the target.
        open_session: creates a host session (``None``: the kind cannot be a remote host).
    """

    name: str
    usage: str
    parse: Callable[[str], S]
    open: Opener[S]
    open_session: SessionOpener[S] | None = None
