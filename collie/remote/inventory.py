"""The inventory of remote hosts (``hosts.toml``): where each host is, how to log in, which device target it runs.

File format (see docs/remote.md)::

    known_hosts = "known_hosts"     # optional: an inventory-local known_hosts file, relative to this file
    connect_timeout = 10            # optional: seconds for TCP connect + SSH handshake + authentication
    request_timeout = 30            # optional: seconds for any one request to an agent

    [defaults]                      # optional: any host field but name and address
    user = "collie"
    target = "sim:cx6-200g"

    [[host]]
    name = "node-a"
    address = "192.0.2.10"
    port = 22
    user = "collie"
    identity = "~/.ssh/id_ed25519"
    target = "verbs:mlx5_0:1:3"     # or sim:PROFILE
    netdev = "ens1f0"
    numa = 0
    tags = ["rack1"]

    [place]                         # optional: which host plays each workload role (default: the first two hosts)
    a = "node-a"                    # a host name,
    b = "tag:rack2"                 # or the first host carrying a tag (not already placed, when one is left)

Invariants of a loaded :class:`Inventory`:
    * host names are unique and non-empty; they are data, never code: a name (or tag) may hold any character,
      because nothing of an inventory is ever put into a shell command (everything travels in the JSON
      protocol, see :mod:`collie.remote.protocol`);
    * every host has an address, a port in 1..65535, a user, and a target that parses (``sim:PROFILE`` with a
      built-in profile, or ``verbs:DEVICE[:PORT[:GID]]``), stored in canonical form;
    * ``identity`` and ``known_hosts`` are absolute paths (``~`` expanded, relative ones taken from the
      inventory's folder); they are not required to exist when loading (a missing identity file is that host's
      failure when connecting, not a mistake in the file);
    * ``place`` maps roles (``a``, ``b``) to an existing host name or to ``tag:T`` with at least one host carrying
      ``T``;
    * every mistake is one :class:`~collie.errors.InputError` sentence naming the file, the line and the field.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Final

from collie.codec import expect_type
from collie.errors import CollieError, InputError
from collie.tomlio import parse_toml, read_text

DEFAULT_SSH_PORT: Final = 22
DEFAULT_CONNECT_TIMEOUT: Final = 10.0
DEFAULT_REQUEST_TIMEOUT: Final = 30.0

TOP_FIELDS: Final = ("known_hosts", "connect_timeout", "request_timeout", "defaults", "host", "place")
#: The workload roles a remote target places on hosts (the hosts workloads name, see collie/model/space.py).
ROLES: Final = ("a", "b")
TAG_PREFIX: Final = "tag:"
HOST_FIELDS: Final = ("name", "address", "port", "user", "identity", "target", "netdev", "numa", "tags")
DEFAULT_FIELDS: Final = tuple(f for f in HOST_FIELDS if f not in ("name", "address"))

#: A Linux interface name: at most 15 characters, no ``/``, no whitespace (IFNAMSIZ - 1).
_NETDEV_RE: Final = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
#: A host name or IP address as a resolver or ``connect()`` takes it (IPv6 without brackets).
_ADDRESS_RE: Final = re.compile(r"^[A-Za-z0-9_.:%-]{1,253}$")
_USER_RE: Final = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.@-]{0,63}$")
TARGET_USAGE: Final = "sim, sim:PROFILE or verbs:DEVICE[:PORT[:GID_INDEX]]"


class TargetKind(Enum):
    """What a remote host's agent drives: a simulated subsystem or a local verbs device."""

    SIM = "sim"
    VERBS = "verbs"


@dataclass(frozen=True)
class HostTarget:
    """The device target one host runs, in canonical form (``sim:cx6-200g``, ``verbs:mlx5_0:1:3``).

    Attributes:
        kind: sim or verbs.
        spec: the canonical target spec the agent opens with :func:`collie.targets.open_target`.
        device, port: the RDMA port of a verbs target (``""`` and 0 for sim).
    """

    kind: TargetKind
    spec: str
    device: str = ""
    port: int = 0


