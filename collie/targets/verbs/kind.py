"""The ``verbs`` target kind: ``verbs:DEVICE[:PORT[:GID_INDEX]]`` (see :mod:`collie.targets.verbs.spec`)."""

from __future__ import annotations

from collections.abc import Callable

from collie import __version__
from collie.errors import CollieError
from collie.targets.base import Target
from collie.targets.kind import TargetKind
from collie.targets.session import HostSession
from collie.targets.verbs.spec import VerbsSpec, parse_spec
from collie.targets.verbs.target import VerbsTarget


def open_verbs(spec: VerbsSpec, /, *, seed: int, pace: float, accept_new_host_keys: bool) -> Target:
    """A :class:`VerbsTarget` on the spec's device (``pace`` and ``accept_new_host_keys`` do not apply)."""
    return VerbsTarget(spec, seed=seed)


def open_verbs_session(spec: VerbsSpec, /, *, target: Callable[[], Target], seed: int,
                       netdev: str | None) -> HostSession:
    """A ``VerbsSession`` on the spec's port (its own resources: ``target`` is not opened) that verifies the
    data of every run where it lands on this host.

    Raises:
        CollieError: this host lacks what the session imports (one sentence).
    """
    try:  # on first use: the session's modules are needed only where a verbs host runs
        from collie.targets.verbs.session import VerbsSession
    except ImportError as exc:
        raise CollieError(f"this agent (collie {__version__}) cannot run a verbs host's part of a remote run: "
                          f"{exc}") from None
    return VerbsSession(spec, netdev=netdev, seed=seed, verify=True)


VERBS: TargetKind[VerbsSpec] = TargetKind("verbs", "verbs:DEVICE[:PORT[:GID]]", parse_spec, open_verbs,
                                          open_verbs_session)
