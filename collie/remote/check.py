"""``collie hosts check``: is each inventory host usable, and if not, why (one sentence a person can act on).

For each host, concurrently: connect (reachability, host key, authentication), start its agent (``hello``:
collie and protocol versions, clock skew; a host without collie or with another version gets this collie
deployed first, :mod:`~collie.remote.deploy`), ``inspect`` its RDMA port (verbs hosts: link state, the GID at the
target's index and whether it is RoCE v2, active MTU), ``describe`` its target (fingerprint; skipped when the port
cannot carry traffic) and ``sample`` its counters (how many, from which sources, which sources are unreadable),
then ``bye``.

Invariants:
    * a host is usable (:attr:`CheckStatus.OK`) only when every step succeeded, its agent runs this collie's
      version, its RDMA port (verbs) is ACTIVE with a GID at the target's index, and at least one counter was
      readable; otherwise :attr:`HostCheck.problem` says why in one
      sentence and :attr:`HostCheck.failure` names the step's kind of failure;
    * hosts are checked concurrently (one thread per host, bounded); one host's failure never stops another's
      check; every agent started is closed before :func:`check_inventory` returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Final

from collie.remote.client import AgentClient
from collie.remote.deploy import start_agent
from collie.remote.errors import Failure, HostError
from collie.remote.inventory import Host, Inventory, TargetKind
from collie.remote.ssh import KnownHosts, SshLauncher

#: Beyond this clock skew a host is still usable, but the check adds a note (counters of two hosts would be
#: compared across clocks that disagree).
SKEW_NOTE_S: Final = 1.0
MAX_WORKERS: Final = 32


class CheckStatus(Enum):
    OK = "ok"
    FAILED = "failed"


@dataclass(frozen=True)
class HostCheck:
    """What checking one host found (fields a step did not reach are empty or None).

    Attributes:
        host, address, port, user, target: from the inventory.
        status: usable or not.
        failure: the kind of failure when not usable (None when usable).
        problem: one sentence saying why it is not usable ("" when usable).
        notes: things worth knowing that do not make it unusable (a large clock skew).
        host_key: the server's key fingerprint (``ssh-ed25519 SHA256:...``).
        host_key_state: ``known`` (recorded before) or ``recorded`` (new, recorded now).
        host_key_file: the known_hosts file that holds it.
        agent_version, protocol, python, capabilities: from the agent's hello.
        deployed: the collie version deployed to the host for this check ("" when the host's own collie ran).
        deployed_folder: where (relative to the user's home).
        deploy_action: ``uploaded`` (now) or ``reused`` (an earlier complete deployment).
        clock_skew_ms, rtt_ms: the agent's clock minus ours, and the hello round trip.
        port_state, phys_state, link_layer: the verbs port's state (``ACTIVE``, ``DOWN``, ...), physical state
            (``LinkUp``, ``Disabled``, ...) and link layer (``Ethernet``, ``InfiniBand``); "" for sim hosts.
        gid_index, gid, gid_type: the target's GID index, the GID there ("" when none) and its type
            (``RoCE v2``, ``IB/RoCE v1``).
        netdev, netdev_mtu, active_mtu: the netdev behind the port, its MTU, and the port's active InfiniBand
            MTU in bytes (None when unknown).
        nic_model, driver, firmware, line_rate_bps: from the target's fingerprint.
        counters: how many counters were readable.
        sources: the sources they came from (``port``, ``hw``, ``ethtool``, ``rdma-stat``, ``sim``).
        unreadable: source -> why the host could not read it.
    """

    host: str
    address: str
    port: int
    user: str
    target: str
    status: CheckStatus
    failure: Failure | None = None
    problem: str = ""
    notes: tuple[str, ...] = ()
    host_key: str = ""
    host_key_state: str = ""
    host_key_file: str = ""
    agent_version: str = ""
    protocol: int | None = None
    python: str = ""
    capabilities: tuple[str, ...] = ()
    deployed: str = ""
    deployed_folder: str = ""
    deploy_action: str = ""
    clock_skew_ms: float | None = None
    rtt_ms: float | None = None
    port_state: str = ""
    phys_state: str = ""
    link_layer: str = ""
    gid_index: int | None = None
    gid: str = ""
    gid_type: str = ""
    netdev: str | None = None
    netdev_mtu: int | None = None
    active_mtu: int | None = None
    nic_model: str = ""
    driver: str = ""
    firmware: str = ""
    line_rate_bps: float | None = None
    counters: int = 0
    sources: tuple[str, ...] = ()
    unreadable: Mapping[str, str] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return self.status is CheckStatus.OK

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (every field; enums by value)."""
        d = asdict(self)
        d.update(status=self.status.value, failure=self.failure.value if self.failure else None,
                 notes=list(self.notes), capabilities=list(self.capabilities), sources=list(self.sources),
                 unreadable=dict(self.unreadable))
        return d


def check_host(host: Host, launcher: SshLauncher, request_timeout: float) -> HostCheck:
    """Check one host through ``launcher`` (see the module docstring); never raises :class:`HostError`."""
    found: dict[str, Any] = {}
    client: AgentClient | None = None
    try:
        conn = launcher.connection(host)
        found.update(host_key=conn.key.fingerprint, host_key_state=conn.key.state.value,
                     host_key_file=str(conn.key.file))
        started = start_agent(launcher, host, request_timeout)
        client, welcome = started.client, started.welcome
        if started.deployment is not None:
            found.update(deployed=started.deployment.version, deployed_folder=started.deployment.folder,
                         deploy_action=started.deployment.action.value)
        assert client.clock is not None
        found.update(agent_version=welcome.collie_version, protocol=welcome.protocol, python=welcome.python,
                     capabilities=welcome.capabilities, clock_skew_ms=client.clock.skew_s * 1e3,
                     rtt_ms=client.clock.rtt_s * 1e3)
        notes = []
        if abs(client.clock.skew_s) > SKEW_NOTE_S:
            notes.append(f"clock skew {client.clock.skew_s:+.2f} s: synchronise the clocks (chrony or NTP)")
        port = client.inspect() if host.target.kind is TargetKind.VERBS and "inspect" in welcome.capabilities \
            else None
        if port is not None:
            found.update(port_state=port.state, phys_state=port.phys_state, link_layer=port.link_layer,
                         gid_index=port.gid_index, gid=port.gid, gid_type=port.gid_type, netdev=port.netdev,
                         netdev_mtu=port.netdev_mtu, active_mtu=port.active_mtu)
            notes += port.notes
        found["notes"] = tuple(notes)
        if port is None or port.usable:  # the verbs target refuses to open on a port that cannot carry traffic
            info = client.describe()
            found.update(nic_model=info.nic_model, driver=info.driver, firmware=info.firmware,
                         line_rate_bps=info.line_rate_bps)
        try:
            snaps = client.sample()
        except HostError as exc:  # a port that cannot carry traffic is the sentence to act on first
            if port is None or port.usable or exc.failure is not Failure.AGENT_ERROR:
                raise
            snaps = ()
        values = sum(sum(v is not None for v in s.values.values()) for s in snaps)
        sources = sorted({src for s in snaps for src in s.sources.values()} or {s.source for s in snaps})
        unreadable = {k: v for s in snaps for k, v in s.unreadable.items()}
        found.update(counters=values, sources=tuple(sources), unreadable=unreadable)
        if port is not None and not port.usable:
            raise HostError(host.name, Failure.PORT, "; ".join(port.problems))
        if values == 0:
            why = "; ".join(f"{k}: {v}" for k, v in unreadable.items()) or "the collector found none"
            raise HostError(host.name, Failure.AGENT_ERROR, f"no counter of {host.target.spec} is readable ({why})")
        return _result(host, CheckStatus.OK, found)
    except HostError as exc:
        return _result(host, CheckStatus.FAILED, found, exc.failure, exc.reason)
    finally:
        if client is not None:
            client.close()


def _result(host: Host, status: CheckStatus, found: Mapping[str, Any], failure: Failure | None = None,
            problem: str = "") -> HostCheck:
    return HostCheck(host=host.name, address=host.address, port=host.port, user=host.user, target=host.target.spec,
                     status=status, failure=failure, problem=problem, **found)


def check_inventory(inventory: Inventory, *, accept_new_host_keys: bool = False,
                    known: KnownHosts | None = None) -> tuple[HostCheck, ...]:
    """Check every host of ``inventory`` concurrently; results in inventory order.

    Args:
        inventory: the hosts.
        accept_new_host_keys: record the key of a host that has none recorded (never a changed key).
        known: where host keys live (default: the user's known_hosts and the inventory's own).
    """
    known = known or KnownHosts.default(inventory.known_hosts, accept_new_host_keys)
    launcher = SshLauncher(known, inventory.connect_timeout)
    try:
        with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(inventory.hosts))) as pool:
            return tuple(pool.map(lambda h: check_host(h, launcher, inventory.request_timeout), inventory.hosts))
    finally:
        launcher.close()