@dataclass(frozen=True)
class Host:
    """One inventory host.

    Attributes:
        name: the inventory's name for it (unique; any characters, never interpreted).
        address: host name or IP address to connect to.
        port: SSH port.
        user: login user.
        identity: private key file (absolute), or None for the SSH agent and the default keys.
        target: the device target its agent runs.
        netdev: the netdev backing the RDMA port (for ``ethtool -S``), or None to find it from sysfs.
        numa: the NUMA node of the NIC, or None when not stated.
        tags: free labels (never interpreted).
        line: the line of its ``[[host]]`` header in the inventory (0 when not from a file).
    """

    name: str
    address: str
    port: int
    user: str
    target: HostTarget
    identity: Path | None = None
    netdev: str | None = None
    numa: int | None = None
    tags: tuple[str, ...] = ()
    line: int = 0

    @property
    def endpoint(self) -> str:
        """``user@address:port``, for messages."""
        return f"{self.user}@{self.address}:{self.port}"


@dataclass(frozen=True)
class Inventory:
    """A validated inventory (see the module docstring for invariants).

    Attributes:
        path: the file it was read from.
        hosts: the hosts in file order.
        known_hosts: the inventory-local known_hosts file (absolute), or None.
        connect_timeout: seconds allowed for TCP connect, SSH handshake and authentication.
        request_timeout: seconds allowed for one request to an agent.
        place: role -> host name or ``tag:T`` (roles not named take the default placement).
    """

    path: Path
    hosts: tuple[Host, ...]
    known_hosts: Path | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    place: Mapping[str, str] = field(default_factory=dict)

    def host(self, name: str) -> Host:
        """The host called ``name``.

        Raises:
            InputError: no host has that name.
        """
        for h in self.hosts:
            if h.name == name:
                return h
        raise InputError(f"{self.path}: no host named {name!r}; hosts are {', '.join(map(repr, self.names))}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.hosts)

    def tagged(self, tag: str) -> tuple[Host, ...]:
        """The hosts that carry ``tag``, in file order."""
        return tuple(h for h in self.hosts if tag in h.tags)


def parse_host_target(spec: str, where: str) -> HostTarget:
    """Parse a host's ``target`` with the target registry.

    Raises:
        InputError: not ``sim[:PROFILE]`` with a built-in profile, nor a ``verbs:`` spec that parses.
    """
    from collie.targets.registry import UnknownTargetKind, parse_target
    from collie.targets.sim.kind import SimSpec
    from collie.targets.sim.profile import builtin_names, load_profile
    from collie.targets.verbs.spec import VerbsSpec

    try:
        parsed = parse_target(spec)
        if isinstance(parsed, SimSpec):
            if parsed.profile and parsed.profile not in builtin_names():
                raise InputError(f"{parsed.profile!r} is not a built-in simulator profile; use one of "
                                 f"{', '.join(builtin_names())}")
            return HostTarget(TargetKind.SIM, f"sim:{load_profile(parsed.profile or None).name}")
        if isinstance(parsed, VerbsSpec):
            return HostTarget(TargetKind.VERBS, parsed.name, parsed.device, parsed.port)
    except UnknownTargetKind:
        pass
    except CollieError as exc:
        raise InputError(f"{where}: {exc}") from None
    raise InputError(f"{where}: {spec!r} is not a device target a remote host can run; use {TARGET_USAGE}")


def load_inventory(path: str | Path) -> Inventory:
    """Read and validate an inventory file.

    Raises:
        InputError: unreadable file, malformed TOML, or any mistake in it (one sentence naming line and field).
    """
    p = Path(path)
    text = read_text(p, "a TOML inventory file")
    return parse_inventory(text, p)


def parse_inventory(text: str, path: Path) -> Inventory:
    """Validate inventory text read from ``path`` (relative paths inside are taken from ``path``'s folder)."""
    source = str(path)
    data = parse_toml(text, source)
    lines = _Lines(text, source)
    _check_known(data, TOP_FIELDS, lines.top)
    base = path.resolve().parent
    known = data.get("known_hosts")
    known_path = None
    if known is not None:
        known_path = _path(expect_type(known, str, lines.top("known_hosts"), "a file name"), base,
                           lines.top("known_hosts"))
    connect_timeout = _timeout(data, "connect_timeout", DEFAULT_CONNECT_TIMEOUT, lines)
    request_timeout = _timeout(data, "request_timeout", DEFAULT_REQUEST_TIMEOUT, lines)
    defaults = data.get("defaults", {})
    expect_type(defaults, dict, f"{source}: [defaults]", "a table")
    _check_known(defaults, DEFAULT_FIELDS, lines.default)
    raw_hosts = data.get("host", [])
    expect_type(raw_hosts, list, f"{source}: host", "a list of [[host]] tables")
    if not raw_hosts:
        raise InputError(f"{source}: no hosts; add at least one [[host]] table with a name and an address")
    hosts: list[Host] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_hosts):
        where = lines.host(i)
        expect_type(raw, dict, where, "a [[host]] table")
        _check_known(raw, HOST_FIELDS, lambda key, i=i: lines.host(i, key))  # type: ignore[misc]
        host = _host(i, {**defaults, **raw}, set(raw), base, lines)
        if host.name in seen:
            raise InputError(f"{lines.host(i, 'name')}: {host.name!r} is already the name of host[{seen[host.name]}]; "
                             f"host names must be unique")
        seen[host.name] = i
        hosts.append(host)
    place = _place(data.get("place", {}), hosts, lines)
    return Inventory(path=path, hosts=tuple(hosts), known_hosts=known_path, connect_timeout=connect_timeout,
                     request_timeout=request_timeout, place=place)


