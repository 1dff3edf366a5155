"""The switches under a simulated fleet (a profile's ``[fabric]`` table): leaves and spines, ECMP over the
uplinks, and what a congested port does: with PFC it pauses the links that feed it, without it drops.

Topology:
    * host ``i`` of the profile sits on leaf ``i // hosts_per_leaf``; each leaf has one uplink to every spine,
      of ``uplink_gbps`` each way;
    * a host's own link is its wire resources: its TX is the link into its leaf, its RX the leaf's port into it;
    * a flow between two leaves crosses, per QP, one uplink and one spine's downlink: the spine ECMP picks by a
      hash of (sender, receiver, QP), as a switch does by a QP's UDP source port. A flow's QPs move in step, so it
      uses each spine in proportion to its QPs there (QPs that collide on a spine share its links).

Congestion. Water-filling first finds the rates the flows would get if no switch port or receiving NIC held
them back (the *offered* load), then the rates they get (the *carried* load):
    * a port is congested when its offered load exceeds its capacity: a leaf's port into a host (an incast, a
      port at half speed), an uplink or a spine's downlink (ECMP collisions, oversubscription), or a receiving
      NIC's PCIe write direction (it cannot drain its buffer). A port queues each priority apart (a flow's is its
      traffic class's): a priority's queue at a congested port is congested when its flows offer the port more
      than they get of it;
    * a congested port's queue holds ``xoff_kib`` (each flow through it waits that long), or with a shared buffer
      (``buffer_mib``) its dynamic threshold: ``alpha`` (a lossless priority's; ``lossy_alpha`` another's) times
      the buffer its switch has free, so the more queues of a switch are congested, the less each holds;
    * PFC, a priority the fabric protects (``lossless``): when the queue reaches its threshold the port pauses
      the links that feed it on that priority, hop by hop back to the senders: every link upstream of a
      congested queue on a flow through it is paused. A paused link serves its flows of that priority
      round-robin while it is not paused, so none of its other flows of that priority (the victims) gets more of
      it than the most a flow through the congested queue gets (head-of-line blocking); its flows of other
      priorities are not held. A paused link's pause ratio is the share of time it is held,
      ``1 - carried / unpaused``, where a switch's backlogged queue sends at the link's capacity when unpaused and
      a sender as fast as its own limits let it (its offered load). A host whose own TX link is paused received
      that pause; a NIC that pauses its RX link sent it;
    * any other priority (every one without PFC): the queue drops the share of its offered load the port cannot
      carry of it, ``1 - capacity x (its share of what the port carries) / offered``, and an RC flow through it
      resends what followed each loss (go-back-N, as on a lossy link).

Invariants:
    * only a profile with a ``[fabric]`` table has switches; without one, hosts meet in an ideal non-blocking
      switch (ports shared max-min, nothing paused or dropped) and nothing here runs;
    * the fabric only adds limits to water-filling's (a flow gets at most what it gets alone without switches;
      flows that share no limit with a held flow may get what it leaves);
    * every congested port is named in the run's truth, ``fabric:pause:PORT`` (a lossless queue congested there),
      ``fabric:drop:PORT`` (another) or both,
      a port named like ``leaf0->h03`` (a leaf's port into a host), ``leaf1->spine0`` (an uplink),
      ``spine0->leaf1`` (a spine's downlink) or ``h03:nic`` (a receiving NIC).
"""

from __future__ import annotations

import functools
import math
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from collie.model.flow import nic_address
from collie.model.rocev2 import PRIORITIES
from collie.targets.sim.profile import Fabric
from collie.targets.sim.sharing import Shared, fair_shares, loads

#: The stages of a flow's path in one direction, each a tuple of resource ids: the sender's link into its leaf,
#: the uplinks, the spines' downlinks, the leaf's port into the receiver, the receiving NIC's PCIe writes.
SENDER, UP, DOWN, PORT, NIC = range(5)
#: A path: its resource ids per stage (:data:`SENDER` .. :data:`NIC`).
Path = tuple[tuple[int, ...], ...]
#: Truth labels of a congested port: ``fabric:pause:PORT`` with PFC, ``fabric:drop:PORT`` without.
PAUSE_PREFIX: Final = "fabric:pause:"
DROP_PREFIX: Final = "fabric:drop:"
#: A port is congested when its offered load exceeds its capacity by more than this fraction.
_OVER: Final = 1e-6


class Routed(Shared, Protocol):
    """A flow as the fabric sees it: water-filling's view plus its paths (one per direction it sends data) and
    the priority its packets are queued at."""

    paths: list[Path]
    priority: int


