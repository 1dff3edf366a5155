"""Shrinking the size pattern: a single size where one keeps the anomaly, the boundary it needs, its edges.

All-small, then all-large (then the sizes that set the pattern's tails); if no single size keeps the anomaly, a
mix is necessary (``size_mix == true``, or ``sizes >= 2`` for middling sizes). A single size off a power of two
moves to the nearest one that keeps the anomaly, else its tail is the condition: ``line_tail`` (bytes past the
last whole cache line) or ``tail_packet`` (the last packet's payload), each edge bisected on the offset from the
boundary, the case moved to the lower edge beside a power of two. Both ends of the single size are then checks
of the simplified case; a size edge found from a case of one size is told apart as ``max_msg`` or ``min_msg`` by
one probe with a message beyond it added.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from collie.mfs import Condition
from collie.minimize.policy import feature_at
from collie.model.dimensions import SizeVector
from collie.model.features import CACHE_LINE
from collie.model.space import SearchSpace
from collie.shrink import Shrinker, from_to, retreating


class Sizes:
    """The size moves of one minimization, on its shrinker."""

    def __init__(self, space: SearchSpace, shrink: Shrinker[Condition]) -> None:
        self.space = space
        self._shrink = shrink

    def _feature_at(self, point: Mapping[str, Any], feature: str) -> Any:
        return feature_at(self.space, point, feature)

    def shrink(self, d: SizeVector, current: dict[str, Any]) -> list[Condition]:
        """The conditions the size pattern ``d`` contributes; ``current`` moves to the simplest pattern that keeps
        the anomaly, and both ends of a single size join the shrinker's checks."""
        sizes = list(current[d.name])
        single: list[int] | None = sizes[:1]
        if len(set(sizes)) > 1:
            # the smallest, the largest, then the sizes that set the tails (line_tail, tail_packet)
            line, tail, mtu = (self._feature_at(current, f) for f in ("line_tail", "tail_packet", "mtu"))
            carriers = [s for s in sizes if line and s % CACHE_LINE == line][:1] \
                + [s for s in sizes if tail and s > mtu and s - (s - 1) // mtu * mtu == tail][:1]
            single = next(([s] for s in dict.fromkeys((min(sizes), max(sizes), *carriers))
                           if self._shrink.still({**current, d.name: [s]}, f"sizes -> {[s]}")), None)
        if single is None:
            mix = [min(sizes), max(sizes)]
            if self._shrink.still({**current, d.name: mix}, f"sizes -> {mix}"):
                current[d.name] = mix
            # the anomaly needs sizes of several kinds: a mix of small and large ones when the case has one,
            # else (sizes between SMALL_MSG and LARGE_MSG) just more than one size
            if self._feature_at(current, "size_mix"):
                return [Condition("size_mix", "==", True)]
            return [Condition("sizes", ">=", 2)]
        current[d.name] = single
        conditions, rungs = self._boundary(d, current)
        here = current[d.name][0]
        for end in (rungs[0], rungs[-1]):
            if end != here:
                check = retreating(d.name, [[e] for e in from_to(rungs, end, here)],
                                   lambda v: partial(self._size_edge, d, sizes, rungs, v[0]))
                # a smaller message clamps the SGEs (send and receive): grouped, it would hide their far sides
                self._shrink.far.append(dataclasses.replace(check, alone=end < here))
        return conditions

    def _boundary(self, d: SizeVector, current: dict[str, Any]) -> tuple[list[Condition], list[int]]:
        """The simplest single size near the current one that keeps the anomaly, the conditions on where it
        sits against a boundary, and the ladder its magnitude's edges are bisected on.

        A power of two stays (one under 64 B, all tail, unless a cache line more loses the anomaly). Otherwise
        the nearest power of two is tried, then the other one around the size; if both lose the anomaly, the
        size's tail decides: whole cache lines (the size rounded down to 64 B)
        keeping the anomaly frees ``line_tail`` and a whole last packet frees ``tail_packet``; a tail that is
        necessary is bisected on its offset from the boundary (:meth:`_tail`), and the magnitude is then the
        power of two nearest the boundary, the tail added, on a ladder of powers of two plus that tail."""
        still = self._shrink.still
        v = current[d.name][0]
        rounds = [1 << e for e in range((d.lo - 1).bit_length(), d.hi.bit_length())]
        if v not in rounds:
            below = d.nearest_round(1 << (v.bit_length() - 1))
            near = d.nearest_round(v)
            for r in dict.fromkeys((near, below if near != below else d.nearest_round(2 * below))):
                if still({**current, d.name: [r]}, f"sizes -> {[r]} (round)"):
                    current[d.name], v = [r], r
                    break
        if v in rounds:
            # a round size under a cache line is all tail: one line more tells a small message from its tail
            if v >= CACHE_LINE or not still({**current, d.name: [v + CACHE_LINE]},
                                            f"sizes -> {[v + CACHE_LINE]} (the same line tail, a line more)"):
                return [], rounds
            current[d.name], v = [v + CACHE_LINE], v + CACHE_LINE
        mtu = self._feature_at(current, "mtu")
        if v % CACHE_LINE:
            whole = max(CACHE_LINE, v - v % CACHE_LINE)
            if not still({**current, d.name: [whole]}, f"sizes -> {[whole]} (whole cache lines)"):
                # line_tail, unless the last packet's payload is what matters: the same line tail in a last
                # packet of another length tells them apart
                tail = self._feature_at(current, "tail_packet")
                other = v - tail + v % CACHE_LINE + (0 if tail > mtu - CACHE_LINE else mtu - CACHE_LINE)
                if not tail or still({**current, d.name: [other]},
                                     f"sizes -> {[other]} (the same line tail, another last packet)"):
                    return self._tail(d, "line_tail", CACHE_LINE, CACHE_LINE - 1, current)
                return self._tail(d, "tail_packet", mtu, mtu, current)
            current[d.name], v = [whole], whole
        tail = self._feature_at(current, "tail_packet")
        if tail and tail != mtu:
            whole = v - tail + mtu
            if not still({**current, d.name: [whole]}, f"sizes -> {[whole]} (whole last packet)"):
                return self._tail(d, "tail_packet", mtu, mtu, current)
            current[d.name], v = [whole], whole
        return [], sorted({*rounds, v})

    def _tail(self, d: SizeVector, feature: str, unit: int, top: int, current: dict[str, Any]
              ) -> tuple[list[Condition], list[int]]:
        """Conditions on ``feature``, the size's offset ``o`` from a multiple of ``unit`` (1..``top``), which the
        anomaly needs: ``feature >= lower`` and, when the offset ``top`` loses it, ``feature <= upper``, each edge
        bisected on the offset. The case moves to the lower edge on the power of two nearest its boundary."""
        v = current[d.name][0]
        offset = self._feature_at(current, feature)
        base = v - offset

        def kept(o: int, why: str, recheck: bool = False) -> bool:
            return self._shrink.test({**current, d.name: [base + o]}, f"sizes -> {[base + o]} ({why})",
                                     recheck=recheck) is True

        lower = offset
        if offset > 1 and kept(1, f"{feature} -> 1", recheck=True):
            lower = 1
        elif offset > 1:
            lower = _offset_edge(1, offset, kept, feature)
        conditions = [Condition(feature, ">=", lower)]
        if offset < top and not kept(top, f"{feature} -> {top}", recheck=True):
            conditions.append(Condition(feature, "<=", _offset_edge(top, offset, kept, feature)))
        current[d.name] = [base + lower]
        if base and base & (base - 1):
            # the boundary's magnitude: the nearest power of two (a multiple of the unit), then the other one
            below = 1 << (base.bit_length() - 1)
            for p in dict.fromkeys((d.nearest_round(base), below, 2 * below)):
                if p + lower <= d.hi and self._shrink.still({**current, d.name: [p + lower]},
                                                            f"sizes -> {[p + lower]} (round boundary)"):
                    current[d.name] = [p + lower]
                    break
        rounds = [p + lower for p in (1 << e for e in range(unit.bit_length() - 1, d.hi.bit_length()))
                  if p + lower <= d.hi]
        return conditions, sorted({*rounds, current[d.name][0]})

    def _size_edge(self, d: SizeVector, sizes: list[int], rungs: list[int], end: int, current: dict[str, Any]
                   ) -> list[Condition]:
        """The edge between the current single size (anomalous) and ``end`` (not), as a condition, bisected on
        ``rungs``.

        When the original pattern ``sizes`` held no message as far out as ``end`` (which the anomaly lost), it may
        hold none beyond the edge either, and then cannot tell whether the anomaly needs every message on this
        side of the edge or only one: one probe of the case with a message of ``end`` size added decides (kept:
        only the largest, or smallest, message matters). Messages between ``end`` and the case's size do not
        decide it, since the edge may lie below them (a pattern of 185 KiB to 2 MiB READs whose edge is 16 KiB)."""
        v = current[d.name][0]
        lower = end < v
        pattern = list(sizes)
        if (min(sizes) > end) if lower else (max(sizes) < end):
            mix = sorted([end, v])
            if self._shrink.test({**current, d.name: mix}, f"sizes -> {mix} (one message beyond)", recheck=False):
                pattern.append(end)
        return self._shrink.bisect(d.name, [[e] for e in rungs], [end], [v], current,
                                   partial(_size_condition, pattern, lower))[1]


def _offset_edge(bad: int, good: int, kept: Callable[[int, str], bool], feature: str) -> int:
    """The offset nearest ``bad`` (lost the anomaly) that keeps it, bisected down from ``good`` (kept)."""
    while abs(good - bad) > 1:
        mid = (bad + good) // 2
        if kept(mid, f"{feature} -> {mid} (bisect)"):
            good = mid
        else:
            bad = mid
    return good


def _size_condition(sizes: list[int], lower: bool, edge: list[int], case: Mapping[str, Any]) -> list[Condition]:
    """The condition of a single-size edge (a ``lower`` one: the anomaly needs messages of ``edge[0]`` or more).

    The original pattern ``sizes`` was anomalous: if it held sizes beyond the edge, only its largest (for a lower
    edge) or smallest (for an upper edge) message can be what the anomaly needs."""
    value = int(edge[0])
    if lower:
        return [Condition("max_msg" if min(sizes) < value else "min_msg", ">=", value)]
    return [Condition("min_msg" if max(sizes) > value else "max_msg", "<=", value)]
