"""Shrinking a point of a space while it keeps a property, in the way of Hypothesis's shrinker: the general part.

Nothing here knows what the dimensions mean (the RDMA policy, which dimension goes first, what an edge says in
feature terms, how a verb splits into halves, lives in :mod:`collie.minimize`). A :class:`Shrinker` only sees what
a run of a point showed (:class:`Seen`, ``None`` = the point could not run) and offers the moves a policy
composes:

* :meth:`Shrinker.test`: one probe with the *recheck rule*: a probe that loses the property is run once more
  unless it missed the threshold by more than ``recheck_margin`` (a clear loss) or ``recheck=False`` (a grouped
  probe, which only decides a split; a bisection step); a single probe of a point a grouped probe saw lose
  counts that run as its first. A point that lost twice, or once clearly, is *settled*: never run again. A point
  that ``explained`` holds is never run and cannot be tested (read as masked); so is an illegal one.
* :meth:`Shrinker.group`: adaptive group testing (ddmin-like): one probe moves a group of dimensions to their
  simplest values at once, split in halves when it loses, down to single dimensions.
* :meth:`Shrinker.bisect`: the edge between a value that lost and one that kept, on a ladder of values, with one
  *refine* probe between integer neighbours more than :data:`REFINE_RATIO` apart. In a deferred run
  (:attr:`Shrinker.defer`) an edge gets ``search_bisect_steps`` steps; one still open stands at the wide end of
  its bracket until :meth:`Shrinker.finish_edges`; :meth:`Shrinker.open_cost` bounds what finishing costs.
* :attr:`Shrinker.far`: *checks* of the simplified case (:class:`Check`), probed in groups by
  :meth:`Shrinker.check_far` once every dimension is simplified: one check per dimension in a group, a check
  ``alone`` in its own, one that moves to a settled point yields its conditions without a probe. A single check
  that cannot be tested falls back to the next of its values that can; one that ``explained`` holds, or whose
  values none can be tested, yields its conditions: a side not probed is not left free.
* :meth:`Shrinker.confirm`: ``required`` of ``runs`` runs of the final case keep the property.

The shrinker is generic in the conditions (``C``) a policy makes of what it finds; it compares them, nothing more.
The probe budget is the caller's: a probe may raise (a spent budget), which leaves what was not done undone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar

from collie.model.dimensions import Choice, Dimension, IntRange
from collie.model.points import point_key

#: What a policy makes of an edge or a lost check: the shrinker only compares them.
C = TypeVar("C")
#: Neighbouring ladder values at least this ratio apart get one more probe between them (``refine``).
REFINE_RATIO: Final = 1.25


@dataclass(frozen=True)
class MinimizeSettings:
    """Preset ``[minimize]`` table."""

    runs: int = 3
    required: int = 2
    bisect_steps: int = 5
    far_side: bool = True
    recheck: bool = True
    refine: bool = True
    #: a run whose reading of the anomaly's symptom misses its threshold by more than this fraction lost the
    #: anomaly clearly: it is not rechecked (noise near a threshold is what a recheck guards against)
    recheck_margin: float = 0.1
    #: bisection steps an edge takes when the anomaly is found, in a deferred run (the rest of ``bisect_steps``
    #: and the refine probe wait for :meth:`Shrinker.finish_edges`)
    search_bisect_steps: int = 2


@dataclass(frozen=True)
class Seen:
    """What one run of a point showed of the property the shrinker keeps."""

    #: the property held
    kept: bool
    #: its symptom showed, behind a stronger one of something else (masked: the run decides nothing)
    shows: bool = False
    #: the reading of its symptom against the threshold (1.0 = at it); None: no reading
    level: float | None = None


class Space(Protocol):
    """What the shrinker asks of a space: whether a point is legal, and a dimension by name."""

    def is_valid(self, point: Mapping[str, Any]) -> bool: ...

    def dimension(self, name: str) -> Dimension: ...


@dataclass(frozen=True)
class OpenEdge(Generic[C]):
    """An edge a deferred run left open: ``values[lo]`` lost the property, ``values[hi]`` kept it.

    ``steps`` bisection steps are left; ``make(edge, case)`` gives its conditions, ``wide`` those standing in
    until it is finished."""

    name: str
    values: tuple[Any, ...]
    lo: int
    hi: int
    steps: int
    make: Callable[[Any, Mapping[str, Any]], list[C]]
    #: a refine probe may follow the bisection
    refine: bool
    wide: tuple[C, ...]
    #: the case sits at the edge's value (an edge found from the simplest value), so finishing moves it there
    places_case: bool = False

    def cost(self) -> int:
        """At most how many probes finishing takes (the bisection steps left, and the refine probe)."""
        return min(self.steps, math.ceil(math.log2(abs(self.hi - self.lo)))) + int(self.refine)


@dataclass(frozen=True)
class Check(Generic[C]):
    """A move of the simplified case along one dimension (``name`` to ``value``) that should keep the property;
    ``lost(current)`` gives the conditions it implies when it does not (bisecting an edge if needed)."""

    name: str
    value: Any
    lost: Callable[[dict[str, Any]], list[C]]
    #: probed on its own: a move grouped with others can slip onto something else with the same symptom
    alone: bool = False
    #: the same move to values nearer the case, the first legal one probed alone when ``value`` is illegal
    fallbacks: tuple[Check[C], ...] = ()


class Shrinker(Generic[C]):
    """The probes, their bookkeeping and the general moves of one shrink (see the module docstring)."""

    def __init__(self, space: Space, judge: Callable[[Mapping[str, Any]], Seen | None],
                 settings: MinimizeSettings, explained: Callable[[Mapping[str, Any]], bool]) -> None:
        self.space = space
        self._judge = judge
        self.settings = settings
        # points something else already known explains: never run, read as masked
        self._explained = explained
        self.experiments = 0
        self.steps: list[dict[str, Any]] = []
        #: checks of the simplified case still to be probed, in groups, once every dimension is simplified
        self.far: list[Check[C]] = []
        #: edges left open (a deferred run), for :meth:`finish_edges`
        self.open: list[OpenEdge[C]] = []
        #: whether edges take only ``search_bisect_steps`` steps now (see :meth:`bisect`)
        self.defer = False
        # points a probe saw without the property (an unrechecked probe: once), and those seen so twice
        self._vanished: set[str] = set()
        self._lost: set[str] = set()
        # points whose last run showed the property's symptom, but behind a stronger one of something else
        self._masked: set[str] = set()

    def test(self, point: Mapping[str, Any], why: str, recheck: bool = True) -> bool | None:
        """True: the property survives at ``point``; False: it vanished; None: ``point`` cannot be tested
        (illegal in the space, or the target could not run it). ``recheck=False`` for probes whose "vanished"
        decides nothing on its own (a bisection step, a grouped probe that is split next)."""
        if not self.space.is_valid(point):
            return None
        recheck = recheck and self.settings.recheck
        key = point_key(point)
        if key in self._lost:
            return False  # settled: vanished in a probe and its recheck
        if self._explained(point):
            # something known of the same symptom explains whatever runs there: it decides nothing about this
            # one, so it is not run and cannot be tested (a verb half reads it as masked: the next alternative
            # decides); the case never moves there
            self._masked.add(key)
            self.steps.append({"why": f"{why} (a known anomaly's region)", "kept": None, "point": dict(point),
                               "runs": 0})
            return None
        if not recheck and key in self._vanished:
            return False  # seen without the property, and one run is all this probe would have had
        # a grouped probe of this very point already saw the property vanish: this run is its recheck
        seen = int(recheck and key in self._vanished)
        runs = 0
        kept: bool | None = False
        clear = False
        last: Seen | None = None
        while kept is False and not clear and seen + runs < (2 if recheck else 1):
            # "vanished" makes a feature necessary: a second run guards against noise near a threshold
            runs += 1
            last = self._judge(point)
            kept = None if last is None else last.kept
            clear = last is not None and last.level is not None \
                and last.level * (1.0 + self.settings.recheck_margin) < 1.0
        self.experiments += runs
        if kept is False and last is not None and last.shows:
            self._masked.add(key)
        if kept is False:
            self._vanished.add(key)
            if seen + runs >= 2 or clear:
                self._lost.add(key)
        self.steps.append({"why": why, "kept": kept, "point": dict(point), "runs": runs})
        return kept

    def still(self, point: Mapping[str, Any], why: str) -> bool:
        """Whether the property survives at ``point`` (a rechecked :meth:`test`)."""
        return self.test(point, why) is True

    def gone(self, point: Mapping[str, Any], why: str) -> bool:
        """Whether the property vanished at ``point`` (a rechecked :meth:`test`; untestable is not gone)."""
        return self.test(point, why) is False

    def settled(self, point: Mapping[str, Any]) -> bool:
        """Whether ``point`` lost the property for good (twice, or once clearly): it is never run again."""
        return point_key(point) in self._lost

    def vanished(self, point: Mapping[str, Any]) -> bool:
        """Whether a run of ``point`` was seen without the property (once is enough: a loss not yet rechecked)."""
        return point_key(point) in self._vanished

    def masked(self, point: Mapping[str, Any]) -> bool:
        """Whether the last run of ``point`` showed the symptom behind another (or something known explains it)."""
        return point_key(point) in self._masked

    def simplified(self, d: Dimension, current: dict[str, Any]) -> bool | None:
        """Whether ``d`` at its simplest value keeps the property (``current`` moves there; True too when it is
        there already); None when that probe could not run."""
        if current[d.name] == d.simplest():
            return True
        kept = self.test({**current, d.name: d.simplest()}, f"{d.name} -> {d.simplest()}")
        if kept:
            current[d.name] = d.simplest()
        return kept

    def group(self, group: list[Dimension], current: dict[str, Any],
              single: Callable[[Dimension], list[C]]) -> list[C]:
        """Simplify the dimensions of ``group`` by adaptive group testing (ddmin-like).

        One probe moves every dimension of the group that is not at its simplest value there at once; if the
        property survives, all of them are adopted (one experiment instead of one per dimension); if it vanishes
        or the point is illegal, the group is split in halves and each half is tried in turn. A single
        dimension goes to ``single`` (the policy's: necessity with a recheck, then its edge), and so does each
        dimension once adopted or already simplest. With ``k`` necessary dimensions of ``n`` this costs about
        ``k log2(n / k)`` probes plus ``k`` singles.
        """
        conditions: list[C] = []
        pending = []
        for d in group:
            if current[d.name] == d.simplest():
                conditions += single(d)  # no probe: only its far side
            else:
                pending.append(d)
        if len(pending) <= 1:
            return conditions + [c for d in pending for c in single(d)]
        trial = {**current, **{d.name: d.simplest() for d in pending}}
        why = ", ".join(f"{d.name} -> {d.simplest()}" for d in pending)
        if self.test(trial, why, recheck=False):
            current.update(trial)
            return conditions + [c for d in pending for c in single(d)]
        mid = len(pending) // 2
        conditions += self.group(pending[:mid], current, single)
        return conditions + self.group(pending[mid:], current, single)

    def check_far(self, current: dict[str, Any]) -> list[C]:
        """The conditions of the checks of :attr:`far` that lose the property at ``current``, probed in layers:
        a layer holds one check per dimension (a dimension may have several: both ends of a size), a check
        ``alone`` a layer of its own; a check that moves to a settled point yields its conditions unprobed."""
        conditions: list[C] = []
        layers: list[list[Check[C]]] = []
        for check in self.far:
            if self.settled({**current, check.name: check.value}):
                conditions += check.lost(current)  # known to lose the property: no group would keep it
                continue
            layer = None if check.alone else next(
                (g for g in layers if not g[0].alone and all(c.name != check.name for c in g)), None)
            if layer is None:
                layers.append(layer := [])
            layer.append(check)
        for layer in layers:
            conditions += self._far_sides(layer, current)
        return conditions

    def _far_sides(self, group: list[Check[C]], current: dict[str, Any]) -> list[C]:
        """Checks of the simplified case, grouped: one probe applies every move of ``group`` at once.

        If the property survives, none of the moves loses it (one experiment instead of one per move); if it
        vanishes or the grouped point is illegal, the group is split in halves. A single move that loses the
        property (with a recheck) yields its conditions: the edge between here and there, bisected; so does one
        that ``explained`` holds, or one none of whose values (it and its fallbacks) can be tested.
        """
        if not group:
            return []
        if len(group) == 1:
            # the farthest value of a single move that can run decides (a message larger than its MR cannot run
            # at all, a device takes no more SGEs than its own maximum); one that a known anomaly explains reads
            # as a loss, and so does a side where nothing can run: a side not probed is not left free
            check = group[0]
            for check in (group[0], *group[0].fallbacks):
                trial = {**current, check.name: check.value}
                kept = self.test(trial, f"{check.name} -> {check.value} (far side)")
                if kept is not None or self.masked(trial):
                    break
            return [] if kept else check.lost(current)
        trial = {**current, **{c.name: c.value for c in group}}
        why = ", ".join(f"{c.name} -> {c.value}" for c in group) + " (far side)"
        if self.test(trial, why, recheck=False):
            return []
        mid = len(group) // 2
        return self._far_sides(group[:mid], current) + self._far_sides(group[mid:], current)

    def confirm(self, point: Mapping[str, Any]) -> bool:
        """``required`` of ``runs`` runs of ``point`` keep the property; a probe that already kept it counts as
        one."""
        seen = any(s["kept"] is True and s["point"] == point for s in self.steps)
        hits = int(seen)
        for i in range(int(seen), self.settings.runs):
            hits += self.still(point, f"confirm {i + 1}/{self.settings.runs}")
            if hits >= self.settings.required:
                return True
            if hits + self.settings.runs - i - 1 < self.settings.required:
                return False
        return hits >= self.settings.required

    def bisect(self, name: str, values: list[Any], bad: Any, good: Any, current: dict[str, Any],
               make: Callable[[Any, Mapping[str, Any]], list[C]], places_case: bool = False
               ) -> tuple[Any, list[C]]:
        """The edge between ``bad`` (the property vanished there) and ``good`` (it held) on ``values``: the
        value nearest ``bad`` that still holds it, and its conditions, ``make(edge, case)``.

        In a deferred run an edge takes ``search_bisect_steps`` steps; if it is still open, its conditions are
        those of the wide end (the ladder value next to the last one that lost the property) until
        :meth:`finish_edges`, and the value returned is the last one that kept it. ``places_case``: the caller
        puts the case at the value returned, so :meth:`finish_edges` moves the case to the finished edge.
        """
        lo, hi = nearest_index(values, bad), nearest_index(values, good)
        steps = self.settings.bisect_steps
        if self.defer:
            taken = min(self.settings.search_bisect_steps, steps)
            lo, hi = self._narrow(name, values, lo, hi, taken, current)
            refine = self._refinable(name, values[lo], values[hi]) if abs(hi - lo) == 1 else \
                self.settings.refine and isinstance(self.space.dimension(name), IntRange)
            wide = tuple(make(values[lo + (1 if hi > lo else -1)] if abs(hi - lo) > 1 else values[hi], current))
            edge = OpenEdge(name, tuple(values), lo, hi, steps - taken, make, refine, wide, places_case)
            if edge.cost() and wide:  # an edge without a condition only places the case: nothing to finish
                self.open.append(edge)
                return values[hi], list(wide)
            return values[hi], make(values[hi], current)
        lo, hi = self._narrow(name, values, lo, hi, steps, current)
        edge_value = self._closed(name, values, lo, hi, current)
        return edge_value, make(edge_value, current)

    def open_cost(self) -> int:
        """At most how many probes :meth:`finish_edges` takes (with the confirmation of a case it moves)."""
        moves = any(e.places_case for e in self.open)
        return sum(e.cost() for e in self.open) + (self.settings.runs if moves else 0)

    def finish_edges(self, conditions: list[C], case: dict[str, Any]) -> tuple[list[C], dict[str, Any]]:
        """``conditions`` with every open edge finished on ``case``, and ``case`` moved to the edges that place it.

        Each open edge takes its remaining bisection steps and the refine probe with the other dimensions at
        ``case``; the finished conditions replace the wide ones where ``conditions`` still holds them all (else
        the edge and the case's dimension are left as they are). Raises whatever the probe raises: the edges not
        finished then stay open.
        """
        while self.open:
            edge = self.open[0]
            lo, hi = self._narrow(edge.name, edge.values, edge.lo, edge.hi, edge.steps, case)
            value = self._closed(edge.name, edge.values, lo, hi, case)
            finished = edge.make(value, case)
            self.open.pop(0)
            if all(c in conditions for c in edge.wide):
                at = conditions.index(edge.wide[0])
                conditions = [c for c in conditions if c not in edge.wide]
                conditions[at:at] = finished
                if edge.places_case:
                    case[edge.name] = value
        return conditions, case

    def _narrow(self, name: str, values: tuple[Any, ...] | list[Any], lo: int, hi: int, steps: int,
                current: Mapping[str, Any]) -> tuple[int, int]:
        """Up to ``steps`` bisection steps between indices ``lo`` (lost the property) and ``hi`` (kept it)."""
        for _ in range(steps):
            if abs(hi - lo) <= 1:
                break
            mid = (lo + hi) // 2
            # no recheck: a noisy "vanished" here only moves the edge one step toward the kept side
            if self.test({**current, name: values[mid]}, f"{name} -> {values[mid]} (bisect)", recheck=False):
                hi = mid
            else:
                lo = mid
        return lo, hi

    def _closed(self, name: str, values: tuple[Any, ...] | list[Any], lo: int, hi: int,
                current: Mapping[str, Any]) -> Any:
        """The edge at the end of bisection: ``values[hi]``, or the refine probe's value when it keeps."""
        return self._refined(name, values[lo], values[hi], current) if abs(hi - lo) == 1 else values[hi]

    def _refined(self, name: str, bad: Any, good: Any, current: Mapping[str, Any]) -> Any:
        """``good``, or the integer at the geometric middle between ``bad`` and ``good`` if it still holds the
        property (one probe), when ``name`` is an integer range and its neighbouring ladder values are more than
        :data:`REFINE_RATIO` apart: a sqrt(2) ladder leaves an edge up to 41 % inside the true one, one more
        probe halves that. An ordered choice has no values between its own."""
        if not self._refinable(name, bad, good):
            return good
        mid = round(math.sqrt(bad * good))
        kept = self.test({**current, name: mid}, f"{name} -> {mid} (refine)", recheck=False)
        return mid if kept else good

    def _refinable(self, name: str, bad: Any, good: Any) -> bool:
        """Whether :meth:`_refined` would probe between neighbouring ladder values ``bad`` and ``good``."""
        if not self.settings.refine or not isinstance(self.space.dimension(name), IntRange) \
                or max(bad, good) < REFINE_RATIO * min(bad, good):
            return False
        return round(math.sqrt(bad * good)) not in (bad, good)


def retreating(name: str, values: list[Any], lost: Callable[[Any], Callable[[dict[str, Any]], list[C]]]
               ) -> Check[C]:
    """A check of ``name`` moving to ``values[0]``, falling back on the later ``values`` (each with its
    ``lost(value)`` callback) when that is illegal."""
    checks = [Check(name, v, lost(v)) for v in values]
    return dataclasses.replace(checks[0], fallbacks=tuple(checks[1:]))


def from_to(values: list[Any], far: Any, here: Any) -> list[Any]:
    """The values of ``values`` from ``far`` toward ``here``, ``here`` excluded."""
    i, j = nearest_index(values, far), nearest_index(values, here)
    return values[i:j] if i < j else values[i:j:-1]


def ladder(d: IntRange | Choice) -> list[Any]:
    """The values bisection walks, in order: an ordered choice's values; for integers, powers of sqrt(2)
    (1, 2, 3, 4, 6, 8, 11, 16, ...) between the bounds, plus the bounds, so an edge is found to ~40 %."""
    if isinstance(d, Choice):
        return sorted(d.values)
    values = {d.lo, d.hi}
    k = 0
    while (p := round(2 ** (k / 2))) <= d.hi:
        if p >= d.lo:
            values.add(p)
        k += 1
    if d.simplest() is not None:
        values.add(d.simplest())
    return sorted(values)


def nearest_index(values: list[Any] | tuple[Any, ...], v: Any) -> int:
    """The index of ``v`` in ``values``, or of the value nearest it."""
    if v in values:
        return values.index(v)
    return min(range(len(values)), key=lambda i: abs(values[i] - v))
