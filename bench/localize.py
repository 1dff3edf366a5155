"""Localising slow hosts of simulated fleets: collie's fleet check beside the published two-round pairing scheme.

For each fleet size and each number of injected faults (0, 1, 2; each of a random kind and host), over many
random draws, runs

* **collie** (:func:`collie.fleet.check_fleet`): two rings, then one confirmation round of pairs if needed;
* **two-round pairing** (DLRover's straggler detection, as published: pair the hosts and time each pair; re-pair
  the hosts of slow pairs with hosts of fast ones and time again; a host slow in both rounds is a straggler):
  pairs exchange traffic both ways, a pair is slow when its slower link is below ``1 - margin`` x the round's
  median, the same margin as collie's.

and prints per fleet and method: the fraction of draws localised exactly (suspects == the faulty hosts), the
hosts wrongly named per draw, rounds (= experiments: every round is one experiment over the whole fleet) against
all pairs one by one, and the CPU time per draw.

    PYTHONPATH=. python bench/localize.py --sizes 8,32,128 --draws 40
    PYTHONPATH=. python bench/localize.py --sizes 1024 --draws 4

Fault kinds and factors (each slows a 200G host's links well past the 20 % margin): a port at half speed, PCIe at
a quarter (Gen3 x8 in a Gen4 x16 fleet), buffers on the far NUMA node at half the PCIe bandwidth, a link losing
1 % of its packets (RC's go-back-N makes that a quarter of the rate), a link up 70 % of the time (three outages of
0.1 s a second, each followed by RC's 67 ms timeout: half the rate).

With ``--fabric HOSTS_PER_LEAF`` the fleets sit on a non-blocking leaf-spine fabric with PFC, and a fleet of more
than one leaf gets a row ``link`` too: one link between a random leaf and spine at a tenth of its speed per draw,
every host healthy; "exact" is then naming no host and at least one slow path between healthy hosts (collie), or
naming no host (the pairing scheme, which names hosts only).

    PYTHONPATH=. python bench/localize.py --sizes 8,32,128 --draws 40 --fabric 8

With ``--nics N`` every host has N NICs sharing one PCIe slot (``fleet8-cx6-2port``'s 239.5 Gb/s each way), the
faults fall on random NICs, and collie checks rail by rail (:func:`collie.fleet.check_rails`); beside it a row
``collie, one ring`` checks every NIC of the fleet at once, as a fleet of hosts (the pairing scheme too), where
the shared slot holds every NIC of a busy host below its line rate.

    PYTHONPATH=. python bench/localize.py --sizes 8,32 --draws 40 --nics 2
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

from collie.fleet import RoundKind, check_fleet, check_rails
from collie.model.collective import LinkFigure, collective
from collie.model.flow import Endpoint, Flow, nic_address
from collie.model.patterns import Pattern, PatternKind
from collie.model.workload import Workload
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.profile import Fabric, Fault, FaultKind, Profile, host_names

FLOW = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20, qps=2)
FACTORS = {FaultKind.PORT_SPEED: 0.5, FaultKind.PCIE: 0.25, FaultKind.FAR_NUMA: 0.5, FaultKind.LOSSY_LINK: 0.99,
           FaultKind.FLAPPING_LINK: 0.7}
MARGIN = 0.2


def runner(target: SimTarget, size: int) -> Callable[[RoundKind, tuple[str, ...]], tuple[LinkFigure, ...]]:
    def run(kind: RoundKind, order: tuple[str, ...]) -> tuple[LinkFigure, ...]:
        pk = PatternKind.RING_ALLREDUCE if kind is RoundKind.RING else PatternKind.PAIRWISE
        p = Pattern(pk, order, size, flow=FLOW)
        return collective(p, target.run(Workload.of_pattern(p), 1.0).flows).links
    return run


def two_round_pairing(run: Callable[[RoundKind, tuple[str, ...]], tuple[LinkFigure, ...]], hosts: list[str],
                      rng: random.Random) -> tuple[set[str], int]:
    """DLRover's scheme (see the module docstring): the hosts slow in both rounds, and the rounds used."""
    order = hosts[:]
    rng.shuffle(order)
    if len(order) % 2:
        order = order[:-1]

    def slow_hosts(pairs: list[str]) -> set[str]:
        links = run(RoundKind.PAIRS, tuple(pairs))
        median = statistics.median(link.gbs for link in links)
        worst: dict[frozenset[str], float] = {}
        for link in links:
            key = frozenset((link.src, link.dst))
            worst[key] = min(worst.get(key, link.gbs), link.gbs)
        return {h for pair, gbs in worst.items() if gbs < (1 - MARGIN) * median for h in pair}

    first = slow_hosts(order)
    if not first:
        return set(), 1
    fast = [h for h in order if h not in first]
    slow = [h for h in order if h in first]
    pairs: list[str] = []
    for i, h in enumerate(slow):  # each slow host beside a fast one (fast hosts reused if too few)
        pairs += [h, fast[i % len(fast)]] if fast else [h, slow[(i + 1) % len(slow)]]
    used = set(pairs)
    pairs += [h for h in fast if h not in used][:len([h for h in fast if h not in used]) // 2 * 2]
    if len(set(pairs)) < len(pairs):  # a fast host reused: run the re-pairing in as many rounds as needed
        second: set[str] = set()
        rounds = 1
        for k in range(0, len(slow), max(1, len(fast))):
            chunk = slow[k:k + max(1, len(fast))]
            sub = [x for i, h in enumerate(chunk) for x in (h, fast[i % len(fast)] if fast else h)]
            second |= slow_hosts(sub)
            rounds += 1
        return first & second, rounds
    return first & slow_hosts(pairs), 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="8,32,128")
    ap.add_argument("--draws", type=int, default=40)
    ap.add_argument("--size", type=int, default=64 << 20, help="bytes per rank")
    ap.add_argument("--fabric", type=int, default=0, metavar="HOSTS_PER_LEAF",
                    help="put the fleet on a non-blocking leaf-spine fabric with PFC, this many hosts per leaf "
                         "(spines of 400 Gb/s uplinks, half as many as hosts per leaf); 0: one ideal switch")
    ap.add_argument("--nics", type=int, default=1, help="NICs per host, sharing one PCIe slot; 1: one NIC a host")
    args = ap.parse_args()
    base = load_profile("fleet8-cx6")
    if args.nics > 1:
        slot = load_profile("fleet8-cx6-2port").host.shared_pcie_gbps
        base = replace(base, host=replace(base.host, nics=args.nics, shared_pcie_gbps=slot))
    if args.fabric:
        base = replace(base, fabric=Fabric(args.fabric, max(1, args.fabric // 2), 400.0, True, 256.0))
    print(f"{'hosts':>5} {'faults':>6} {'method':<18} {'exact':>7} {'wrong/draw':>10} {'rounds':>6} "
          f"{'all pairs':>9} {'CPU s/draw':>10}")
    for n in (int(x) for x in args.sizes.split(",")):
        hosts = list(host_names(n))
        nics = [nic_address(h, k) for h in hosts for k in range(args.nics)]  # every NIC (the hosts: one each)
        pairs = args.nics * n * (n - 1) // 2
        for nfaults in (0, 1, 2):
            stats: dict[str, list[tuple[bool, int, int, float]]] = {"collie": [], "two-round pairing": []}
            if args.nics > 1:
                stats["collie, one ring"] = []
            for draw in range(args.draws):
                rng = random.Random(f"{n}-{nfaults}-{draw}")
                bad = rng.sample(nics, nfaults)
                faults = tuple(Fault(h, kind, FACTORS[kind])
                               for h, kind in zip(bad, (rng.choice(list(FACTORS)) for _ in bad), strict=True))
                target = SimTarget(replace(base, hosts=tuple(hosts), faults=faults), seed=draw)
                run = runner(target, args.size)
                t0 = time.process_time()
                result = check_rails(run, hosts, args.nics, MARGIN, seed=draw)
                t1 = time.process_time()
                named = {s.host for s in result.suspects}
                stats["collie"].append((named == set(bad), len(named - set(bad)), result.experiments, t1 - t0))
                if args.nics > 1:
                    t0 = time.process_time()
                    result = check_fleet(run, nics, MARGIN, seed=draw)
                    named = {s.host for s in result.suspects}
                    stats["collie, one ring"].append((named == set(bad), len(named - set(bad)), result.experiments,
                                                      time.process_time() - t0))
                t0 = time.process_time()
                named, rounds = two_round_pairing(run, nics, rng)
                t1 = time.process_time()
                stats["two-round pairing"].append((named == set(bad), len(named - set(bad)), rounds, t1 - t0))
            for method, rows in stats.items():
                exact = sum(r[0] for r in rows) / len(rows)
                print(f"{n:>5} {nfaults:>6} {method:<18} {exact:>7.1%} {statistics.mean(r[1] for r in rows):>10.2f} "
                      f"{statistics.mean(r[2] for r in rows):>6.2f} {pairs:>9} "
                      f"{statistics.mean(r[3] for r in rows):>10.2f}", flush=True)
        if base.fabric is not None and n > base.fabric.hosts_per_leaf:
            slow_link(base, hosts, args)


def slow_link(base: Profile, hosts: list[str], args: argparse.Namespace) -> None:
    """One slow link between a leaf and a spine per draw (a tenth of its speed), every host healthy: "exact" is a
    check that names no host and at least one slow path between healthy hosts (collie), or names no host (the
    pairing scheme, which cannot name a path)."""
    fabric = base.fabric
    assert fabric is not None
    leaves, n = -(-len(hosts) // fabric.hosts_per_leaf), len(hosts)
    stats: dict[str, list[tuple[bool, int, int]]] = {"collie": [], "two-round pairing": []}
    for draw in range(args.draws):
        rng = random.Random(f"{n}-link-{draw}")
        slow = ((rng.randrange(leaves), rng.randrange(fabric.spines), 0.1),)
        target = SimTarget(replace(base, hosts=tuple(hosts), fabric=replace(fabric, slow_links=slow)), seed=draw)
        run = runner(target, args.size)
        result = check_fleet(run, hosts, MARGIN, seed=draw)
        stats["collie"].append((not result.suspects and bool(result.unexplained), len(result.suspects),
                                result.experiments))
        named, rounds = two_round_pairing(run, hosts, rng)
        stats["two-round pairing"].append((not named, len(named), rounds))
    for method, rows in stats.items():
        exact = sum(r[0] for r in rows) / len(rows)
        print(f"{n:>5} {'link':>6} {method:<18} {exact:>7.1%} {statistics.mean(r[1] for r in rows):>10.2f} "
              f"{statistics.mean(r[2] for r in rows):>6.2f} {n * (n - 1) // 2:>9} {'':>10}", flush=True)


if __name__ == "__main__":
    main()