@functools.lru_cache(maxsize=1 << 16)
def spread(src: str, dst: str, qps: int, spines: int) -> tuple[tuple[int, float], ...]:
    """The spines ECMP puts a flow's ``qps`` QPs from ``src`` to ``dst`` on, each with its share of the QPs
    (a pure function of its arguments: CRC-32 of ``src>dst#q`` modulo ``spines``)."""
    counts = Counter(zlib.crc32(f"{src}>{dst}#{q}".encode()) % spines for q in range(qps))
    return tuple((s, n / qps) for s, n in sorted(counts.items()))


class Topology:
    """A profile's fabric, compiled: each NIC's leaf (its host's: a host's NICs have a port each on its leaf), the
    uplinks' capacity and how congestion behaves."""

    def __init__(self, fabric: Fabric, hosts: Sequence[str], nics: int = 1) -> None:
        self.fabric: Final = fabric
        self.leaf: Final = {nic_address(h, k): i // fabric.hosts_per_leaf for i, h in enumerate(hosts)
                            for k in range(nics)}
        self.uplink_bps: Final = fabric.uplink_gbps * 1e9
        self.xoff_bits: Final = fabric.xoff_kib * 1024 * 8
        self.buffer_bits: Final = fabric.buffer_mib * (1 << 20) * 8
        #: the priorities PFC protects (:attr:`~collie.targets.sim.profile.Fabric.protected`)
        self.lossless: Final = fabric.protected
        #: (leaf, spine) -> the fraction of its speed a slow link between them keeps
        self.slow: Final = {(leaf, spine): factor for leaf, spine, factor in fabric.slow_links}


@dataclass
class Links:
    """The switch-to-switch links one run uses, each a resource appended to its capacities when first used.

    Attributes:
        caps: the run's resource capacities (appended to).
        names: resource id -> port name, for the links added.
        switches: resource id -> the switch whose port sends onto it (``leaf0``, ``spine1``), for the links added.
        faults: the truth ids of the slow links added (:meth:`~collie.targets.sim.profile.Fabric.link_id`).
    """

    topology: Topology
    caps: list[float]
    names: dict[int, str] = field(default_factory=dict)
    switches: dict[int, str] = field(default_factory=dict)
    faults: set[str] = field(default_factory=set)
    _ids: dict[tuple[int, int, int], int] = field(default_factory=dict)

    def _link(self, stage: int, leaf: int, spine: int) -> int:
        key = (stage, leaf, spine)
        k = self._ids.get(key)
        if k is None:
            k = self._ids[key] = len(self.caps)
            factor = self.topology.slow.get((leaf, spine), 1.0)
            self.caps.append(self.topology.uplink_bps * factor)
            if factor < 1.0:
                self.faults.add(self.topology.fabric.link_id(leaf, spine))
            self.names[k] = f"leaf{leaf}->spine{spine}" if stage == UP else f"spine{spine}->leaf{leaf}"
            self.switches[k] = f"leaf{leaf}" if stage == UP else f"spine{spine}"
        return k

    def cross(self, src: str, dst: str, bits: float, qps: int
              ) -> tuple[list[tuple[int, float]], tuple[int, ...], tuple[int, ...]]:
        """What one direction of a flow from ``src`` to ``dst`` (``bits`` on the wire per request) uses between
        the leaves: its uses of uplinks and downlinks, and the ids of each (none within one leaf)."""
        topo = self.topology
        la, lb = topo.leaf[src], topo.leaf[dst]
        if la == lb:
            return [], (), ()
        uses: list[tuple[int, float]] = []
        ups: list[int] = []
        downs: list[int] = []
        for s, share in spread(src, dst, qps, topo.fabric.spines):
            up, down = self._link(UP, la, s), self._link(DOWN, lb, s)
            uses += [(up, bits * share), (down, bits * share)]
            ups.append(up)
            downs.append(down)
        return uses, tuple(ups), tuple(downs)


@dataclass(frozen=True)
class Congestion:
    """What the fabric did to one run.

    Attributes:
        pause_rx: resource id of a host's TX link -> per priority, the share of time its leaf paused it.
        pause_tx: resource id of a host's RX link -> per priority, the share of time its own NIC paused it.
        loss: flow position -> the fraction of its packets congested queues of a priority PFC does not protect
            dropped.
        delay_us: flow position -> what it waited in the congested queues on its way.
        ports: the truth labels of the congested ports, in resource order.
        faults: the truth ids of the slow links between switches the run crossed, sorted.
    """

    pause_rx: Mapping[int, Mapping[int, float]]
    pause_tx: Mapping[int, Mapping[int, float]]
    loss: Mapping[int, float]
    delay_us: Mapping[int, float]
    ports: tuple[str, ...]
    faults: tuple[str, ...] = ()