def _place(raw: Any, hosts: list[Host], lines: _Lines) -> dict[str, str]:
    expect_type(raw, dict, lines.section("place"), "a table of role = \"HOST\" or \"tag:TAG\"")
    names = [h.name for h in hosts]
    out: dict[str, str] = {}
    for role, value in raw.items():
        where = lines.in_section("place", role)
        if role not in ROLES:
            raise InputError(f"{where}: {role!r} is not a workload role; roles are {', '.join(ROLES)}")
        if not isinstance(value, str) or not value:
            raise InputError(f"{where}: expected a host name or \"tag:TAG\" (a string), got {value!r}")
        if value.startswith(TAG_PREFIX):
            tag = value[len(TAG_PREFIX):]
            if not any(tag in h.tags for h in hosts):
                raise InputError(f"{where}: no host carries the tag {tag!r}")
        elif value not in names:
            raise InputError(f"{where}: no host named {value!r}; hosts are {', '.join(map(repr, names))}")
        out[role] = value
    return out


def _host(i: int, merged: Mapping[str, Any], own: set[str], base: Path, lines: _Lines) -> Host:
    def where(key: str) -> str:
        return lines.host(i, key) if key in own else lines.default(key)

    for key in ("name", "address"):
        if key not in merged:
            raise InputError(f"{lines.host(i)}: missing required field {key!r}")
    if "target" not in merged:
        raise InputError(f"{lines.host(i)}: missing required field 'target' (in the host or in [defaults]); use "
                         f"{TARGET_USAGE}")
    name = expect_type(merged["name"], str, where("name"), "a host name (a string)")
    if not name or "\0" in name:
        raise InputError(f"{where('name')}: a host name must be a non-empty string without NUL characters")
    address = expect_type(merged["address"], str, where("address"), "a host name or IP address")
    if not _ADDRESS_RE.match(address):
        raise InputError(f"{where('address')}: {address!r} is not a host name or IP address")
    port = merged.get("port", DEFAULT_SSH_PORT)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InputError(f"{where('port')}: {port!r} is not a TCP port; use an integer from 1 to 65535")
    user = expect_type(merged.get("user", _local_user()), str, where("user"), "a user name")
    if not _USER_RE.match(user):
        raise InputError(f"{where('user')}: {user!r} is not a user name (letters, digits, '_', '.', '-', '@')")
    target = parse_host_target(expect_type(merged["target"], str, where("target"), TARGET_USAGE), where("target"))
    identity = None
    if "identity" in merged:
        identity = _path(expect_type(merged["identity"], str, where("identity"), "a private key file"), base,
                         where("identity"))
    netdev = merged.get("netdev")
    if netdev is not None and (not isinstance(netdev, str) or not _NETDEV_RE.match(netdev)):
        raise InputError(f"{where('netdev')}: {netdev!r} is not a network interface name (at most 15 letters, "
                         f"digits, '_', '.', ':', '@', '-')")
    if netdev is not None and target.kind is not TargetKind.VERBS:
        raise InputError(f"{where('netdev')}: a netdev only applies to a verbs target, and this host runs "
                         f"{target.spec}")
    numa = merged.get("numa")
    if numa is not None and (isinstance(numa, bool) or not isinstance(numa, int) or numa < 0):
        raise InputError(f"{where('numa')}: {numa!r} is not a NUMA node; use an integer >= 0")
    tags_raw = merged.get("tags", [])
    if not isinstance(tags_raw, list) or not all(isinstance(t, str) and t for t in tags_raw):
        raise InputError(f"{where('tags')}: expected a list of non-empty strings, got {tags_raw!r}")
    return Host(name=name, address=address, port=port, user=user, target=target, identity=identity,
                netdev=netdev, numa=numa, tags=tuple(tags_raw), line=lines.host_line(i))


