"""A collective's figures from one run of its pattern: its time, algbw and busbw, and each rank's and link's.

A target runs a pattern's connections (:meth:`~collie.model.patterns.Pattern.connections`) as flows and measures
each one's payload rate and latency (:class:`~collie.targets.base.FlowResult`). :func:`collective` plays the
pattern's steps over those figures: a rank starts step ``k + 1`` when its own transfers of step ``k`` are done
and every transfer of step ``k`` sent to it has arrived (:mod:`collie.model.patterns`).

A transfer of ``b`` bytes on connection ``c`` takes ``max(b / rate_c, lat_c)``: its bytes at the connection's
rate, and never less than one WR's completion latency (``lat_c``, the median; under load it includes queueing
that the rate already accounts for, so it is a floor, not a term added). On the simulator every connection's
rate is its steady share with every other connection active, which is what each step of these patterns has; on
real devices the connections run at once for the whole interval, and the steps are played over those rates.

As nccl-tests defines them (its ``doc/PERFORMANCE.md``), with ``S`` the pattern's ``size`` and ``t`` the
collective's time: ``algbw = S / t`` and ``busbw = algbw x factor`` (all-reduce ``2(n-1)/n``, all-to-all
``(n-1)/n``; the factor of every kind is in :mod:`collie.model.patterns`). Figures are in GB/s (10^9 bytes per
second), as nccl-tests prints them.

Invariants:
    * a connection that moved nothing makes the collective's time infinite and its algbw and busbw 0;
    * with every connection at one rate and latency, every rank's and link's figure is the same (a fault-free
      ring is homogeneous), and ``busbw`` equals a link's rate when latency is negligible.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from collie.model.patterns import Pattern


class Measured(Protocol):
    """What :func:`collective` reads of one connection's measurement (a target's ``FlowResult`` has it)."""

    @property
    def flow(self) -> int: ...

    @property
    def bps(self) -> float: ...

    @property
    def lat_p50_us(self) -> float: ...


@dataclass(frozen=True)
class LinkFigure:
    """One connection: ``src_rank`` on host ``src`` sends to ``dst_rank`` on ``dst`` at ``gbs`` GB/s.

    Attributes:
        name: ``h3->h4``; ``h3:1->h4:0`` when a host holds several ranks (host, then the rank's place on it).
    """

    connection: int
    src_rank: int
    dst_rank: int
    src: str
    dst: str
    gbs: float
    name: str

    @property
    def loopback(self) -> bool:
        """Both ranks are on one host: the connection loops back through its NIC, never on the wire."""
        return self.src == self.dst


@dataclass(frozen=True)
class RankFigure:
    """One rank: what it sent and received per second of its own transfers (GB/s; 0 when it had none)."""

    rank: int
    host: str
    send_gbs: float
    recv_gbs: float


@dataclass(frozen=True)
class CollectiveResult:
    """The figures of one run of a pattern (see the module docstring).

    Attributes:
        time_s: the collective's time (seconds; ``inf`` when a connection moved nothing).
        algbw_gbs, busbw_gbs: as nccl-tests (GB/s).
        links: every connection's figure, in connection order.
        ranks: every rank's figure, in rank order.
        spread: ``(median - slowest) / median`` of the links' rates (0: homogeneous).
        tenants: (sending host, receiving host) of the traffic beside the pattern (its victim's), which gives
            the hosts it touches a standing of their own (:meth:`group_of`).
    """

    time_s: float
    algbw_gbs: float
    busbw_gbs: float
    links: tuple[LinkFigure, ...]
    ranks: tuple[RankFigure, ...]
    spread: float
    tenants: tuple[tuple[str, str], ...] = ()

    @property
    def slowest_link(self) -> LinkFigure:
        return min(self.links, key=lambda link: (link.gbs, link.connection))

    @property
    def median_link_gbs(self) -> float:
        return statistics.median(link.gbs for link in self.links)

    @property
    def reference_gbs(self) -> float:
        """What a healthy link between hosts of this run gets: :func:`reference_gbs` of those links (of every
        link when every rank is on one host)."""
        wire = [link.gbs for link in self.links if not link.loopback]
        return reference_gbs(wire or [link.gbs for link in self.links])

    def reference_of(self, link: LinkFigure) -> float:
        """What a healthy link like ``link`` gets: :func:`reference_gbs` of its group (:meth:`group_of`),
        ``link`` among them."""
        return self._references[self.group_of(link)]

    def group_of(self, link: LinkFigure) -> tuple[int, ...]:
        """The links a healthy ``link`` performs like: loopback or not, between hosts of the same standing in the
        pattern (:meth:`_standing`). Every link between hosts of a ring or an all-to-all is in one group, its
        loopback links (two ranks of one host, a path that never reaches the wire) in another; a permutation of
        several ranks per host gives its hosts different loads, whose links are not compared."""
        return (int(link.loopback), self._standing[link.src], self._standing[link.dst])

    @functools.cached_property
    def _standing(self) -> dict[str, int]:
        """Each host's class of structurally alike hosts: colour refinement (Weisfeiler-Lehman) of the graph of
        connections, from one class, each round splitting hosts by their connections out, in and in loopback,
        the traffic of other tenants they send or receive, and the classes of the hosts at their other ends, until
        no class splits. Hosts of one class get the same share of a fair network, so their links are expected to
        perform alike."""
        hosts = sorted({h for link in self.links for h in (link.src, link.dst)})
        colour = dict.fromkeys(hosts, 0)
        for _ in range(len(hosts)):
            marks: dict[str, list[tuple[str, int]]] = {h: [] for h in hosts}
            for link in self.links:
                if link.loopback:
                    marks[link.src].append(("loop", 0))
                else:
                    marks[link.src].append(("out", colour[link.dst]))
                    marks[link.dst].append(("in", colour[link.src]))
            for src, dst in self.tenants:
                if src in marks:
                    marks[src].append(("tenant_out", colour.get(dst, -1)))
                if dst in marks:
                    marks[dst].append(("tenant_in", colour.get(src, -1)))
            signature = {h: (colour[h], tuple(sorted(marks[h]))) for h in hosts}
            classes = {sig: i for i, sig in enumerate(sorted(set(signature.values())))}
            refined = {h: classes[signature[h]] for h in hosts}
            if len(classes) == len(set(colour.values())):
                return refined
            colour = refined
        return colour

    @functools.cached_property
    def _references(self) -> dict[tuple[int, ...], float]:
        """:func:`reference_gbs` of each group of links (:meth:`group_of`)."""
        rates: dict[tuple[int, ...], list[float]] = {}
        for link in self.links:
            rates.setdefault(self.group_of(link), []).append(link.gbs)
        return {group: reference_gbs(r) for group, r in rates.items()}


def reference_gbs(rates: Sequence[float]) -> float:
    """The rate a healthy link gets among ``rates``: the median of their faster half (the upper quartile, by
    linear interpolation). It stays a healthy link's rate while up to half the links are slow (two slow hosts of
    eight slow half a ring's links), where the median would fall between slow and healthy.

    Raises:
        ValueError: ``rates`` is empty.
    """
    if not rates:
        raise ValueError("no rates to take a reference of")
    return statistics.quantiles(rates, n=4, method="inclusive")[2] if len(rates) > 1 else float(rates[0])


def collective(pattern: Pattern, flows: Sequence[Measured]) -> CollectiveResult:
    """Play ``pattern``'s steps over the rates and latencies its connections got in one run.

    Args:
        pattern: the pattern run.
        flows: that run's flow results (``flow`` indexes the pattern's connections; one per connection, then
            the pattern's victim's, which is no part of the collective).

    Raises:
        ValueError: ``flows`` does not hold one result per connection of ``pattern``.
    """
    pairs = pattern.pairs()
    by_flow = {f.flow: f for f in flows if f.flow < len(pairs)}  # a victim beside the pattern comes after
    if sorted(by_flow) != list(range(len(pairs))):
        raise ValueError(f"{len(flows)} flow results for a pattern of {len(pairs)} connections")
    rate = np.array([by_flow[i].bps / 8 for i in range(len(pairs))])  # bytes/s
    lat = np.array([by_flow[i].lat_p50_us * 1e-6 for i in range(len(pairs))])
    src = np.array([s for s, _ in pairs])
    dst = np.array([d for _, d in pairs])
    n = pattern.ranks
    ready = np.zeros(n)
    sent = np.zeros(n)  # bytes each rank sent / received over the collective
    got = np.zeros(n)
    send_s = np.zeros(n)  # seconds each rank spent sending / receiving (its transfers' durations, per step)
    recv_s = np.zeros(n)
    with np.errstate(divide="ignore"):
        for step in pattern.steps():
            conn = np.array([t.connection for t in step])
            nbytes = np.array([t.bytes for t in step], dtype=float)
            took = np.maximum(lat[conn], np.where(rate[conn] > 0, nbytes / rate[conn], math.inf))
            start = ready[src[conn]]
            done = start + took
            send_done = ready.copy()
            recv_done = ready.copy()
            np.maximum.at(send_done, src[conn], done)
            np.maximum.at(recv_done, dst[conn], done)
            np.add.at(sent, src[conn], nbytes)
            np.add.at(got, dst[conn], nbytes)
            send_s += send_done - ready
            recv_s += recv_done - ready
            ready = np.maximum(send_done, recv_done)
    total = float(ready.max())
    algbw = pattern.size / total / 1e9 if 0 < total < math.inf else 0.0
    links = tuple(LinkFigure(i, s, d, pattern.host_of(s), pattern.host_of(d), float(rate[i]) / 1e9,
                             f"{_rank_name(pattern, s)}->{_rank_name(pattern, d)}") for i, (s, d) in enumerate(pairs))
    ranks = tuple(RankFigure(r, pattern.host_of(r), _per_s(sent[r], send_s[r]), _per_s(got[r], recv_s[r]))
                  for r in range(n))
    median = statistics.median(link.gbs for link in links)
    spread = (median - min(link.gbs for link in links)) / median if median > 0 else 0.0
    victim = pattern.victim
    tenants = () if victim is None else ((victim.payload_sender.host, victim.payload_receiver.host),)
    return CollectiveResult(time_s=total, algbw_gbs=algbw, busbw_gbs=algbw * pattern.busbw_factor,
                            links=links, ranks=ranks, spread=spread, tenants=tenants)


def _per_s(nbytes: float, seconds: float) -> float:
    return float(nbytes / seconds / 1e9) if 0 < seconds < math.inf else 0.0


def _rank_name(pattern: Pattern, rank: int) -> str:
    host = pattern.host_of(rank)
    return host if pattern.ranks_per_host == 1 else f"{host}:{rank % pattern.ranks_per_host}"