NONE: Final = Congestion({}, {}, {}, {}, ())


def congestion(calcs: Sequence[Routed], caps: list[float], topology: Topology, names: Mapping[int, str],
               tx_links: Mapping[int, int], rx_links: Mapping[int, int], switches: Mapping[int, str]
               ) -> tuple[list[float], Congestion]:
    """Rates and loads of ``calcs`` through the fabric (see the module docstring): sets each flow's rate,
    appends a limit to ``caps`` (and the flow's uses) for each victim held by head-of-line blocking.

    Args:
        calcs: the flows, each at the rate it gets alone and with its paths.
        names: resource id -> port name, of every resource a path may queue at (stages UP .. NIC).
        tx_links, rx_links: resource id of a host's TX (RX) link -> its own id, for the links pause shows on.
        switches: resource id -> the switch whose port sends onto it (a NIC's own buffer: none).

    Returns:
        each resource's carried load, and what congestion did.
    """
    stage_of = {k: j for c in calcs for path in c.paths for j in range(UP, NIC + 1) for k in path[j]}
    if not stage_of:  # every flow loops back: no switch on its way
        return _shares(calcs, caps), NONE
    alone = [c.rate for c in calcs]
    # per stage, the load arriving at each resource, and each flow's rate, when it and every later stage hold
    # nothing back (the hops before it do): a stage's port is congested when that load exceeds its capacity
    arriving: dict[int, list[float]] = {}
    rates_at: dict[int, list[float]] = {}
    opened: frozenset[int] = frozenset()
    for j in range(NIC, UP - 1, -1):
        now = frozenset(k for k, s in stage_of.items() if s >= j)
        if now != opened or not arriving:
            opened = now
            open_caps = [math.inf if k in now else cap for k, cap in enumerate(caps)]
            for c in calcs:
                c.rate = min([open_caps[k] / v for k, v in c.uses], default=c.rate)
            offered = _shares(calcs, open_caps)
            offered_rates = [c.rate for c in calcs]
        arriving[j] = offered
        rates_at[j] = offered_rates
    for c, rate in zip(calcs, alone, strict=True):
        c.rate = rate
    carried = _shares(calcs, caps)
    congested = {k for k, j in stage_of.items() if arriving[j][k] > caps[k] * (1.0 + _OVER)}
    if not congested:
        return carried, NONE
    # the queues of the congested ports: a priority's queue at a port is congested when its flows offer the port
    # more than they get of it (a priority whose flows get all they offer is not held there)
    off = _priority_loads(calcs, congested, lambda k: rates_at[stage_of[k]])
    got = _priority_loads(calcs, congested)
    queues = {q for q, x in off.items() if x > got[q] * (1.0 + 1e-9)}
    lossless = topology.lossless
    ports = tuple(f"{prefix}{names[k]}" for k in sorted(congested) for prefix, kept in
                  ((PAUSE_PREFIX, True), (DROP_PREFIX, False))
                  if any((k, p) in queues for p in range(PRIORITIES) if (p in lossless) == kept))
    held = _held(queues, switches, topology)
    delay: dict[int, float] = {}  # what a flow waits in the congested queues on its way
    for i, c in enumerate(calcs):
        p = c.priority
        for path in c.paths:
            wait = sum(held[(k, p)] / caps[k] for stage in path[UP:] for k in stage if (k, p) in queues)
            if wait:
                delay[i] = delay.get(i, 0.0) + wait * 1e6
    loss: dict[int, float] = {}  # a lossy queue drops what the port cannot carry of it (its share of the port)
    for i, c in enumerate(calcs):
        p = c.priority
        if p not in lossless:
            kept = 1.0
            for k in {k for path in c.paths for stage in path[UP:] for k in stage if (k, p) in queues}:
                kept *= caps[k] * (got[(k, p)] / carried[k]) / off[(k, p)]
            if kept < 1.0:
                loss[i] = 1.0 - kept
    feeding = _feeding(calcs, queues, lossless)
    if not feeding:
        return carried, Congestion({}, {}, loss, delay, ports)
    blocked = _head_of_line(calcs, feeding)
    if blocked:
        for i, limit in blocked.items():
            calcs[i].uses.append((len(caps), 1.0))
            caps.append(limit)
            alone[i] = min(alone[i], limit)
        for c, rate in zip(calcs, alone, strict=True):
            c.rate = rate
        carried = _shares(calcs, caps)
    # unpaused, a switch's backlogged queue sends at line rate; a sender as fast as it can
    shown = {k for k, _ in feeding if k in tx_links or k in rx_links}
    now_carried = _priority_loads(calcs, shown)
    sent = _priority_loads(calcs, shown, lambda k: rates_at[UP])
    pause_rx: dict[int, dict[int, float]] = {}
    pause_tx: dict[int, dict[int, float]] = {}
    for k, p in feeding:
        if k in shown:
            would = min(caps[k], sent[(k, p)]) if k in tx_links else caps[k]
            ratio = min(1.0, max(0.0, 1.0 - now_carried[(k, p)] / would)) if would > 0 else 0.0
            (pause_rx if k in tx_links else pause_tx).setdefault(k, {})[p] = ratio
    return carried, Congestion(pause_rx, pause_tx, loss, delay, ports)


