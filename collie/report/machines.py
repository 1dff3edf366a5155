"""Which machines played a campaign's roles, and whether its numbers come from the simulator.

A local target (``sim:...``, ``verbs:DEV...``) plays both roles of a workload, ``a`` and ``b``, on this machine:
a report names them by role, as the workload does (``host b``). A ``remote:`` campaign records, in its target's
fingerprint (``details``), per role the inventory host (``a.host``), its SSH endpoint (``a.address``,
``user@address:port``), the host's own target (``a.target``: ``verbs:mlx5_0:1:3`` or ``sim:PROFILE``) and, on a
verbs host, its GID (``a.gid``): a report names each role by that host, with the device, port and GID it used,
and gives perftest the device and the server's address.

A campaign is simulated when its target is the simulator, or a ``remote:`` one whose every host runs it (the
fingerprint's ``simulated = yes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from collie.errors import TargetError
from collie.report.perftest import Device, device_of
from collie.targets.base import TargetInfo
from collie.targets.registry import parse_target

#: The fields of each role a remote fingerprint records (``a.host``) that :class:`Machine` holds.
ROLE_FIELDS: Final = ("host", "address", "target", "device", "port", "gid_index", "gid")
#: The roles a workload names its hosts by, when the fingerprint does not list them.
DEFAULT_ROLES: Final = ("a", "b")


@dataclass(frozen=True)
class Machine:
    """The machine behind one role.

    Attributes:
        role: the workload's name for it (``a``, ``b``).
        host: the inventory's name for it (``""``: a local target, named by its role).
        target: the host's own target (``verbs:mlx5_0:1:3``, ``sim:cx6-200g``; ``""``: a local target).
        device: the RDMA device perftest opens there, and the address a perftest client connects to when it
            serves.
        gid: the GID of its port (``""``: not recorded, e.g. a simulated host).
    """

    role: str
    host: str = ""
    target: str = ""
    device: Device = field(default_factory=Device)
    gid: str = ""

    @property
    def name(self) -> str:
        """The inventory host, else the role."""
        return self.host or self.role

    @property
    def port_text(self) -> str:
        """``mlx5_0:1`` (device and port, those known; ``""``: none)."""
        d = self.device
        return d.name + (f":{d.port}" if d.name and d.port is not None else "")

    def label(self, end: str = "") -> str:
        """How a report names it: ``node-b (mlx5_0:1, receiver)`` on a remote campaign, ``host b (receiver)``
        on a local one (``end``: its end in the flow, ``""`` to leave it out)."""
        if not self.host:
            return f"host {self.role}" + (f" ({end})" if end else "")
        inside = ", ".join(x for x in (self.port_text, end) if x)
        return self.host + (f" ({inside})" if inside else "")


@dataclass(frozen=True)
class Machines:
    """The machines of a campaign's target.

    Attributes:
        simulated: every number comes from the simulator (local, or on every remote host).
        remote: the roles ran on inventory hosts (a ``remote:`` target that records them).
        roles: role -> its machine.
        profile: the simulator's profile (``""``: not simulated, or not recorded).
    """

    simulated: bool = False
    remote: bool = False
    roles: Mapping[str, Machine] = field(default_factory=dict)
    profile: str = ""

    def of(self, role: str) -> Machine:
        """The machine of ``role`` (a role it does not know: named by the role)."""
        return self.roles.get(role) or Machine(role)

    def label(self, role: str, end: str = "") -> str:
        """:meth:`Machine.label` of ``role``'s machine."""
        return self.of(role).label(end)

    def holds(self, detail: str) -> bool:
        """Whether a fingerprint detail (``a.gid``) is one a machine of these shows."""
        role, _, name = detail.partition(".")
        return role in self.roles and name in ROLE_FIELDS and self.remote

    def devices(self) -> dict[str, Device]:
        """Role -> the device perftest opens there."""
        return {r: m.device for r, m in self.roles.items()}

    def simulated_sentence(self) -> str:
        """One sentence saying the numbers are simulated (``""`` when they are not)."""
        if not self.simulated:
            return ""
        where = "on every host of the inventory" if self.remote else "on this machine"
        profile = f" (profile {self.profile})" if self.profile else ""
        return (f"Simulated results: every number in this report comes from collie's simulator{profile}, run "
                f"{where}, not from RDMA hardware; the NIC, firmware and kernel named are those the profile "
                "models.")


#: A local target's machines when nothing else is known: named by their roles, not simulated.
LOCAL: Final = Machines()


def machines_of(info: TargetInfo | None, spec: str) -> Machines:
    """The machines of a target opened as ``spec`` whose fingerprint is ``info`` (None: not recorded)."""
    kind = info.kind if info is not None else _kind(spec)
    details = info.details if info is not None else {}
    roles = info.hosts if info is not None and info.hosts else DEFAULT_ROLES
    if kind == "remote":  # its hosts are the inventory's; its fingerprint records the roles' hosts
        simulated = details.get("simulated") == "yes"
        machines = {r: _remote(r, details) for r in DEFAULT_ROLES if details.get(f"{r}.host")}
        profiles = {details.get(f"{r}.profile", "") for r in machines}
        return Machines(simulated, bool(machines), machines, profiles.pop() if len(profiles) == 1 else "")
    device = device_of(spec)
    return Machines(kind == "sim", False, {r: Machine(r, device=device) for r in roles},
                    details.get("profile", "") if kind == "sim" else "")


def _kind(spec: str) -> str:
    """The kind of target ``spec`` names (``""``: one this process does not know)."""
    try:
        return parse_target(spec).kind
    except TargetError:
        return ""


def _remote(role: str, details: Mapping[str, str]) -> Machine:
    # the endpoint is user@address:port; perftest's client connects to the address
    endpoint = details.get(f"{role}.address", "").rpartition("@")[2]
    address = endpoint.rpartition(":")[0] or endpoint
    target = details.get(f"{role}.target", "")
    device = device_of(target)
    return Machine(role, details[f"{role}.host"], target,
                   Device(device.name, device.port, device.gid_index, address), details.get(f"{role}.gid", ""))
