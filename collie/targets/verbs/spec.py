"""Parsing of the verbs target's spec: ``verbs:DEVICE[:PORT[:GID_INDEX]]``.

Invariants: a parsed :class:`VerbsSpec` has a non-empty device name made of letters, digits, ``_``, ``-`` and
``.``; ``port >= 1``; ``gid_index >= 0``; ``str(spec)`` names the parts the spec string named, ``spec.name`` all
three. The default GID index is 1, the IPv4-mapped RoCEv2 GID of a soft-RoCE or RoCE port whose netdev has an
IPv4 address (index 0 is the IPv6 link-local one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar, Final

from collie.errors import TargetError
from collie.targets.kind import TargetSpec

DEFAULT_PORT: Final = 1
DEFAULT_GID_INDEX: Final = 1
_DEVICE_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
USAGE: Final = "verbs:DEVICE[:PORT[:GID_INDEX]] (for example verbs:rxe0 or verbs:mlx5_0:1:3)"


@dataclass(frozen=True)
class VerbsSpec(TargetSpec):
    """Which device, port and GID a verbs target uses.

    Attributes:
        given_parts: how many of device, port and GID index the spec string named (1 to 3); ``str()`` names as
            many, so a recorded spec reads back as it was written. Specs that differ only in it are equal.
    """

    kind: ClassVar[str] = "verbs"
    device: str
    port: int = DEFAULT_PORT
    gid_index: int = DEFAULT_GID_INDEX
    given_parts: int = field(default=3, compare=False)

    def __str__(self) -> str:
        return ":".join(("verbs", self.device, str(self.port), str(self.gid_index))[:1 + self.given_parts])

    @property
    def name(self) -> str:
        """The spec string with every part (``verbs:rxe0:1:1``), as results and fingerprints name the target."""
        return f"verbs:{self.device}:{self.port}:{self.gid_index}"


def _int_part(text: str, what: str, lo: int, spec: str) -> int:
    if not text.isdigit() or int(text) < lo:
        raise TargetError(f"target verbs:{spec}: {what} {text!r} is not an integer >= {lo}; use {USAGE}")
    return int(text)


def parse_spec(rest: str) -> VerbsSpec:
    """Parse what follows ``verbs:`` in a target spec.

    Raises:
        TargetError: empty or malformed device, port or GID index (one sentence naming the part).
    """
    parts = rest.split(":")
    if not rest or not parts[0]:
        raise TargetError(f"target verbs needs a device name; use {USAGE}")
    if len(parts) > 3:
        raise TargetError(f"target verbs:{rest} has too many parts; use {USAGE}")
    device = parts[0]
    if not _DEVICE_RE.match(device):
        raise TargetError(f"target verbs:{rest}: {device!r} is not an RDMA device name; use {USAGE}")
    port = _int_part(parts[1], "port", 1, rest) if len(parts) > 1 else DEFAULT_PORT
    gid = _int_part(parts[2], "GID index", 0, rest) if len(parts) > 2 else DEFAULT_GID_INDEX
    return VerbsSpec(device=device, port=port, gid_index=gid, given_parts=len(parts))
