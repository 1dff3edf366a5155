"""From one anomalous point, the minimal feature set (MFS) and the simplest concrete case that still shows it.

The minimizer only sees verdicts: it calls ``probe(point) -> Verdict | None`` (``None`` = the point could not
run) and never looks inside the target. It works dimension by dimension, in the way of Hypothesis's shrinker:
a change is kept only if the anomaly (same signature) survives it, so the current point is anomalous at
every step (the invariant), and it only ever becomes simpler. The general moves (probes and their recheck rule,
settled points, group probes, bisection and refine, deferred edges, checks of the simplified case, the
confirmation) are :class:`collie.shrink.Shrinker`'s, which knows nothing of RDMA; this package is the RDMA policy
that composes them: this module the order and the numeric dimensions, :mod:`collie.minimize.verbs` topology, the
verb and the opcode mix, :mod:`collie.minimize.sizes` the size pattern, with the policy's data: the space's
shrink order (``SearchSpace.shrink_order``, a space file's ``[minimize] order``), and in
:mod:`collie.minimize.policy` the features each parameter drives (:data:`DRIVES`) and the halves of a verb
(:data:`VERB_PARTS`).

Order and grouping:
    * the dimensions the space's order names before ``"*"`` one at a time, in that order: by default topology
      first (``direction``, ``memory``), one probe each, then the opcode mix (``mix``: none if the
      anomaly keeps without it, else only READ with WRITE, ``read_write_mix == True``, or only the atomics,
      ``atomics == True``, else as found, ``opcode == MIXED``; a mixed case leaves the opcode to these), then
      the verb (``op``): try the simplest
      value; if the anomaly vanishes the current value is necessary (an ``==``/flag condition) and its transport
      and opcode are tested apart (the other opcodes on the same transport, the same opcode on the other
      transports; a half is necessary if its first alternative whose run decides loses the anomaly, a run
      where another anomaly's stronger symptom masks this one deciding nothing, and so does a run that keeps
      the symptom while its diagnostic counters point at another cause (one at least twice the case's, another
      at most half: :func:`~collie.minimize.policy.other_cause`); a half whose alternative kept
      the anomaly is checked again on the simplified case, where a slip onto another anomaly is less likely;
      when the simplest verb lost and no half's condition excludes it, each half moved alone having kept the
      anomaly, the verb stays as found: the MFS never covers a verb that was probed and lost);
    * the dimensions the order does not name (``"*"``) by adaptive group testing: one probe sets all of them to
      their simplest values; if the anomaly survives they are all adopted, else the group is split in halves,
      down to single dimensions (most anomalies need few dimensions, so this costs far fewer probes than one
      per dimension);
    * a single numeric or ordered dimension whose simplest value loses the anomaly is bisected (on the log
      scale) for the edge of the region: ``feature >= edge`` (or ``<=``); with ``refine``, one more probe at
      the geometric middle of two integer ladder values more than 25 % apart moves the edge there if it keeps
      the anomaly;
    * the dimensions the order names after ``"*"`` one at a time, in that order (by default the size pattern:
      sizes interact with the MTU and the MR size): all-small, then all-large; if neither single size keeps the
      anomaly, a mix is
      necessary (``size_mix == true``); a single size off a power of two moves to the nearest one that keeps
      the anomaly, else its tail is the condition: ``line_tail`` (bytes past the last whole cache line) or
      ``tail_packet`` (the last packet's payload), each edge bisected on the offset from the boundary, the case
      moved to the lower edge beside a power of two (see :mod:`collie.minimize.sizes`);
    * the dimensions the space's ``[minimize] again`` names (numeric ones: ``hosts`` of a collective) are shrunk
      once more when every other is simplified: their simplest value probed, else their near edge bisected
      again, whose condition replaces the one found first (a pattern of fewer ranks per host may show the
      anomaly on fewer hosts than it did when ``hosts`` was shrunk first);
    * a dimension whose probe could not run is tried once more, when the others are simpler; if it still
      cannot, that reads as a loss: the dimension keeps the case's value (its verb halves, its flag, its
      edge bisected from the simplest value), since one that cannot be shown irrelevant is not irrelevant;
      a verb half none of whose alternatives can run is necessary the same way;
    * last, *checks* of the simplified case, grouped the same way: each side of a numeric dimension that was
      not probed on the way (both ends of its ladder when it is at its simplest value, the end beyond its
      edge when it was bisected), both ends of a single size, and (on their own, since a verb change grouped
      with others can slip onto another anomaly of the same symptom) the halves of an adopted simplest verb:
      a one-sided condition leaves free only a side that was probed. A check that loses the anomaly yields
      its edge (bisected) or its verb condition; a far bound that cannot run (more memory pinned than a host
      allows, more SGEs than the device takes) falls back to the farthest value on its ladder that can; one in
      a known anomaly's region, or a side where nothing can run, reads as a loss; a size edge found from a
      case of one size is told apart as ``max_msg`` or ``min_msg`` by one probe with a message beyond it added.
A probe of one dimension that loses the anomaly is rechecked (a second run) unless its reading of the anomaly's
symptom missed the threshold by more than ``recheck_margin`` (a clear loss); a grouped probe is not rechecked
(it only decides a split), but a single probe of the very point it saw counts it as its first run. A point that
lost the anomaly twice, or once clearly, is settled: it is never run again, and a check that moves to it is not
grouped.
A final confirmation re-runs the simplest case ``runs`` times and requires ``required`` anomalous runs (a probe
that already kept that exact case counts as one).

The case sits at its edges: a dimension bisected from its simplest value ends at the edge (the simplest value that
keeps the condition; :func:`off_edges` names a condition a case does not sit at). A size edge is a far-side check
of the case's one size, which stays as found; so does the far bound of a range (a dimension bisected away from
its simplest value and then bounded beyond the case). A point that ``explained`` (a campaign's hook: the
region of another known anomaly of the same symptom) holds is never run and cannot be tested, like a point that
cannot run (a verb half reads it as masked: the next alternative decides), so the case never moves into a known
region, and an edge stops beside one rather than claiming it. The MFS holds for its own case: a condition that
a later move keeping the anomaly broke (the mix narrowed to WRITE beside an RC READ verb, ``read_write_mix``,
then the verb moved to RC WRITE) was shown unnecessary, and is dropped.

Deferred edges (``run(..., defer=True)``, what a campaign does): an edge gets only ``search_bisect_steps``
bisection steps while the search waits. An edge still open then stands in the MFS at the near end of its
bracket on the side that lost the anomaly (a wider region than the true one: exclusion stays conservative and
the search does not meet the same anomaly again just inside the edge); :meth:`Minimizer.finish` later takes the
remaining steps and the refine probe on the confirmed case and puts the finished edge in its place, and on a
case that moved there repeats the checks of the verb's halves (another anomaly of the same symptom may have kept
an alternative at the open edges only).
:meth:`Minimizer.open_cost` bounds what finishing costs, so a campaign can keep that much of its budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from collie.mfs import MFS, Condition
from collie.minimize.policy import DRIVES, VERB_PARTS, edge_feature, feature_at, other_cause
from collie.minimize.sizes import Sizes
from collie.minimize.verbs import Verbs, superseded
from collie.model.dimensions import Choice, Dimension, Flag, IntRange, OpcodePattern, SizeVector
from collie.model.features import features
from collie.model.points import point_key
from collie.model.space import SearchSpace
from collie.oracle import Verdict
from collie.shrink import MinimizeSettings, Seen, Shrinker, from_to, ladder, nearest_index, retreating

__all__ = ["DRIVES", "VERB_PARTS", "MinimizeResult", "MinimizeSettings", "Minimizer", "moved_to", "off_edges"]

Probe = Callable[[Mapping[str, Any]], "Verdict | None"]


@dataclass
class MinimizeResult:
    """What minimization produced and what it cost."""

    mfs: MFS
    point: dict[str, Any]
    confirmed: bool
    experiments: int
    steps: list[dict[str, Any]] = field(default_factory=list)


class Minimizer:
    """Shrinks one anomalous point of a space (see the module docstring)."""

    def __init__(self, space: SearchSpace, probe: Probe, settings: MinimizeSettings | None = None,
                 explained: Callable[[Mapping[str, Any]], bool] | None = None) -> None:
        self.space = space
        self._probe = probe
        self.settings = settings or MinimizeSettings()
        # points another anomaly already known explains (its region, the same symptom): never run, read as masked
        self._shrink: Shrinker[Condition] = Shrinker(space, self._seen, self.settings,
                                                     explained or (lambda point: False))
        self._verbs = Verbs(space, self._shrink)
        self._sizes = Sizes(space, self._shrink)
        self._signature = ""
        # the case being simplified (by the last :meth:`run`), the diagnostic metrics of the run that found it and
        # those of every run that kept the anomaly, by point: what a verb alternative's run is compared with
        self._current: dict[str, Any] | None = None
        self._found: Mapping[str, float] = {}
        self._kept: dict[str, Mapping[str, float]] = {}

    @property
    def experiments(self) -> int:
        """Probes run so far."""
        return self._shrink.experiments

    @property
    def steps(self) -> list[dict[str, Any]]:
        """One entry per probe decision: why, whether the anomaly kept, the point, how many runs."""
        return self._shrink.steps

    def _seen(self, point: Mapping[str, Any]) -> Seen | None:
        """What a run of ``point`` showed of the anomaly: kept when anomalous with the same leading symptom.

        A run of the case with only its verb changed that keeps the symptom while its diagnostic counters point
        at another cause (:func:`~collie.minimize.policy.other_cause`: RC READ's packet-pipeline stalls gone,
        RC SEND's receive-WQE misses up) is read as masked: another anomaly of the same symptom, which decides
        nothing about this one."""
        verdict = self._probe(point)
        if verdict is None:
            return None
        signature = self._signature
        kept = verdict.anomalous and verdict.leading == signature
        level = verdict.levels.get(signature)
        current = self._current
        if kept and current is not None and point.get("op") != current.get("op") \
                and {**point, "op": current.get("op")} == current \
                and other_cause(self._kept.get(point_key(current), self._found), verdict.metrics):
            return Seen(False, True, level)
        if kept:
            self._kept[point_key(point)] = verdict.metrics
        return Seen(kept, verdict.shows(signature), level)

    def run(self, point: Mapping[str, Any], verdict: Verdict, defer: bool = False) -> MinimizeResult:
        """Minimize ``point`` (which showed ``verdict``); with ``defer``, leave edges open for :meth:`finish`."""
        # a change is kept only if the run shows the same leading symptom (kind and end)
        self._signature = verdict.leading
        self._shrink.defer = defer
        self._verbs.checks = []
        # a point of a smaller or older space (workloads/paper.toml, a case recorded before a dimension existed:
        # no mix, no rq_depth) lacks some dimensions; each starts where the point's workload has it
        current = {**self.space.point_of(self.space.build(point)), **point}
        self._current, self._found = current, verdict.metrics
        conditions: list[Condition] = []
        # the space's order: by default topology first (fewer flows, plainer memory), as a shrinker deletes
        # structure before it edits values: a verb change tried early can slip onto a different anomaly with the
        # same symptom (a READ incast turned WRITE pauses for another reason); the opcode mix before the verb (the
        # verb's opcode condition depends on whether the flow is mixed); sizes after the others (they interact
        # with MTU and MR size). A dimension whose probe could not run is tried once more at the end, when the
        # others are simpler.
        order = self.space.shrink_order
        at = order.index("*")
        before, after = ([d for n in names for d in self.space.dimensions if d.name == n]
                         for names in (order[:at], order[at + 1:]))
        retry: list[Dimension] = []
        for d in before:
            conditions += self._single(d, current, retry)
        # the others are simplified in groups: most anomalies need few of them
        conditions += self._shrink.group([d for d in self.space.dimensions if d.name not in order], current,
                                         partial(self._single, current=current, retry=retry))
        for d in after:
            conditions += self._single(d, current, retry)
        for d in retry:
            # the last try: a probe that still cannot run reads as a loss (unknown is not irrelevant)
            conditions += self._dimension(d, current, final=True) or []
        for d in (d for n in self.space.shrink_again for d in self.space.dimensions if d.name == n):
            conditions = self._again(d, current, conditions)
        conditions += self._shrink.check_far(current)
        confirmed = self._shrink.confirm(current)
        if not confirmed:
            # the simplified case does not hold up: keep the original (confirmed) point as the case
            current = dict(point)
        return MinimizeResult(MFS(verdict.signature, tuple(self._held(superseded(conditions), current))), current,
                              confirmed, self.experiments, self.steps)

    @property
    def open_edges(self) -> int:
        """Edges of the last deferred run's MFS still at the wide end of their bracket (see :meth:`finish`)."""
        return len(self._shrink.open)

    def open_cost(self) -> int:
        """At most how many probes :meth:`finish` takes (with the confirmation of a case it moves, and the verb
        checks repeated there)."""
        moves = any(e.places_case for e in self._shrink.open)
        return self._shrink.open_cost() + (2 * len(self._verbs.checks) if moves else 0)

    def open_conditions(self) -> frozenset[Condition]:
        """The wide conditions standing in for the edges left open (the case need not sit at them yet)."""
        return frozenset(c for edge in self._shrink.open for c in edge.wide)

    def finish(self, result: MinimizeResult) -> MinimizeResult:
        """``result`` of a deferred :meth:`run` with every open edge finished on its case.

        Each open edge takes its remaining bisection steps and the refine probe with the other dimensions at
        ``result.point`` (the confirmed case, where the edge's dimension holds a value that kept the anomaly);
        the finished condition replaces the wide one. An edge that placed the case (found from the dimension's
        simplest value) moves the case to the finished edge, the simplest value that keeps the condition, as a
        run without deferral leaves it; a case that moved is confirmed again (``required`` of ``runs``), and if
        it does not hold up the confirmed case of ``result`` stays. On a moved case that holds up, the verb checks
        of the run are repeated: those that now lose the anomaly add their conditions. A wide condition no longer
        in ``result.mfs`` (a campaign widened it to take in a confirmed point beyond it) is left as it is, and so
        is the case on its dimension, and the finished edges of the dimensions it would have moved on are put at
        its values (a narrower region, the one confirmed, so the case still sits at its edges). Raises whatever
        the probe raises (a spent budget): the edges not finished then stay open.
        """
        conditions, case = self._shrink.finish_edges(list(result.mfs.conditions), dict(result.point))
        point, confirmed = result.point, result.confirmed
        if case != result.point:
            if self._shrink.confirm(case):
                point, confirmed = case, True
                # the verb checks ran on the case at its open edges: at the finished ones another anomaly of the
                # same symptom may no longer keep a verb alternative
                self._current = case
                conditions = superseded(conditions + self._verbs.recheck(case, conditions))
            else:
                conditions = self._edges_at(conditions, result.point, {n for n in case if case[n] != point.get(n)})
        return MinimizeResult(MFS(result.mfs.signature, tuple(conditions)), point, confirmed,
                              self.experiments, self.steps)

    def _held(self, conditions: list[Condition], case: Mapping[str, Any]) -> list[Condition]:
        """``conditions`` without those the case breaks: a later move that kept the anomaly showed them
        unnecessary (the mix narrowed to WRITE beside an RC READ verb, ``read_write_mix``, then the verb moved
        to RC WRITE). The invariant: an MFS always holds for its own case."""
        f = features(self.space.build(case))
        return [c for c in conditions if c.holds(f)]

    def _edges_at(self, conditions: list[Condition], point: Mapping[str, Any], moved: set[str]
                  ) -> list[Condition]:
        """``conditions`` with the edge of every parameter in ``moved`` at its value in ``point``: the edge on
        the side of its simplest value (the far bound of a range stays)."""
        at = {f: ">=" if point[n] > d.simplest() else "<=" for n in moved
              if (f := edge_feature(n)) is not None and isinstance(d := self.space.dimension(n), IntRange | Choice)}
        return [Condition(c.feature, c.op, feature_at(self.space, point, c.feature))
                if at.get(c.feature) == c.op else c for c in conditions]

    def _single(self, d: Dimension, current: dict[str, Any], retry: list[Dimension]) -> list[Condition]:
        """:meth:`_dimension`, with ``d`` put on ``retry`` when its key probe could not run; a dimension that does
        not apply to the case (``direction`` beside a pattern) moves to its simplest value unprobed."""
        if not self.space.applies(d.name, current):
            current[d.name] = d.simplest()
            return []
        found = self._dimension(d, current)
        if found is None:
            retry.append(d)
        return found or []

    def _dimension(self, d: Dimension, current: dict[str, Any], final: bool = False) -> list[Condition] | None:
        """Conditions dimension ``d`` contributes (None: its key probe could not run). ``final``: the last try,
        where a key probe that cannot run (an illegal point, one the target cannot run, one a known anomaly
        explains) reads as a loss: a dimension that cannot be shown irrelevant keeps the case's value."""
        if isinstance(d, SizeVector):
            return self._sizes.shrink(d, current)
        if isinstance(d, OpcodePattern):
            return self._verbs.mix(d, current, final)
        if isinstance(d, Choice) and not d.ordered and not isinstance(d.values[0], int):
            return self._verbs.categorical(d, current, final)
        if isinstance(d, Flag):
            return self._flag(d, current, final)
        return self._numeric(d, current, final)

    def _flag(self, d: Flag, current: dict[str, Any], final: bool) -> list[Condition] | None:
        kept = self._shrink.simplified(d, current)
        if kept is None and not final:
            return None
        return [] if kept else [Condition(d.name, "==", current[d.name])]

    def _numeric(self, d: IntRange | Choice, current: dict[str, Any], final: bool) -> list[Condition] | None:
        """Conditions of a numeric or ordered dimension (None: the probe of its simplest value could not run,
        unless ``final``): none if its simplest value keeps the anomaly (``current`` moves there), else the edge
        bisected from it (``current`` moves to the edge). Every side of the case not probed on the way becomes a
        check of the simplified case (both sides of a case at its simplest value, the side away from it of a
        case at an edge), so a one-sided condition only ever leaves free a side that was probed."""
        value, simplest = current[d.name], d.simplest()
        # the current value is on the ladder, so bisection only ever adopts values it has seen anomalous
        values = sorted(set(ladder(d)) | {value})
        found: list[Condition] = []
        if value != simplest:
            near = self._from_simplest(d, values, current, final, f"{d.name} -> {simplest}")
            if near is None:
                return None
            found = near
        if not self.settings.far_side:
            return found
        here, low = nearest_index(values, current[d.name]), nearest_index(values, simplest)
        # at the simplest value both ends, the farther first (a layer of grouped checks holds one per dimension);
        # at an edge bisected from it, the end beyond the case
        ends = sorted((0, len(values) - 1), key=lambda i: -abs(i - here)) if here == low else \
            [len(values) - 1 if here > low else 0]
        for end in (e for e in ends if e != here):
            self._shrink.far.append(retreating(d.name, from_to(values, values[end], values[here]),
                                               lambda v: partial(self._far_edge, d, v)))
        return found

    def _from_simplest(self, d: IntRange | Choice, values: list[Any], current: dict[str, Any], final: bool,
                       why: str) -> list[Condition] | None:
        """The near edge of ``d`` (``current`` not at its simplest value, which ``values``, its ladder with the
        current value, holds): none if the simplest value keeps the anomaly (``current`` moves there), else the
        edge bisected from it (``current`` moves to the edge). None when that probe could not run, unless
        ``final`` (read as a loss)."""
        value, simplest = current[d.name], d.simplest()
        kept = self._shrink.test({**current, d.name: simplest}, why)
        if kept is None and not final:
            return None
        if kept:
            current[d.name] = simplest
            return []
        current[d.name], found = self._shrink.bisect(
            d.name, values, simplest, value, current,
            partial(self._edge_condition, d.name, edge_feature(d.name), _edge_op(values, value, simplest)),
            places_case=True)
        return found

    def _again(self, d: Dimension, current: dict[str, Any], conditions: list[Condition]) -> list[Condition]:
        """``conditions`` with dimension ``d``'s near edge found once more, now that every other dimension is
        simplified (the space's ``[minimize] again``: a pattern of fewer ranks per host may need fewer hosts),
        in place of the edge found first (dropped when the simplest value keeps the anomaly). Unchanged when
        ``d`` is at its simplest value or that probe cannot run."""
        value, simplest = current[d.name], d.simplest()
        if not isinstance(d, (IntRange, Choice)) or value == simplest:
            return conditions
        values = sorted(set(ladder(d)) | {value})
        near = self._from_simplest(d, values, current, False, f"{d.name} -> {simplest} (again)")
        if near is None:
            return conditions
        first = (edge_feature(d.name), _edge_op(values, value, simplest))
        return [c for c in conditions if (c.feature, c.op) != first] + near

    def _far_edge(self, d: IntRange | Choice, far: Any, current: dict[str, Any]) -> list[Condition]:
        """The edge between the current value of ``d`` (anomalous) and ``far`` (not), as a condition."""
        here = current[d.name]
        values = sorted(set(ladder(d)) | {here})
        return self._shrink.bisect(d.name, values, far, here, current, partial(
            self._edge_condition, d.name, edge_feature(d.name), _edge_op(values, here, far)))[1]

    def _edge_condition(self, name: str, feature: str | None, op: str, edge: Any, case: Mapping[str, Any]
                        ) -> list[Condition]:
        """``feature op`` its value at ``case`` with dimension ``name`` at ``edge`` (none without a feature)."""
        return [Condition(feature, op, feature_at(self.space, {**case, name: edge}, feature))] if feature else []


def _edge_op(values: list[Any], value: Any, simplest: Any) -> str:
    """The operator of an edge between a dimension's anomalous ``value`` and a value ``simplest`` (or any other)
    that lost the anomaly: the anomaly needs at least the edge (``>=``) when ``value`` lies above it on the
    ladder ``values``."""
    return ">=" if nearest_index(values, value) > nearest_index(values, simplest) else "<="


def off_edges(space: SearchSpace, mfs: MFS, point: Mapping[str, Any]) -> list[Condition]:
    """The numeric conditions of ``mfs`` that the case ``point`` does not sit at (none for a minimized case).

    A minimized case sits at each edge of its MFS, the simplest value that keeps the condition: the feature
    equals the condition's value, unless the dimension driving it holds its simplest value inside the region
    (an upper edge found from the simplest value) or the case sits at the other edge of a range (the far bound
    of a dimension bisected away from its simplest value). Message sizes are not held to it: a size edge is
    found by a far-side check of the case's one size, which stays as found (moving it down to a lower edge
    changed what the other dimensions were checked against, and the campaigns found fewer planted anomalies).
    """
    f = features(space.build(point))
    off: list[Condition] = []
    for c in mfs.conditions:
        value = getattr(f, c.feature)
        if c.op not in (">=", "<=") or value == c.value or any(
                d.feature == c.feature and d.op in (">=", "<=") and d.op != c.op and d.value == value
                for d in mfs.conditions):
            continue
        if c.feature in DRIVES["sizes"]:
            continue
        drivers = [p for p in DRIVES if edge_feature(p) == c.feature and p in point]
        if not any(point[p] == space.dimension(p).simplest() for p in drivers):
            off.append(c)
    return off


def moved_to(space: SearchSpace, case: Mapping[str, Any], point: Mapping[str, Any],
             feature_names: list[str]) -> dict[str, Any] | None:
    """``case`` with the dimensions that drive ``feature_names`` (:data:`DRIVES`) taken from ``point``.

    Used to check that a point just past a known MFS's edge is that anomaly and not another one of the same
    symptom: the known minimal case moved to the new value must still show it. None when some feature has no
    dimension of its own (then the point is minimized instead).
    """
    moved = dict(case)
    for name in feature_names:
        dims = [p for p, driven in DRIVES.items() if name in driven and p in point]
        if not dims:
            return None
        moved.update({d: point[d] for d in dims})
    return moved
