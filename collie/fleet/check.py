"""Localise slow hosts of a fleet in a few rounds of collective patterns, far fewer than measuring all pairs.

Each round is one experiment: every host takes part at once. A link is slow when it is below ``1 - margin`` x
its round's reference (:func:`~collie.model.collective.reference_gbs`: the median of the faster half of its
links, a healthy link's rate while up to half of them are slow). The schedule:

1. **A ring** over every host. No slow link: the fleet is clean, in one round. Else the hosts at an end of a slow
   link are *implicated*: each faulty host (its port, NIC or PCIe), and its ring neighbours.
2. When at least as many hosts were not implicated: **pairs**, each implicated host beside a cleared one (the
   nearest in the fleet's order not yet taken: behind the same switch where the order follows the racks, so a
   slow host's congestion stays off the links between switches, where PFC would hold other pairs with it),
   exchanging traffic both ways, the cleared hosts left paired among themselves for the round's reference (the
   ring's when none are left). An implicated host whose pair is slow is a suspect: its partner is healthy. Two
   rounds in all.
3. Otherwise (faults are many for the fleet's size): **a second ring**, in an order where, as far as a random
   search finds one, no host has a neighbour it had in the first. The *candidates* are the hosts implicated in
   both rings; a candidate with a slow link to a host that is not a candidate is a suspect (that end is healthy).
   Candidates whose every slow link ends at another candidate (a healthy host between two faulty ones in both
   rings) are settled by rounds of pairs as in 2, beside the hosts no ring implicated (or implicated least,
   then those the pairs cleared), as many per round as there are such partners; should none be left, the
   candidates still unsettled are all named.

On a fleet whose hosts have several NICs, each *rail* (NIC ``k`` of every host: ``h0/1``, ``h1/1``, ...) is
checked as a fleet of its own, one rail after the other (:func:`check_rails`): a round never runs two NICs of
one host, so what they share (a dual-port NIC's PCIe slot) cannot hide a slow one, and a suspect is a NIC.

A slow link of any round with no suspect at either end is *unexplained*: both its hosts are healthy, so the path
between them is slow (on a switch fabric, a link between switches it crosses). The check names it beside the
suspects.

Invariants:
    * every round measures each of its links once, all at once; ``FleetResult.experiments`` counts the rounds;
    * a suspect was implicated in the first ring, and either its pair beside a host deemed healthy was slow or,
      implicated in both rings, it had a slow link to a host that was not;
    * the result depends only on what the target measured (never on a simulator's ground truth).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from collie.model.collective import LinkFigure, reference_gbs
from collie.model.flow import nic_address
from collie.targets.base import TargetInfo

#: Random orders tried for the second ring (the one with the fewest neighbours in common is kept).
ORDER_TRIES = 64


class RoundKind(Enum):
    """A round's pattern: a ring over its hosts in order, or pairs of consecutive hosts exchanging both ways."""

    RING = "ring"
    PAIRS = "pairs"


@dataclass(frozen=True)
class Round:
    """One round: the pattern's ranks in order (a ring's order, or pairs as consecutive hosts), what every link
    measured (GB/s), the round's reference link rate and its slow links (by name, ``h2->h3``)."""

    index: int
    kind: RoundKind
    order: tuple[str, ...]
    links: tuple[LinkFigure, ...]
    reference_gbs: float
    slow: tuple[str, ...]


@dataclass(frozen=True)
class Suspect:
    """A host localised as slow, with the links that show it (``round 1 (ring): h2->h3 at 48% of the reference
    22.91 GB/s``)."""

    host: str
    worst: float
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class FleetResult:
    """A fleet check: its rounds, its suspects (the worst first), the hosts it checked (their NICs, rail by rail,
    when it checked ``rails`` NICs of each host), and the slow links no suspect is an end of (``unexplained``, in
    the order the rounds measured them: the path between two healthy hosts is slow, a link between switches)."""

    hosts: tuple[str, ...]
    rounds: tuple[Round, ...]
    suspects: tuple[Suspect, ...]
    margin: float
    unexplained: tuple[str, ...] = ()
    rails: int = 1

    @property
    def all_pairs(self) -> int:
        """Experiments measuring every pair of hosts (of NICs of a rail) one by one would take."""
        n = len(self.hosts) // self.rails
        return self.rails * n * (n - 1) // 2

    @property
    def checked(self) -> str:
        """What it checked, in words: ``8 hosts``, or ``16 NICs (8 hosts x 2)``."""
        n = len(self.hosts)
        return f"{n} hosts" if self.rails == 1 else f"{n} NICs ({n // self.rails} hosts x {self.rails})"

    @property
    def flagged(self) -> bool:
        """Whether the check found anything: a suspect, or a slow link no suspect explains."""
        return bool(self.suspects or self.unexplained)

    @property
    def experiments(self) -> int:
        return len(self.rounds)

    def matrix(self) -> dict[tuple[str, str], float]:
        """GB/s of each measured (sender, receiver) pair of hosts, the lowest of its measurements."""
        out: dict[tuple[str, str], float] = {}
        for r in self.rounds:
            for link in r.links:
                key = (link.src, link.dst)
                out[key] = min(out.get(key, link.gbs), link.gbs)
        return out