def _check_known(table: Mapping[str, Any], allowed: tuple[str, ...], where: Callable[[str], str]) -> None:
    for key in table:
        if key not in allowed:
            raise InputError(f"{where(key)}: unknown field; allowed fields are {', '.join(allowed)}")


def _timeout(data: Mapping[str, Any], key: str, default: float, lines: _Lines) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise InputError(f"{lines.top(key)}: {value!r} is not a timeout; use a number of seconds above 0 and at "
                         f"most 3600")
    return float(value)


def _path(text: str, base: Path, where: str) -> Path:
    if not text:
        raise InputError(f"{where}: expected a file name, got an empty string")
    p = Path(text).expanduser()
    return p if p.is_absolute() else base / p


def _local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, no LOGNAME: ssh would not know either
        return "root"


class _Lines:
    """Finds the line of a field for messages (``hosts.toml:12: host[1].port``); best effort, never fails."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines = text.splitlines()
        self.headers = [i for i, ln in enumerate(self.lines) if re.match(r"^\s*\[\[\s*host\s*\]\]", ln)]

    def _find(self, start: int, key: str) -> int | None:
        pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for i in range(start, len(self.lines)):
            if i > start and self.lines[i].lstrip().startswith("["):
                return None
            if pat.match(self.lines[i]):
                return i + 1
        return None

    def _fmt(self, line: int | None, path: str) -> str:
        return f"{self.source}:{line}: {path}" if line else f"{self.source}: {path}"

    def top(self, key: str) -> str:
        pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for i, ln in enumerate(self.lines):
            if ln.lstrip().startswith("["):
                break
            if pat.match(ln):
                return self._fmt(i + 1, key)
        return self._fmt(None, key)

    def section(self, name: str) -> str:
        for i, ln in enumerate(self.lines):
            if re.match(rf"^\s*\[\s*{re.escape(name)}\s*\]", ln):
                return self._fmt(i + 1, f"[{name}]")
        return self._fmt(None, f"[{name}]")

    def in_section(self, name: str, key: str) -> str:
        for i, ln in enumerate(self.lines):
            if re.match(rf"^\s*\[\s*{re.escape(name)}\s*\]", ln):
                return self._fmt(self._find(i, key), f"{name}.{key}")
        return self._fmt(None, f"{name}.{key}")

    def default(self, key: str) -> str:
        for i, ln in enumerate(self.lines):
            if re.match(r"^\s*\[\s*defaults\s*\]", ln):
                return self._fmt(self._find(i, key), f"defaults.{key}")
        return self._fmt(None, f"defaults.{key}")

    def host_line(self, i: int) -> int:
        return self.headers[i] + 1 if i < len(self.headers) else 0

    def host(self, i: int, key: str | None = None) -> str:
        if key is None:
            return self._fmt(self.host_line(i) or None, f"host[{i}]")
        line = self._find(self.headers[i], key) if i < len(self.headers) else None
        return self._fmt(line, f"host[{i}].{key}")