def _feeding(calcs: Sequence[Routed], queues: set[tuple[int, int]], lossless: frozenset[int]
             ) -> dict[tuple[int, int], set[int]]:
    """Each link a congested lossless queue pauses, as ``(resource, priority)``, with the flows of that priority
    through it that feed a congested queue further on."""
    feeding: dict[tuple[int, int], set[int]] = {}
    for i, c in enumerate(calcs):
        p = c.priority
        if p not in lossless:
            continue
        for path in c.paths:
            last = max((j for j in range(UP, NIC + 1) if any((k, p) in queues for k in path[j])), default=0)
            for stage in path[:last]:
                for k in stage:
                    feeding.setdefault((k, p), set()).add(i)
    return feeding


def _held(queues: set[tuple[int, int]], switches: Mapping[int, str], topology: Topology
          ) -> dict[tuple[int, int], float]:
    """The bits each congested queue ``(resource, priority)`` holds: ``xoff_kib`` without a shared buffer (and at a
    NIC, whose buffer is its own); with one, its dynamic threshold, ``alpha`` x the buffer its switch has free.

    Invariant: with ``n`` congested queues in a switch, each of threshold factor ``a_q``, every queue sits at its
    threshold, ``T_q = a_q x F`` with ``F = B - sum(T)``, so ``F = B / (1 + sum(a))``: the more queues of a switch
    are congested, the less each holds (and the less a flow waits in it).
    """
    fabric = topology.fabric
    lossless = topology.lossless
    buffer = topology.buffer_bits
    alpha = {q: fabric.alpha if q[1] in lossless else fabric.lossy_alpha for q in queues}
    shares: dict[str, float] = {}
    for q, a in alpha.items():
        switch = switches.get(q[0])
        if switch is not None:
            shares[switch] = shares.get(switch, 0.0) + a
    out: dict[tuple[int, int], float] = {}
    for q, a in alpha.items():
        switch = switches.get(q[0])
        out[q] = a * buffer / (1.0 + shares[switch]) if buffer > 0 and switch is not None else topology.xoff_bits
    return out


def _priority_loads(calcs: Sequence[Routed], links: set[int], rates: Callable[[int], Sequence[float]] | None = None
                    ) -> dict[tuple[int, int], float]:
    """Per (resource of ``links``, priority), the load the flows of that priority put on it: at their rates, or
    at ``rates(resource)`` (one rate per flow), added in flow order (as :func:`loads` does)."""
    out: dict[tuple[int, int], float] = {}
    for i, c in enumerate(calcs):
        p = c.priority
        for k, v in c.uses:
            if k in links:
                r = c.rate if rates is None else rates(k)[i]
                out[(k, p)] = out.get((k, p), 0.0) + v * r
    return out


def _shares(calcs: Sequence[Shared], caps: list[float]) -> list[float]:
    """Water-filling's loads (a flow alone shares nothing: its load is its own)."""
    return fair_shares(calcs, caps) if len(calcs) > 1 else loads(calcs, len(caps))


def _head_of_line(calcs: Sequence[Routed], feeding: Mapping[tuple[int, int], set[int]]) -> dict[int, float]:
    """Per victim (a flow through a link paused on its priority that feeds no congested queue through it), the
    rate the paused link lets it have: no more of the link than the most a feeding flow gets of it. Flows of
    other priorities on the link are not held (PFC pauses one priority)."""
    level: dict[tuple[int, int], float] = {}  # (paused link, priority) -> the most a feeding flow carries over it
    for j in {j for feeders in feeding.values() for j in feeders}:
        c = calcs[j]
        p = c.priority
        for k, u in c.uses:
            if j in feeding.get((k, p), ()) and u * c.rate > level.get((k, p), 0.0):
                level[(k, p)] = u * c.rate
    held: dict[int, float] = {}
    for i, c in enumerate(calcs):
        p = c.priority
        for k, v in c.uses:
            if (k, p) in level and v > 0 and i not in feeding[(k, p)]:
                limit = level[(k, p)] / v
                if limit < c.rate * (1.0 - 1e-9) and limit < held.get(i, math.inf):
                    held[i] = limit
    return held