@dataclass(frozen=True)
class FleetCheck:
    """A finished fleet check: where it ran (``target``, its fingerprint ``info``), the bytes per rank of each
    round, and its result."""

    target: str
    info: TargetInfo
    size: int
    result: FleetResult


#: What a check asks its target: run a pattern of ``kind`` over ``hosts`` in that order, return every link.
RunPattern = Callable[[RoundKind, tuple[str, ...]], tuple[LinkFigure, ...]]


def ring_orders(hosts: Sequence[str], seed: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The two rings' orders: the hosts as given, then a random order sharing as few ring neighbours with it as
    :data:`ORDER_TRIES` draws find (none, on fleets of more than a handful of hosts)."""
    first = tuple(hosts)
    n = len(first)
    near = {frozenset((first[i], first[(i + 1) % n])) for i in range(n)}
    rng = random.Random(seed)
    best, shared = first, n + 1
    for _ in range(ORDER_TRIES):
        order = list(first)
        rng.shuffle(order)
        common = sum(frozenset((order[i], order[(i + 1) % n])) in near for i in range(n))
        if common < shared:
            best, shared = tuple(order), common
            if not common:
                break
    return first, best


def check_fleet(run: RunPattern, hosts: Sequence[str], margin: float = 0.2, seed: int = 0) -> FleetResult:
    """Localise the slow hosts of ``hosts`` (see the module docstring).

    Args:
        run: runs one round's pattern and returns its links (:data:`RunPattern`).
        hosts: the fleet, at least 3 hosts (a ring of 2 is a pair).
        margin: a link below ``1 - margin`` x its round's reference is slow.
        seed: the second ring's order.

    Raises:
        ValueError: fewer than 3 hosts, or a margin outside (0, 1).
    """
    if len(hosts) < 3:
        raise ValueError(f"a fleet check needs at least 3 hosts, got {len(hosts)}")
    if not 0 < margin < 1:
        raise ValueError(f"margin must be in (0, 1), got {margin}")
    rank = {h: i for i, h in enumerate(hosts)}
    first, second = ring_orders(hosts, seed)
    rounds = [_round(1, RoundKind.RING, first, run(RoundKind.RING, first), margin)]
    if not rounds[0].slow:
        return FleetResult(tuple(hosts), tuple(rounds), (), margin)
    implicated = sorted(_implicated(rounds[0]), key=rank.__getitem__)
    cleared = [h for h in hosts if h not in implicated]
    if len(cleared) >= len(implicated):  # every implicated host beside a healthy one: settled in this round
        found = _confirm(run, rounds, implicated, cleared, margin, rank)
    else:
        rounds.append(_round(2, RoundKind.RING, second, run(RoundKind.RING, second), margin))
        candidates = [h for h in implicated if h in _implicated(rounds[1])]
        found = {c for c in candidates if any(h not in candidates for r in rounds for h in _peers(r, c))}
        unsure = [c for c in candidates if c not in found]
        healthy = [h for h in hosts if not any(h in _implicated(r) for r in rounds)]
        healthy += sorted((h for h in hosts if h not in healthy and h not in candidates),
                          key=lambda h: sum(h in _implicated(r) for r in rounds))
        while unsure and healthy:  # each round settles as many as there are healthy partners
            tried = unsure[:len(healthy)]
            slow = _confirm(run, rounds, tried, healthy, margin, rank)
            found |= slow
            healthy += [h for h in tried if h not in slow]
            unsure = unsure[len(tried):]
        found |= set(unsure)  # no healthy host left to tell them apart: every one is named
    suspects = sorted((_suspect(h, rounds) for h in found), key=lambda s: (s.worst, rank[s.host]))
    unexplained = dict.fromkeys(link.name for r in rounds for link in r.links
                                if link.name in r.slow and link.src not in found and link.dst not in found)
    return FleetResult(tuple(hosts), tuple(rounds), tuple(suspects), margin, tuple(unexplained))


def check_rails(run: RunPattern, hosts: Sequence[str], nics: int, margin: float = 0.2, seed: int = 0
                ) -> FleetResult:
    """Localise the slow NICs of ``hosts``, each with ``nics`` NICs: :func:`check_fleet` of each rail in turn (see
    the module docstring), its rounds numbered on from the rail before; :func:`check_fleet` itself when each host
    has one NIC.

    Raises:
        ValueError: as :func:`check_fleet`.
    """
    if nics == 1:
        return check_fleet(run, hosts, margin, seed)
    rails = [check_fleet(run, [nic_address(h, k) for h in hosts], margin, seed) for k in range(nics)]
    rounds: list[Round] = []
    for rail in rails:
        rounds += [replace(r, index=len(rounds) + i) for i, r in enumerate(rail.rounds, 1)]
    every = [h for rail in rails for h in rail.hosts]
    rank = {h: i for i, h in enumerate(every)}
    suspects = sorted((_suspect(s.host, rounds) for rail in rails for s in rail.suspects),
                      key=lambda s: (s.worst, rank[s.host]))
    return FleetResult(tuple(every), tuple(rounds), tuple(suspects), margin,
                       tuple(link for rail in rails for link in rail.unexplained), rails=nics)


def _confirm(run: RunPattern, rounds: list[Round], unsure: list[str], healthy: list[str], margin: float,
             rank: Mapping[str, int]) -> set[str]:
    """Run a round of pairs, each of ``unsure`` beside one of ``healthy`` (as many as there are: the nearest in
    the fleet's order not yet taken, likely behind the same switch where the order follows racks, so a slow host's
    congestion stays off the links between switches), the healthy hosts left paired among themselves in the
    fleet's order for the round's reference (the earlier rounds' when none are left); append it to ``rounds`` and
    return the hosts of ``unsure`` whose pair was slow."""
    free = sorted(healthy, key=rank.__getitem__)
    tried = unsure[:len(free)]
    partners = []
    for h in tried:
        nearest = min(free, key=lambda x: (abs(rank[x] - rank[h]), rank[x]))
        partners.append(nearest)
        free.remove(nearest)
    rest = free
    order = tuple(h for pair in zip(tried, partners, strict=True) for h in pair) + tuple(rest[:len(rest) // 2 * 2])
    links = run(RoundKind.PAIRS, order)
    fine = [link.gbs for link in links if link.src in rest and link.dst in rest]
    reference = reference_gbs(fine or [link.gbs for r in rounds for link in r.links])
    rounds.append(_round(len(rounds) + 1, RoundKind.PAIRS, order, links, margin, reference))
    return set(tried) & _implicated(rounds[-1])


def _round(index: int, kind: RoundKind, order: tuple[str, ...], links: tuple[LinkFigure, ...], margin: float,
           reference: float | None = None) -> Round:
    """A measured round: its reference (``reference`` instead when given) and slow links."""
    ref = reference if reference is not None else reference_gbs([link.gbs for link in links])
    slow = tuple(link.name for link in links if link.gbs < (1 - margin) * ref)
    return Round(index, kind, order, links, ref, slow)


def _implicated(r: Round) -> set[str]:
    """The hosts at an end of a slow link of round ``r``."""
    return {h for link in r.links if link.name in r.slow for h in (link.src, link.dst)}


def _peers(r: Round, host: str) -> set[str]:
    """The other ends of ``host``'s slow links in round ``r``."""
    return {link.dst if link.src == host else link.src for link in r.links
            if link.name in r.slow and host in (link.src, link.dst)}


def _suspect(host: str, rounds: list[Round]) -> Suspect:
    """A suspect with the slow links of its that each round measured."""
    evidence, worst = [], 1.0
    for r in rounds:
        for link in r.links:
            if link.name in r.slow and host in (link.src, link.dst):
                fraction = link.gbs / r.reference_gbs if r.reference_gbs > 0 else 0.0
                worst = min(worst, fraction)
                evidence.append(f"round {r.index} ({r.kind.value}): {link.name} at {fraction:.0%} of the reference "
                                f"{r.reference_gbs:.2f} GB/s")
    return Suspect(host, worst, tuple(evidence))
