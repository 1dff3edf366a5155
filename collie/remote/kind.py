"""The ``remote`` target kind: ``remote:INVENTORY.toml``, registered into :mod:`collie.targets.registry` when
this module is imported (the CLI imports it; the targets layer never imports the remote layer).

Invariant: an inventory that names an existing file is recorded as its absolute path, so a campaign or case
opens the same hosts from any folder; a missing file is kept as given (opening says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from collie.errors import TargetError
from collie.targets.base import Target
from collie.targets.kind import TargetKind, TargetSpec
from collie.targets.registry import register_kind


@dataclass(frozen=True)
class RemoteSpec(TargetSpec):
    """Hosts of an inventory.

    Attributes:
        inventory: the inventory file's path (non-empty).
    """

    kind: ClassVar[str] = "remote"
    inventory: str

    def __str__(self) -> str:
        return f"remote:{self.inventory}"


def parse(rest: str) -> RemoteSpec:
    """The spec ``remote:REST``.

    Raises:
        TargetError: no inventory file named.
    """
    if not rest:
        raise TargetError("remote needs an inventory file: --target remote:hosts.toml")
    if rest.endswith(".toml") or "/" in rest:
        path = Path(rest).expanduser()
        if path.is_file():
            return RemoteSpec(str(path.resolve()))
    return RemoteSpec(rest)


def open_remote(spec: RemoteSpec, /, *, seed: int, pace: float, accept_new_host_keys: bool) -> Target:
    """A :class:`~collie.remote.orchestrator.RemoteTarget` over the inventory's hosts (``pace`` does not apply).

    Raises:
        InputError: a mistake in the inventory.
    """
    from collie.remote.orchestrator import RemoteTarget  # on first use: the agent imports collie.remote too

    return RemoteTarget(spec.inventory, seed=seed, spec=str(spec), accept_new_host_keys=accept_new_host_keys)


REMOTE: TargetKind[RemoteSpec] = TargetKind("remote", "remote:INVENTORY.toml", parse, open_remote)

register_kind(REMOTE)
