"""Water-filling: how shared resources split their capacity among the flows that use them (max-min, each in its
own units), the simulator's rule for every resource it models (a host's wire, packet rate, PCIe, a switch's
links)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, Protocol


class Shared(Protocol):
    """A flow as water-filling sees it: its rate (requests/s; on entry what it gets alone) and the resources it
    uses, each with its usage per request."""

    rate: float
    uses: list[tuple[int, float]]


#: Rounds of :func:`fair_shares` before it settles for a proportional cut (a handful reach the fixed point).
SHARE_ROUNDS: Final = 8


def fill_level(cap: float, demands: list[float]) -> float:
    """The water level of max-min sharing ``cap`` among ``demands`` (each gets ``min(demand, level)``, the
    shares add up to ``cap``); infinite when the demands fit."""
    if sum(demands) <= cap * 1.000001:
        return math.inf
    left, n = cap, len(demands)
    for d in sorted(demands):
        if d * n > left:
            return left / n
        left -= d
        n -= 1
    return math.inf  # not reached: the demands do not fit


def fair_shares(calcs: Sequence[Shared], caps: list[float]) -> list[float]:
    """Cut the flows' rates (each at what it would get alone) to each resource's fair shares; return each
    resource's load at the rates it leaves (:func:`loads`).

    A shared resource serves its flows round-robin, a packet (or byte) each, so it shares its capacity max-min in
    its own units: a flow that asks less than an equal share gets all it asks, the others split the rest equally.
    A flow that uses a congested resource lightly (its atomics' 8 B reads against a saturated PCIe read direction)
    is not held by it. Each flow's demand on a resource is its rate as every *other* resource allows it; rounds
    over the resources, each seeing the bounds the ones before it set (Gauss-Seidel, from no bound), reach the
    fixed point: the rates.

    Invariants: no rate rises above what the flow gets alone; no resource ends over its capacity (after
    ``SHARE_ROUNDS`` rounds without a fixed point, every over-subscribed resource's flows are cut in proportion).
    """
    load = loads(calcs, len(caps))
    # rates never rise above what the flows get alone, so only a resource over-subscribed at those can bind
    over = {k for k, (ld, cap) in enumerate(zip(load, caps, strict=True)) if ld > cap * 1.000001}
    if not over:
        return load
    alone = [c.rate for c in calcs]
    use: dict[int, dict[int, float]] = {}  # resource -> {flow: its usage per request}
    for i, c in enumerate(calcs):
        for k, v in c.uses:
            if k in over:
                on = use.setdefault(k, {})
                on[i] = on.get(i, 0.0) + v
    users = {k: list(on.items()) for k, on in use.items()}
    bound: list[dict[int, float]] = [{} for _ in calcs]  # flow -> {resource: the rate it allows the flow}
    settled = False
    for _ in range(SHARE_ROUNDS):
        settled = True
        for k, us in users.items():  # Gauss-Seidel: each resource sees the bounds the ones before it set
            wants = [v * min([alone[i], *[r for kk, r in bound[i].items() if kk != k]]) for i, v in us]
            level = fill_level(caps[k], wants)
            for (i, v), want in zip(us, wants, strict=True):
                was = bound[i].get(k)
                if want > level:
                    now = bound[i][k] = level / v
                    settled = settled and was is not None and abs(now - was) <= 1e-9 * was
                elif was is not None:
                    del bound[i][k]
                    settled = False
        if settled:
            break
    for i, c in enumerate(calcs):
        c.rate = min([alone[i], *bound[i].values()])
    if not settled:  # no fixed point: whatever is still over its capacity cuts its flows in proportion
        load = loads(calcs, len(caps))
        for c in calcs:
            c.rate *= min([1.0, *[caps[k] / load[k] for k, _ in c.uses if load[k] > caps[k]]])
    return loads(calcs, len(caps))


def loads(calcs: Sequence[Shared], n: int) -> list[float]:
    """Each resource's load at the flows' rates, the flows' shares added in flow order."""
    load = [0.0] * n
    for c in calcs:
        r = c.rate
        for k, v in c.uses:
            load[k] += v * r
    return load
