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
    ranks = "tag:rack1"             # a pattern's host roles r0, r1, ...: the hosts carrying a tag, in order

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
      ``T``; ``ranks_tag`` is ``""`` or a tag at least one host carries;
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

from collie.codec import Reader, Table
from collie.errors import CollieError, InputError
from collie.tomlio import parse_toml, read_text

DEFAULT_SSH_PORT: Final = 22
DEFAULT_CONNECT_TIMEOUT: Final = 10.0
DEFAULT_REQUEST_TIMEOUT: Final = 30.0

TOP_FIELDS: Final = ("known_hosts", "connect_timeout", "request_timeout", "defaults", "host", "place")
#: The ``[place]`` key that places a pattern's host roles r0, r1, ... on the hosts carrying a tag.
RANKS: Final = "ranks"
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

# What each field must be, as the codec's sentences say it (``expected <what>, got ...``, ``missing (<what>)``).
_NAME: Final = "a non-empty host name without NUL characters"
_ADDRESS: Final = "a host name or IP address"
_PORT: Final = "a TCP port (an integer from 1 to 65535)"
_USER: Final = "a user name (letters, digits, '_', '.', '-', '@')"
_TARGET: Final = f"a device target: {TARGET_USAGE}"
_NO_TARGET: Final = f"a device target, in the host or in [defaults]: {TARGET_USAGE}"
_NETDEV: Final = "a network interface name (at most 15 letters, digits, '_', '.', ':', '@', '-')"
_NUMA: Final = "a NUMA node (an integer)"
_TAG: Final = "a non-empty string"
_TAGS: Final = "a list of non-empty strings"
_HOSTS: Final = "at least one [[host]] table with a name and an address"
_TIMEOUT: Final = "a timeout (a number of seconds above 0 and at most 3600)"
_PLACE: Final = 'a host name or "tag:TAG"'
_PLACE_TABLE: Final = 'a table of role = "HOST" or "tag:TAG"'


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

    @classmethod
    def from_dict(cls, data: Any, reader: Reader, *, base: Path, defaults: Mapping[str, Any] | None = None,
                  fields: Callable[[str], Reader] | None = None, line: int = 0) -> Host:
        """Read one ``[[host]]`` table, every field checked; a field it does not set is taken from ``defaults``.

        Args:
            data: the host's table.
            reader: the reader of the table.
            base: the folder a relative ``identity`` is taken from.
            defaults: the inventory's ``[defaults]`` (already checked to hold host fields only).
            fields: the reader of each field (default ``reader.at``); an inventory's names the field's line, in
                the host or, for a field taken from them, in ``[defaults]``.
            line: the line of the host's ``[[host]]`` header (0: not from a file).

        Raises:
            ``reader``'s error: one sentence naming the field (missing, mistyped, unknown or breaking a rule).
        """
        own = reader.table(data, HOST_FIELDS, what="a [[host]] table", fields=fields)
        d = Table({**(defaults or {}), **own.data}, reader, fields)
        name = d.text("name", what=_NAME)
        if not name or "\0" in name:
            d.at("name").wrong(name, _NAME)
        address = d.text("address", what=_ADDRESS)
        if not _ADDRESS_RE.match(address):
            d.at("address").wrong(address, _ADDRESS)
        port = d.integer("port", DEFAULT_SSH_PORT, _PORT)
        if not 1 <= port <= 65535:
            d.at("port").wrong(port, _PORT)
        user = d.text("user", what=_USER) if "user" in d else _local_user()
        if not _USER_RE.match(user):
            d.at("user").wrong(user, _USER)
        target = parse_host_target(d.at("target").string(d.get("target", what=_NO_TARGET), _TARGET),
                                   d.at("target").location)
        identity = _path(d.text("identity", what="a private key file"), base, d.at("identity")) \
            if "identity" in d else None
        netdev = d.text("netdev", what=_NETDEV) if "netdev" in d else None
        if netdev is not None and not _NETDEV_RE.match(netdev):
            d.at("netdev").wrong(netdev, _NETDEV)
        if netdev is not None and target.kind is not TargetKind.VERBS:
            d.at("netdev").fail(f"a netdev only applies to a verbs target, and this host runs {target.spec}")
        numa = d.integer("numa", what=_NUMA, minimum=0) if "numa" in d else None
        tags: list[str] = []
        for j, raw in enumerate(d.items("tags", [], _TAGS)):
            tag = d.at("tags").at(j).string(raw, _TAG)
            if not tag:
                d.at("tags").at(j).wrong(raw, _TAG)
            tags.append(tag)
        return cls(name=name, address=address, port=port, user=user, target=target, identity=identity,
                   netdev=netdev, numa=numa, tags=tuple(tags), line=line)


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
        ranks_tag: the tag of the hosts a pattern's host roles ``r0``, ``r1``, ... are placed on, in inventory
            order (``[place] ranks = "tag:T"``); ``""``: every host.
    """

    path: Path
    hosts: tuple[Host, ...]
    known_hosts: Path | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    place: Mapping[str, str] = field(default_factory=dict)
    ranks_tag: str = ""

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
    lines = _Lines(text, source)
    top = lines.table(None, parse_toml(text, source), TOP_FIELDS, "a table")
    base = path.resolve().parent
    known_path = _path(top.text("known_hosts", what="a file name"), base, top.at("known_hosts")) \
        if "known_hosts" in top else None
    connect_timeout = _timeout(top, "connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    request_timeout = _timeout(top, "request_timeout", DEFAULT_REQUEST_TIMEOUT)
    defaults = lines.table("defaults", top.get("defaults", {}), DEFAULT_FIELDS, "a table")
    raw_hosts = top.items("host", [], _HOSTS)
    if not raw_hosts:
        if "host" in top:
            top.at("host").wrong(raw_hosts, _HOSTS)
        top.at("host").missing(_HOSTS)
    hosts: list[Host] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_hosts):
        def field(key: str, i: int = i, raw: Any = raw) -> Reader:
            own = isinstance(raw, dict) and key in raw
            return lines.field(i, key) if own or key not in defaults else lines.field("defaults", key)

        host = Host.from_dict(raw, lines.reader(i), base=base, defaults=defaults.data, fields=field,
                              line=lines.host_line(i))
        if host.name in seen:
            lines.field(i, "name").fail(f"host names must be unique, got {host.name!r} (already the name of "
                                        f"host[{seen[host.name]}])")
        seen[host.name] = i
        hosts.append(host)
    place = _place(lines.table("place", top.get("place", {}), (*ROLES, RANKS), _PLACE_TABLE), hosts)
    ranks = place.pop(RANKS, "")
    if ranks and not ranks.startswith(TAG_PREFIX):
        lines.field("place", RANKS).fail(f'a pattern\'s ranks are placed by tag ("tag:T"), not on one host: '
                                         f"got {ranks!r}")
    return Inventory(path=path, hosts=tuple(hosts), known_hosts=known_path, connect_timeout=connect_timeout,
                     request_timeout=request_timeout, place=place, ranks_tag=ranks[len(TAG_PREFIX):])


def _place(place: Table, hosts: list[Host]) -> dict[str, str]:
    names = [h.name for h in hosts]
    out: dict[str, str] = {}
    for role, value in place.data.items():
        reader = place.at(role)
        text = reader.string(value, _PLACE)
        if not text:
            reader.wrong(value, _PLACE)
        if text.startswith(TAG_PREFIX):
            tag = text[len(TAG_PREFIX):]
            if not any(tag in h.tags for h in hosts):
                reader.fail(f"no host carries the tag {tag!r}")
        elif text not in names:
            reader.fail(f"no host named {text!r}; hosts are {', '.join(map(repr, names))}")
        out[role] = text
    return out


def _timeout(top: Table, key: str, default: float) -> float:
    value = top.number(key, default, _TIMEOUT)
    if not 0 < value <= 3600:
        top.at(key).wrong(top.data[key], _TIMEOUT)
    return value


def _path(text: str, base: Path, reader: Reader) -> Path:
    if not text:
        reader.wrong(text, "a file name")
    p = Path(text).expanduser()
    return p if p.is_absolute() else base / p


def _local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, no LOGNAME: ssh would not know either
        return "root"


#: A place in the inventory: the top level (None), a section (``defaults``, ``place``) or a host by index.
_Where = str | int | None


class _Lines:
    """Finds the line of a field for messages (``hosts.toml:12: host[1]: port``); best effort, never fails."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines = text.splitlines()
        self.headers = [i for i, ln in enumerate(self.lines) if re.match(r"^\s*\[\[\s*host\s*\]\]", ln)]

    def _header(self, table: _Where) -> int | None:
        """The index of ``table``'s header line (None: the top level, or no header)."""
        if table is None:
            return None
        if isinstance(table, int):
            return self.headers[table] if table < len(self.headers) else None
        pat = re.compile(rf"^\s*\[\s*{re.escape(table)}\s*\]")
        return next((i for i, ln in enumerate(self.lines) if pat.match(ln)), None)

    def _line(self, table: _Where, key: str) -> int | None:
        """The line (from 1) where ``table`` sets ``key``, or None."""
        header = self._header(table)
        if header is None and table is not None:
            return None
        start = header or 0  # the top level: from the first line to the first header
        pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for i in range(start, len(self.lines)):
            if (header is None or i > start) and self.lines[i].lstrip().startswith("["):
                return None
            if pat.match(self.lines[i]):
                return i + 1
        return None

    def reader(self, table: _Where, key: str | None = None) -> Reader:
        """The reader of ``table``, its ``where`` the file and the line of field ``key`` (else of the header)."""
        line = self._line(table, key) if key is not None else None
        if line is None:
            header = self._header(table)
            line = header + 1 if header is not None else None
        if line is None and isinstance(table, str):  # ``defaults = 3``: a section set at the top level
            line = self._line(None, table)
        path = () if table is None else (f"host[{table}]",) if isinstance(table, int) else (table,)
        return Reader(f"{self.source}:{line}" if line else self.source, InputError, path)

    def field(self, table: _Where, key: str) -> Reader:
        """The reader of field ``key`` of ``table``, on its line."""
        return self.reader(table, key).at(key)

    def table(self, table: _Where, value: Any, allowed: tuple[str, ...], what: str) -> Table:
        """``value`` checked as ``table`` (no field outside ``allowed``), each field read on its own line."""
        return self.reader(table).table(value, allowed, what=what, fields=lambda key: self.field(table, key))

    def host_line(self, i: int) -> int:
        return self.headers[i] + 1 if i < len(self.headers) else 0
