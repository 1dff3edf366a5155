"""From one anomalous point, the minimal feature set (MFS) and the simplest concrete case that still shows it.

The minimizer only sees verdicts: it calls ``probe(point) -> Verdict | None`` (``None`` = the point could not
run) and never looks inside the target. It works dimension by dimension, in the way of Hypothesis's shrinker:
a change is kept only if the anomaly (same signature) survives it, so the current point is anomalous at
every step (the invariant), and it only ever becomes simpler.

Order and grouping:
    * topology first (``direction``, ``memory``), one probe each, then the opcode mix (``mix``: none if the
      anomaly keeps without it, else only READ with WRITE, ``read_write_mix == True``, or only the atomics,
      ``atomics == True``, else as found, ``opcode == MIXED``; a mixed case leaves the opcode to these), then
      the verb (``op``): try the simplest
      value; if the anomaly vanishes the current value is necessary (an ``==``/flag condition) and its transport
      and opcode are tested apart (the other opcodes on the same transport, the same opcode on the other
      transports; a half is necessary if its first alternative whose run decides loses the anomaly, a run
      where another anomaly's stronger symptom masks this one deciding nothing; a half whose alternative kept
      the anomaly is checked again on the simplified case, where a slip onto another anomaly is less likely);
    * the other scalar dimensions by adaptive group testing: one probe sets all of them to their simplest
      values; if the anomaly survives they are all adopted, else the group is split in halves, down to single
      dimensions (most anomalies need few dimensions, so this costs far fewer probes than one per dimension);
    * a single numeric or ordered dimension whose simplest value loses the anomaly is bisected (on the log
      scale) for the edge of the region: ``feature >= edge`` (or ``<=``); with ``refine``, one more probe at
      the geometric middle of two integer ladder values more than 25 % apart moves the edge there if it keeps
      the anomaly;
    * the size pattern: all-small, then all-large; if neither single size keeps the anomaly, a mix is
      necessary (``size_mix == true``); a single size off a power of two moves to the nearest one that keeps
      the anomaly, else its tail is the condition: ``line_tail`` (bytes past the last whole cache line) or
      ``tail_packet`` (the last packet's payload), each edge bisected on the offset from the boundary, the case
      moved to the lower edge beside a power of two (see :meth:`Minimizer._boundary`);
    * last, *checks* of the simplified case, grouped the same way: every numeric dimension's far bound, both
      ends of a single size, and (on their own, since a verb change grouped with others can slip onto another
      anomaly of the same symptom) the halves of an adopted simplest verb. A check that loses the anomaly
      yields its edge (bisected) or its verb condition; a far bound that cannot run (more memory pinned than
      a host allows) falls back to the farthest value on its ladder that can; a size edge found from a case
      of one size is told apart as ``max_msg`` or ``min_msg`` by one probe with a message beyond it added.
A probe of one dimension that loses the anomaly is rechecked (a second run) unless its reading of the anomaly's
symptom missed the threshold by more than ``recheck_margin`` (a clear loss); a grouped probe is not rechecked
(it only decides a split), but a single probe of the very point it saw counts it as its first run. A point that
lost the anomaly twice, or once clearly, is settled: it is never run again, and a check that moves to it is not
grouped.
A final confirmation re-runs the simplest case ``runs`` times and requires ``required`` anomalous runs (a probe
that already kept that exact case counts as one).

The case sits at its edges: a dimension bisected from its simplest value ends at the edge (the simplest value that
keeps the condition; :func:`off_edges` names a condition a case does not sit at). A size edge is a far-side check
of the case's one size, which stays as found. A point that ``explained`` (a campaign's hook: the
region of another known anomaly of the same symptom) holds is never run and cannot be tested, like a point that
cannot run (a verb half reads it as masked: the next alternative decides), so the case never moves into a known
region and no edge is drawn at one.

Deferred edges (``run(..., defer=True)``, what a campaign does): an edge gets only ``search_bisect_steps``
bisection steps while the search waits. An edge still open then stands in the MFS at the near end of its
bracket on the side that lost the anomaly (a wider region than the true one: exclusion stays conservative and
the search does not meet the same anomaly again just inside the edge); :meth:`Minimizer.finish` later takes the
remaining steps and the refine probe on the confirmed case and puts the finished edge in its place.
:meth:`Minimizer.open_cost` bounds what finishing costs, so a campaign can keep that much of its budget.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from collie.mfs import MFS, Condition
from collie.model.dimensions import Choice, Dimension, Flag, IntRange, OpcodePattern, SizeVector
from collie.model.features import CACHE_LINE, features
from collie.model.flow import ATOMIC_OPCODES, MIXED
from collie.model.points import point_key
from collie.model.space import SearchSpace
from collie.oracle import Verdict

Probe = Callable[[Mapping[str, Any]], "Verdict | None"]

#: The feature each numeric parameter drives (the MFS speaks in features, like the simulator and reports).
PARAM_FEATURE: Final[Mapping[str, str]] = {
    "qps": "qps_total", "mrs": "mrs_host", "mr_size": "mr_size", "batch": "batch", "sges": "sges",
    "wq_depth": "wq_depth", "mtu": "mtu", "processes": "processes", "inline": "inline",
    "signal_every": "signal_every", "rq_depth": "rq_depth", "recv_batch": "recv_batch",
    "recv_sges": "recv_sges", "recv_delay_us": "recv_delay_us", "mr_churn": "mr_churn", "qp_churn": "qp_churn",
}
_SIZE_FEATURES: Final = ("max_msg", "min_msg", "sizes", "size_mix", "line_tail", "tail_packet")
_DIRECTION_FLAGS: Final = ("bidirectional", "loopback", "incast")
_TOPOLOGY: Final = ("direction", "memory")
#: What :meth:`Minimizer._half_kept` returns when an alternative verb could not run.
_UNTESTABLE: Final = object()
#: Neighbouring ladder values at least this ratio apart get one more probe between them (``refine``).
_REFINE_RATIO: Final = 1.25


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
    #: and the refine probe wait for :meth:`Minimizer.finish`)
    search_bisect_steps: int = 2


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
        self._explained = explained or (lambda point: False)
        self.experiments = 0
        self.steps: list[dict[str, Any]] = []
        # moves of the simplified case still to be probed, in groups, once every dimension is simplified
        self._far: list[_Check] = []
        # points a probe saw without the anomaly (an unrechecked probe: once), and those seen so twice
        self._vanished: set[str] = set()
        self._lost: set[str] = set()
        # points whose last run showed the anomaly's symptom, but behind a stronger one of another anomaly
        self._masked: set[str] = set()
        self._defer = False
        self._open: list[_OpenEdge] = []
        self._signature = ""

    def _test(self, point: Mapping[str, Any], signature: str, why: str, recheck: bool = True) -> bool | None:
        """True: the anomaly survives at ``point``; False: it vanished; None: ``point`` cannot be tested
        (illegal in the space, or the target could not run it). ``recheck=False`` for probes whose "vanished"
        decides nothing on its own (a bisection step, a grouped probe that is split next)."""
        if not self.space.is_valid(point):
            return None
        recheck = recheck and self.settings.recheck
        key = point_key(point)
        if key in self._lost:
            return False  # settled: vanished in a probe and its recheck
        if self._explained(point):
            # a known anomaly of the same symptom explains whatever runs there: it decides nothing about this
            # one, so it is not run and cannot be tested (a verb half reads it as masked: the next alternative
            # decides); the case never moves there
            self._masked.add(key)
            self.steps.append({"why": f"{why} (a known anomaly's region)", "kept": None, "point": dict(point),
                               "runs": 0})
            return None
        if not recheck and key in self._vanished:
            return False  # seen without the anomaly, and one run is all this probe would have had
        # a grouped probe of this very point already saw the anomaly vanish: this run is its recheck
        seen = int(recheck and key in self._vanished)
        runs = 0
        kept: bool | None = False
        clear = False
        verdict: Verdict | None = None
        while kept is False and not clear and seen + runs < (2 if recheck else 1):
            # "vanished" makes a feature necessary: a second run guards against noise near a threshold
            runs += 1
            verdict = self._probe(point)
            kept = None if verdict is None else verdict.anomalous and verdict.leading == signature
            clear = verdict is not None and self._clear_miss(verdict, signature)
        self.experiments += runs
        if kept is False and verdict is not None and verdict.shows(signature):
            self._masked.add(key)
        if kept is False:
            self._vanished.add(key)
            if seen + runs >= 2 or clear:
                self._lost.add(key)
        self.steps.append({"why": why, "kept": kept, "point": dict(point), "runs": runs})
        return kept

    def _clear_miss(self, verdict: Verdict, signature: str) -> bool:
        """Whether ``verdict`` shows the symptom of ``signature`` more than ``recheck_margin`` below its
        threshold (a verdict without levels never does)."""
        level = verdict.levels.get(signature)
        return level is not None and level * (1.0 + self.settings.recheck_margin) < 1.0

    def _still(self, point: Mapping[str, Any], signature: str, why: str) -> bool:
        return self._test(point, signature, why) is True

    def _gone(self, point: Mapping[str, Any], signature: str, why: str) -> bool:
        return self._test(point, signature, why) is False

    def run(self, point: Mapping[str, Any], verdict: Verdict, defer: bool = False) -> MinimizeResult:
        """Minimize ``point`` (which showed ``verdict``); with ``defer``, leave edges open for :meth:`finish`."""
        # a change is kept only if the run shows the same leading symptom (kind and end)
        signature = self._signature = verdict.leading
        self._defer = defer
        # a point of a smaller or older space (workloads/paper.toml, a case recorded before a dimension existed:
        # no mix, no rq_depth) lacks some dimensions; each starts where the point's workload has it
        current = {**self.space.point_of(self.space.build(point)), **point}
        conditions: list[Condition] = []
        # sizes last (they interact with MTU and MR size); a dimension whose probe could not run is tried
        # once more at the end, when the others are simpler
        # topology first (fewer flows, plainer memory), as a shrinker deletes structure before it edits
        # values: a verb change tried early can slip onto a different anomaly with the same symptom (a READ
        # incast turned WRITE pauses for another reason)
        dims = self.space.dimensions
        retry: list[Dimension] = []
        # the opcode mix goes before the verb: the verb's opcode condition depends on whether the flow is mixed
        first = [d for d in dims if d.name in _TOPOLOGY] + [d for d in dims if isinstance(d, OpcodePattern)] \
            + [d for d in dims if d.name == "op"]
        for d in first:
            conditions += self._single(d, current, signature, retry)
        # the other scalar dimensions are simplified in groups: most anomalies need few of them
        conditions += self._group([d for d in dims if d not in first and not isinstance(d, SizeVector)],
                                  current, signature, retry)
        for d in [d for d in dims if isinstance(d, SizeVector)]:
            conditions += self._single(d, current, signature, retry)
        for d in retry:
            conditions += self._dimension(d, current, signature) or []
        # a dimension may have several checks (both ends of a size): a group holds one per dimension
        layers: list[list[_Check]] = []
        for check in self._far:
            if point_key({**current, check.name: check.value}) in self._lost:
                conditions += check.lost(current)  # known to lose the anomaly: no group would keep it
                continue
            layer = None if check.alone else next(
                (g for g in layers if not g[0].alone and all(c.name != check.name for c in g)), None)
            if layer is None:
                layers.append(layer := [])
            layer.append(check)
        for layer in layers:
            conditions += self._far_sides(layer, current, signature)
        confirmed = self._confirm(current, signature)
        if not confirmed:
            # the simplified case does not hold up: keep the original (confirmed) point as the case
            current = dict(point)
        return MinimizeResult(MFS(verdict.signature, tuple(_superseded(conditions))), current, confirmed,
                              self.experiments, self.steps)

    @property
    def open_edges(self) -> int:
        """Edges of the last deferred run's MFS still at the wide end of their bracket (see :meth:`finish`)."""
        return len(self._open)

    def open_cost(self) -> int:
        """At most how many probes :meth:`finish` takes (with the confirmation of a case it moves)."""
        moves = any(e.places_case for e in self._open)
        return sum(e.cost() for e in self._open) + (self.settings.runs if moves else 0)

    def finish(self, result: MinimizeResult) -> MinimizeResult:
        """``result`` of a deferred :meth:`run` with every open edge finished on its case.

        Each open edge takes its remaining bisection steps and the refine probe with the other dimensions at
        ``result.point`` (the confirmed case, where the edge's dimension holds a value that kept the anomaly);
        the finished condition replaces the wide one. An edge that placed the case (found from the dimension's
        simplest value) moves the case to the finished edge, the simplest value that keeps the condition, as a
        run without deferral leaves it; a case that moved is confirmed again (``required`` of ``runs``), and if
        it does not hold up the confirmed case of ``result`` stays. A wide condition no longer in ``result.mfs``
        (a campaign widened it to take in a confirmed point beyond it) is left as it is, and so is the case on
        its dimension. Raises whatever the probe raises (a spent budget): the edges not finished then stay open.
        """
        conditions = list(result.mfs.conditions)
        case = dict(result.point)
        while self._open:
            edge = self._open[0]
            lo, hi = self._narrow(edge.name, edge.values, edge.lo, edge.hi, edge.steps, case, self._signature)
            value = self._closed(edge.name, edge.values, lo, hi, case, self._signature)
            finished = edge.make(value, case)
            self._open.pop(0)
            if all(c in conditions for c in edge.wide):
                at = conditions.index(edge.wide[0])
                conditions = [c for c in conditions if c not in edge.wide]
                conditions[at:at] = finished
                if edge.places_case:
                    case[edge.name] = value
        point, confirmed = result.point, result.confirmed
        if case != result.point and self._confirm(case, self._signature):
            point, confirmed = case, True
        return MinimizeResult(MFS(result.mfs.signature, tuple(conditions)), point, confirmed,
                              self.experiments, self.steps)

    def _single(self, d: Dimension, current: dict[str, Any], signature: str,
                retry: list[Dimension]) -> list[Condition]:
        """:meth:`_dimension`, with ``d`` put on ``retry`` when its key probe could not run."""
        found = self._dimension(d, current, signature)
        if found is None:
            retry.append(d)
        return found or []

    def _group(self, group: list[Dimension], current: dict[str, Any], signature: str,
               retry: list[Dimension]) -> list[Condition]:
        """Simplify the dimensions of ``group`` by adaptive group testing (ddmin-like).

        One probe moves every dimension of the group that is not at its simplest value there at once; if the
        anomaly survives, all of them are adopted (one experiment instead of one per dimension); if it vanishes
        or the point is illegal, the group is split in halves and each half is tried in turn. A single
        dimension is handled by :meth:`_dimension` (necessity with a recheck, then its edge). With ``k``
        necessary dimensions of ``n`` this costs about ``k log2(n / k)`` probes plus ``k`` singles.
        """
        conditions: list[Condition] = []
        pending = []
        for d in group:
            if current[d.name] == d.simplest():
                conditions += self._single(d, current, signature, retry)  # no probe: only its far side
            else:
                pending.append(d)
        if len(pending) <= 1:
            return conditions + [c for d in pending for c in self._single(d, current, signature, retry)]
        trial = {**current, **{d.name: d.simplest() for d in pending}}
        why = ", ".join(f"{d.name} -> {d.simplest()}" for d in pending)
        if self._test(trial, signature, why, recheck=False):
            current.update(trial)
            return conditions + [c for d in pending for c in self._single(d, current, signature, retry)]
        mid = len(pending) // 2
        conditions += self._group(pending[:mid], current, signature, retry)
        return conditions + self._group(pending[mid:], current, signature, retry)

    def _dimension(self, d: Dimension, current: dict[str, Any], signature: str) -> list[Condition] | None:
        """Conditions dimension ``d`` contributes (None: its key probe could not run)."""
        if isinstance(d, SizeVector):
            return self._sizes(d, current, signature)
        if isinstance(d, OpcodePattern):
            return self._mix(d, current, signature)
        if isinstance(d, Choice) and not d.ordered and not isinstance(d.values[0], int):
            return self._categorical(d, current, signature)
        if isinstance(d, Flag):
            return self._flag(d, current, signature)
        return self._numeric(d, current, signature)

    def _confirm(self, point: Mapping[str, Any], signature: str) -> bool:
        """``required`` of ``runs`` runs of ``point`` anomalous; a probe that already kept it counts as one."""
        seen = any(s["kept"] is True and s["point"] == point for s in self.steps)
        hits = int(seen)
        for i in range(int(seen), self.settings.runs):
            hits += self._still(point, signature, f"confirm {i + 1}/{self.settings.runs}")
            if hits >= self.settings.required:
                return True
            if hits + self.settings.runs - i - 1 < self.settings.required:
                return False
        return hits >= self.settings.required

    def _categorical(self, d: Choice, current: dict[str, Any], signature: str) -> list[Condition] | None:
        value = current[d.name]
        simplest = d.simplest()
        if value != simplest:
            trial = {**current, d.name: simplest}
            kept = self._test(trial, signature, f"{d.name} -> {simplest}")
            if kept is None and d.name == "op" and point_key(trial) in self._masked:
                return self._verb(d, current, signature)  # a known anomaly's region: the verb's halves decide
            if kept is None:
                return None
            if not kept:
                return self._verb(d, current, signature) if d.name == "op" else \
                    _categorical_conditions(self.space, d.name, value)
            current[d.name] = simplest
        if d.name == "op":
            # the verb is not necessary, but its transport or opcode may be: checked at the end, with the far sides
            for others, condition in _verb_halves(d, simplest):
                lost = partial(self._masked_then, d.name, others[0], others[1:],
                               self._verb_conditions(d, [condition], current), signature=signature)
                self._far.append(_Check(d.name, others[0], lost, alone=True))
        return []

    def _verb(self, d: Choice, current: dict[str, Any], signature: str) -> list[Condition]:
        """Whether the transport, the opcode or both of the current verb are necessary.

        The opcode is tested by the other verbs of the same transport and the transport by the same opcode on
        the other transports (when the space has them), each up to the first alternative whose run decides.
        Probing the halves apart keeps a verb change from slipping onto a different anomaly of the same symptom
        and reading as "the verb does not matter".
        """
        value = current[d.name]
        necessary = []
        for others, condition in _verb_halves(d, value):
            kept = self._half_kept(d.name, others, current, signature)
            if kept is None:
                necessary.append(condition)
            elif kept is not _UNTESTABLE:
                # alternatives that disagree (the simplest verb RC WRITE lost an RC READ anomaly, RC SEND kept
                # it): the half is not free, whatever the check below says; it excludes the values that lost
                # (the alternatives probed up to the one that kept: the others were not tested)
                probed = others[:others.index(kept) + 1]
                losing = [v for v in others if point_key({**current, d.name: v}) in self._lost]
                if losing:
                    necessary.append(_half_allowed(condition, value, [v for v in probed if v not in losing]))
                # a keep this far from the simplest case may have slipped onto another anomaly of the same
                # symptom (a UD SEND case moved to RC SEND meeting an RC SEND anomaly): checked again on the
                # simplified case, with the far sides
                rest = [v for v in others if v != kept]
                lost = partial(self._masked_then, d.name, kept, rest,
                               self._verb_conditions(d, [condition], current), signature=signature)
                self._far.append(_Check(d.name, kept, lost, alone=True))
        return self._verb_conditions(d, necessary, current)

    def _verb_conditions(self, d: Choice, necessary: list[Condition], current: Mapping[str, Any]
                         ) -> list[Condition]:
        """The verb's (``d``) necessary halves, transport first. A space with one UD verb pins its opcode with a
        necessary UD transport; a case whose flow cycles several opcodes (``opcode == MIXED``) leaves the opcode
        to the mix's conditions."""
        out = list(necessary)
        if self._feature_at(current, "opcode") == MIXED:
            return [c for c in out if c.feature != "opcode"]
        transport = next((c.value for c in out if c.feature == "transport"), None)
        ud = [v for v in d.values if v.startswith("UD_")]
        if transport == "UD" and len(ud) == 1 and not any(c.feature == "opcode" for c in out):
            out.append(Condition("opcode", "==", ud[0].split("_", 1)[1]))
        return sorted(out, key=lambda c: c.feature != "transport")

    def _half_kept(self, name: str, values: list[Any], current: dict[str, Any], signature: str) -> Any:
        """The first of ``values`` that keeps the anomaly when ``name`` moves to it, None if the verb half is
        necessary, :data:`_UNTESTABLE` if an alternative could not run.

        The half is necessary if the first alternative whose run decides loses the anomaly. A run that shows the
        anomaly's symptom behind a stronger one of another anomaly (RC SEND adding a receive-queue pause to a
        low-throughput anomaly that any RC verb shows) is *masked*: it decides nothing, and the next
        alternative is probed. If every alternative is masked, the half is necessary."""
        for v in values:
            point = {**current, name: v}
            kept = self._test(point, signature, f"{name} -> {v}")
            if kept is None and point_key(point) in self._masked:
                continue  # a known anomaly's region: the next alternative decides
            if kept is None:
                return _UNTESTABLE
            if kept:
                return v
            if point_key(point) not in self._masked:
                return None
        return None

    def _masked_then(self, name: str, first: Any, rest: list[Any], conditions: list[Condition],
                     current: dict[str, Any], signature: str) -> list[Condition]:
        """The lost callback of a verb check (its first alternative ``first`` lost the anomaly): ``conditions``,
        unless that run was masked and one of the other alternatives ``rest`` keeps the anomaly."""
        masked = point_key({**current, name: first}) in self._masked
        return list(conditions) if not masked or self._half_kept(name, rest, current, signature) is None else []

    def _simplified(self, d: Flag | OpcodePattern, current: dict[str, Any], signature: str) -> bool | None:
        """Whether ``d`` at its simplest value keeps the anomaly (``current`` moves there; True too when it is
        there already); None when that probe could not run."""
        if current[d.name] == d.simplest():
            return True
        kept = self._test({**current, d.name: d.simplest()}, signature, f"{d.name} -> {d.simplest()}")
        if kept:
            current[d.name] = d.simplest()
        return kept

    def _flag(self, d: Flag, current: dict[str, Any], signature: str) -> list[Condition] | None:
        kept = self._simplified(d, current, signature)
        if kept is None:
            return None
        return [] if kept else [Condition(d.name, "==", current[d.name])]

    def _mix(self, d: OpcodePattern, current: dict[str, Any], signature: str) -> list[Condition] | None:
        """The opcodes cycled with the verb's: none if the anomaly keeps without them; else only READ with WRITE
        (``read_write_mix == True``) or only the atomics (``atomics == True``) when the mix has them and that
        keeps it; else the mix as found (``opcode == MIXED``)."""
        value = list(current[d.name])
        kept = self._simplified(d, current, signature)
        if kept is None:
            return None
        if kept:
            return []
        first = str(self.space.complete(current)["op"]).split("_", 1)[1]
        pair = {"READ": ["WRITE"], "WRITE": ["READ"], "WRITE_IMM": ["READ"]}.get(first, ["READ", "WRITE"])
        narrower = (("read_write_mix", pair), ("atomics", [o for o in dict.fromkeys(value) if o in ATOMIC_OPCODES]))
        for flag, mix in narrower:
            if not mix or not self._feature_at(current, flag):
                continue
            if mix == value or self._still({**current, d.name: mix}, signature, f"{d.name} -> {mix}"):
                current[d.name] = mix
                return [Condition(flag, "==", True)]
        return [Condition("opcode", "==", MIXED)]

    def _numeric(self, d: IntRange | Choice, current: dict[str, Any], signature: str) -> list[Condition] | None:
        value, simplest = current[d.name], d.simplest()
        # the current value is on the ladder, so bisection only ever adopts values it has seen anomalous
        values = sorted(set(_ladder(d)) | {value})
        feature = PARAM_FEATURE.get(d.name)
        out: list[Condition] = []
        if value != simplest:
            kept = self._test({**current, d.name: simplest}, signature, f"{d.name} -> {simplest}")
            if kept is None:
                return None
            if kept:
                current[d.name] = simplest
            else:
                op = ">=" if _index(values, value) > _index(values, simplest) else "<="
                current[d.name], found = self._bisect(d.name, values, simplest, value, current, signature,
                                                      partial(self._edge_condition, d.name, feature, op),
                                                      places_case=True)
                return out + found
        if not self.settings.far_side:
            return out
        here = current[d.name]
        far = values[-1] if _index(values, here) <= len(values) // 2 else values[0]
        if far != here:
            self._far.append(_retreating(d.name, _from_to(values, far, here),
                                         lambda v: partial(self._far_edge, d, v, signature=signature)))
        return out

    def _far_edge(self, d: IntRange | Choice, far: Any, current: dict[str, Any], signature: str
                    ) -> list[Condition]:
        """The edge between the current value of ``d`` (anomalous) and ``far`` (not), as a condition."""
        here = current[d.name]
        values = sorted(set(_ladder(d)) | {here})
        op = "<=" if _index(values, far) > _index(values, here) else ">="
        return self._bisect(d.name, values, far, here, current, signature,
                            partial(self._edge_condition, d.name, PARAM_FEATURE.get(d.name), op))[1]

    def _edge_condition(self, name: str, feature: str | None, op: str, edge: Any, case: Mapping[str, Any]
                        ) -> list[Condition]:
        """``feature op`` its value at ``case`` with dimension ``name`` at ``edge`` (none without a feature)."""
        return [Condition(feature, op, self._feature_at({**case, name: edge}, feature))] if feature else []

    def _far_sides(self, group: list[_Check], current: dict[str, Any], signature: str) -> list[Condition]:
        """Checks of the simplified case, grouped: one probe applies every move of ``group`` at once.

        If the anomaly survives, none of the moves loses it (one experiment instead of one per move); if it
        vanishes or the grouped point is illegal, the group is split in halves. A single move that loses the
        anomaly (with a recheck) yields its conditions: the edge between here and there, bisected.
        """
        if not group:
            return []
        if len(group) == 1:
            # the farthest legal value of a single move (a message larger than its MR cannot run at all)
            check = next((c for c in (group[0], *group[0].fallbacks)
                          if self.space.is_valid({**current, c.name: c.value})), group[0])
            trial = {**current, check.name: check.value}
            why = f"{check.name} -> {check.value} (far side)"
            return check.lost(current) if self._gone(trial, signature, why) else []
        trial = {**current, **{c.name: c.value for c in group}}
        why = ", ".join(f"{c.name} -> {c.value}" for c in group) + " (far side)"
        if self._test(trial, signature, why, recheck=False):
            return []
        mid = len(group) // 2
        return self._far_sides(group[:mid], current, signature) + self._far_sides(group[mid:], current, signature)

    def _bisect(self, name: str, values: list[Any], bad: Any, good: Any, current: dict[str, Any],
                signature: str, make: Callable[[Any, Mapping[str, Any]], list[Condition]],
                places_case: bool = False) -> tuple[Any, list[Condition]]:
        """The edge between ``bad`` (the anomaly vanished there) and ``good`` (it showed) on ``values``: the
        value nearest ``bad`` that still shows the anomaly, and its conditions, ``make(edge, case)``.

        In a deferred run an edge takes ``search_bisect_steps`` steps; if it is still open, its conditions are
        those of the wide end (the ladder value next to the last one that lost the anomaly) until
        :meth:`finish`, and the value returned is the last one that kept it. ``places_case``: the caller puts
        the case at the value returned, so :meth:`finish` moves the case to the finished edge.
        """
        lo, hi = _index(values, bad), _index(values, good)
        steps = self.settings.bisect_steps
        if self._defer:
            taken = min(self.settings.search_bisect_steps, steps)
            lo, hi = self._narrow(name, values, lo, hi, taken, current, signature)
            refine = self._refinable(name, values[lo], values[hi]) if abs(hi - lo) == 1 else \
                self.settings.refine and isinstance(self.space.dimension(name), IntRange)
            wide = tuple(make(values[lo + (1 if hi > lo else -1)] if abs(hi - lo) > 1 else values[hi], current))
            edge = _OpenEdge(name, tuple(values), lo, hi, steps - taken, make, refine, wide, places_case)
            if edge.cost() and wide:  # an edge without a condition only places the case: nothing to finish
                self._open.append(edge)
                return values[hi], list(wide)
            return values[hi], make(values[hi], current)
        lo, hi = self._narrow(name, values, lo, hi, steps, current, signature)
        edge_value = self._closed(name, values, lo, hi, current, signature)
        return edge_value, make(edge_value, current)

    def _narrow(self, name: str, values: tuple[Any, ...] | list[Any], lo: int, hi: int, steps: int,
                current: Mapping[str, Any], signature: str) -> tuple[int, int]:
        """Up to ``steps`` bisection steps between indices ``lo`` (lost the anomaly) and ``hi`` (kept it)."""
        for _ in range(steps):
            if abs(hi - lo) <= 1:
                break
            mid = (lo + hi) // 2
            # no recheck: a noisy "vanished" here only moves the edge one step toward the anomalous side
            if self._test({**current, name: values[mid]}, signature, f"{name} -> {values[mid]} (bisect)",
                          recheck=False):
                hi = mid
            else:
                lo = mid
        return lo, hi

    def _closed(self, name: str, values: tuple[Any, ...] | list[Any], lo: int, hi: int,
                current: Mapping[str, Any], signature: str) -> Any:
        """The edge at the end of bisection: ``values[hi]``, or the refine probe's value when it keeps."""
        return self._refined(name, values[lo], values[hi], current, signature) if abs(hi - lo) == 1 \
            else values[hi]

    def _refined(self, name: str, bad: Any, good: Any, current: Mapping[str, Any], signature: str) -> Any:
        """``good``, or the integer at the geometric middle between ``bad`` and ``good`` if it still shows the
        anomaly (one probe), when ``name`` is an integer range and its neighbouring ladder values are more than
        :data:`_REFINE_RATIO` apart: a sqrt(2) ladder leaves an edge up to 41 % inside the true one, one more
        probe halves that. An ordered choice (the MTU) has no values between its own."""
        if not self._refinable(name, bad, good):
            return good
        mid = round(math.sqrt(bad * good))
        kept = self._test({**current, name: mid}, signature, f"{name} -> {mid} (refine)", recheck=False)
        return mid if kept else good

    def _refinable(self, name: str, bad: Any, good: Any) -> bool:
        """Whether :meth:`_refined` would probe between neighbouring ladder values ``bad`` and ``good``."""
        if not self.settings.refine or not isinstance(self.space.dimension(name), IntRange) \
                or max(bad, good) < _REFINE_RATIO * min(bad, good):
            return False
        return round(math.sqrt(bad * good)) not in (bad, good)

    def _feature_at(self, point: Mapping[str, Any], feature: str) -> Any:
        return getattr(features(self.space.build(point)), feature)

    def _sizes(self, d: SizeVector, current: dict[str, Any], signature: str) -> list[Condition]:
        sizes = list(current[d.name])
        single: list[int] | None = sizes[:1]
        if len(set(sizes)) > 1:
            # the smallest, the largest, then the sizes that set the tails (line_tail, tail_packet)
            line, tail, mtu = (self._feature_at(current, f) for f in ("line_tail", "tail_packet", "mtu"))
            carriers = [s for s in sizes if line and s % CACHE_LINE == line][:1] \
                + [s for s in sizes if tail and s > mtu and s - (s - 1) // mtu * mtu == tail][:1]
            single = next(([s] for s in dict.fromkeys((min(sizes), max(sizes), *carriers))
                           if self._still({**current, d.name: [s]}, signature, f"sizes -> {[s]}")), None)
        if single is None:
            mix = [min(sizes), max(sizes)]
            if self._still({**current, d.name: mix}, signature, f"sizes -> {mix}"):
                current[d.name] = mix
            # the anomaly needs sizes of several kinds: a mix of small and large ones when the case has one,
            # else (sizes between SMALL_MSG and LARGE_MSG) just more than one size
            if self._feature_at(current, "size_mix"):
                return [Condition("size_mix", "==", True)]
            return [Condition("sizes", ">=", 2)]
        current[d.name] = single
        conditions, ladder = self._boundary(d, current, signature)
        here = current[d.name][0]
        for end in (ladder[0], ladder[-1]):
            if end != here:
                check = _retreating(d.name, [[e] for e in _from_to(ladder, end, here)],
                                    lambda v: partial(self._size_edge, d, sizes, ladder, v[0], signature=signature))
                # a smaller message clamps the SGEs (send and receive): grouped, it would hide their far sides
                self._far.append(dataclasses.replace(check, alone=end < here))
        return conditions

    def _boundary(self, d: SizeVector, current: dict[str, Any], signature: str
                  ) -> tuple[list[Condition], list[int]]:
        """The simplest single size near the current one that keeps the anomaly, the conditions on where it
        sits against a boundary, and the ladder its magnitude's edges are bisected on.

        A power of two stays (one under 64 B, all tail, unless a cache line more loses the anomaly). Otherwise
        the nearest power of two is tried, then the other one around the size; if both lose the anomaly, the
        size's tail decides: whole cache lines (the size rounded down to 64 B)
        keeping the anomaly frees ``line_tail`` and a whole last packet frees ``tail_packet``; a tail that is
        necessary is bisected on its offset from the boundary (:meth:`_tail`), and the magnitude is then the
        power of two nearest the boundary, the tail added, on a ladder of powers of two plus that tail."""
        v = current[d.name][0]
        rounds = [1 << e for e in range((d.lo - 1).bit_length(), d.hi.bit_length())]
        if v not in rounds:
            below = d.nearest_round(1 << (v.bit_length() - 1))
            near = d.nearest_round(v)
            for r in dict.fromkeys((near, below if near != below else d.nearest_round(2 * below))):
                if self._still({**current, d.name: [r]}, signature, f"sizes -> {[r]} (round)"):
                    current[d.name], v = [r], r
                    break
        if v in rounds:
            # a round size under a cache line is all tail: one line more tells a small message from its tail
            if v >= CACHE_LINE or not self._still({**current, d.name: [v + CACHE_LINE]}, signature,
                                                  f"sizes -> {[v + CACHE_LINE]} (the same line tail, a line more)"):
                return [], rounds
            current[d.name], v = [v + CACHE_LINE], v + CACHE_LINE
        mtu = self._feature_at(current, "mtu")
        if v % CACHE_LINE:
            whole = max(CACHE_LINE, v - v % CACHE_LINE)
            if not self._still({**current, d.name: [whole]}, signature, f"sizes -> {[whole]} (whole cache lines)"):
                # line_tail, unless the last packet's payload is what matters: the same line tail in a last
                # packet of another length tells them apart
                tail = self._feature_at(current, "tail_packet")
                other = v - tail + v % CACHE_LINE + (0 if tail > mtu - CACHE_LINE else mtu - CACHE_LINE)
                if not tail or self._still({**current, d.name: [other]}, signature,
                                           f"sizes -> {[other]} (the same line tail, another last packet)"):
                    return self._tail(d, "line_tail", CACHE_LINE, CACHE_LINE - 1, current, signature)
                return self._tail(d, "tail_packet", mtu, mtu, current, signature)
            current[d.name], v = [whole], whole
        tail = self._feature_at(current, "tail_packet")
        if tail and tail != mtu:
            whole = v - tail + mtu
            if not self._still({**current, d.name: [whole]}, signature, f"sizes -> {[whole]} (whole last packet)"):
                return self._tail(d, "tail_packet", mtu, mtu, current, signature)
            current[d.name], v = [whole], whole
        return [], sorted({*rounds, v})

    def _tail(self, d: SizeVector, feature: str, unit: int, top: int, current: dict[str, Any], signature: str
              ) -> tuple[list[Condition], list[int]]:
        """Conditions on ``feature``, the size's offset ``o`` from a multiple of ``unit`` (1..``top``), which the
        anomaly needs: ``feature >= lower`` and, when the offset ``top`` loses it, ``feature <= upper``, each edge
        bisected on the offset. The case moves to the lower edge on the power of two nearest its boundary."""
        v = current[d.name][0]
        offset = self._feature_at(current, feature)
        base = v - offset

        def kept(o: int, why: str, recheck: bool = False) -> bool:
            return self._test({**current, d.name: [base + o]}, signature, f"sizes -> {[base + o]} ({why})",
                              recheck=recheck) is True

        lower = offset
        if offset > 1 and kept(1, f"{feature} -> 1", recheck=True):
            lower = 1
        elif offset > 1:
            lower = self._offset_edge(1, offset, kept, feature)
        conditions = [Condition(feature, ">=", lower)]
        if offset < top and not kept(top, f"{feature} -> {top}", recheck=True):
            conditions.append(Condition(feature, "<=", self._offset_edge(top, offset, kept, feature)))
        current[d.name] = [base + lower]
        if base and base & (base - 1):
            # the boundary's magnitude: the nearest power of two (a multiple of the unit), then the other one
            below = 1 << (base.bit_length() - 1)
            for p in dict.fromkeys((d.nearest_round(base), below, 2 * below)):
                if p + lower <= d.hi and self._still({**current, d.name: [p + lower]}, signature,
                                                     f"sizes -> {[p + lower]} (round boundary)"):
                    current[d.name] = [p + lower]
                    break
        rounds = [p + lower for p in (1 << e for e in range(unit.bit_length() - 1, d.hi.bit_length()))
                  if p + lower <= d.hi]
        return conditions, sorted({*rounds, current[d.name][0]})

    @staticmethod
    def _offset_edge(bad: int, good: int, kept: Callable[[int, str], bool], feature: str) -> int:
        """The offset nearest ``bad`` (lost the anomaly) that keeps it, bisected down from ``good`` (kept)."""
        while abs(good - bad) > 1:
            mid = (bad + good) // 2
            if kept(mid, f"{feature} -> {mid} (bisect)"):
                good = mid
            else:
                bad = mid
        return good

    def _size_edge(self, d: SizeVector, sizes: list[int], ladder: list[int], end: int, current: dict[str, Any],
                   signature: str) -> list[Condition]:
        """The edge between the current single size (anomalous) and ``end`` (not), as a condition, bisected on
        ``ladder``.

        When the original pattern ``sizes`` held no message beyond the edge's side, it cannot tell whether the
        anomaly needs every message on this side of the edge or only one: one probe of the case with a message
        of ``end`` size added decides (kept: only the largest, or smallest, message matters)."""
        v = current[d.name][0]
        lower = end < v
        pattern = list(sizes)
        if (min(sizes) >= v) if lower else (max(sizes) <= v):
            mix = sorted([end, v])
            if self._test({**current, d.name: mix}, signature, f"sizes -> {mix} (one message beyond)",
                          recheck=False):
                pattern.append(end)
        return self._bisect(d.name, [[e] for e in ladder], [end], [v], current, signature,
                            partial(_size_condition, pattern, lower))[1]


def _size_condition(sizes: list[int], lower: bool, edge: list[int], case: Mapping[str, Any]) -> list[Condition]:
    """The condition of a single-size edge (a ``lower`` one: the anomaly needs messages of ``edge[0]`` or more).

    The original pattern ``sizes`` was anomalous: if it held sizes beyond the edge, only its largest (for a lower
    edge) or smallest (for an upper edge) message can be what the anomaly needs."""
    value = int(edge[0])
    if lower:
        return [Condition("max_msg" if min(sizes) < value else "min_msg", ">=", value)]
    return [Condition("min_msg" if max(sizes) > value else "max_msg", "<=", value)]


@dataclass(frozen=True)
class _OpenEdge:
    """An edge a deferred run left open: ``values[lo]`` lost the anomaly, ``values[hi]`` kept it.

    ``steps`` bisection steps are left; ``make(edge, case)`` gives its conditions, ``wide`` those standing in the
    MFS until it is finished."""

    name: str
    values: tuple[Any, ...]
    lo: int
    hi: int
    steps: int
    make: Callable[[Any, Mapping[str, Any]], list[Condition]]
    #: a refine probe may follow the bisection
    refine: bool
    wide: tuple[Condition, ...]
    #: the case sits at the edge's value (an edge found from the simplest value), so finishing moves it there
    places_case: bool = False

    def cost(self) -> int:
        """At most how many probes finishing takes (the bisection steps left, and the refine probe)."""
        return min(self.steps, math.ceil(math.log2(abs(self.hi - self.lo)))) + int(self.refine)


@dataclass(frozen=True)
class _Check:
    """A move of the simplified case along one dimension (``name`` to ``value``) that should keep the anomaly;
    ``lost(current)`` gives the conditions it implies when it does not (bisecting an edge if needed)."""

    name: str
    value: Any
    lost: Callable[[dict[str, Any]], list[Condition]]
    #: probed on its own: a verb change grouped with others can slip onto another anomaly of the same symptom
    alone: bool = False
    #: the same move to values nearer the case, the first legal one probed alone when ``value`` is illegal
    fallbacks: tuple[_Check, ...] = ()


def _retreating(name: str, values: list[Any], lost: Callable[[Any], Callable[[dict[str, Any]], list[Condition]]]
                ) -> _Check:
    """A check of ``name`` moving to ``values[0]``, falling back on the later ``values`` (each with its
    ``lost(value)`` callback) when that is illegal."""
    checks = [_Check(name, v, lost(v)) for v in values]
    return dataclasses.replace(checks[0], fallbacks=tuple(checks[1:]))


def _from_to(values: list[Any], far: Any, here: Any) -> list[Any]:
    """The values of ``values`` from ``far`` toward ``here``, ``here`` excluded."""
    i, j = _index(values, far), _index(values, here)
    return values[i:j] if i < j else values[i:j:-1]


def _verb_halves(d: Choice, value: str) -> list[tuple[list[str], Condition]]:
    """Probes for the halves of verb ``value``: the same opcode on every other transport (they test the
    transport) and every other opcode on the same transport (they test the opcode), each half with the condition
    it implies when it is necessary. A half without alternatives is left out."""
    transport, opcode = value.split("_", 1)
    halves = (
        ([v for v in d.values if v.endswith(f"_{opcode}") and v != value], ("transport", transport)),
        ([v for v in d.values if v.startswith(f"{transport}_") and v != value], ("opcode", opcode)),
    )
    return [(others, Condition(feature, "==", v)) for others, (feature, v) in halves if others]


def _half_value(condition: Condition, verb: str) -> str:
    """The part of ``verb`` (``RC_READ``) that ``condition``'s half speaks of: ``RC`` or ``READ``."""
    transport, opcode = verb.split("_", 1)
    return transport if condition.feature == "transport" else opcode


def _half_allowed(condition: Condition, value: str, allowed: list[str]) -> Condition:
    """The half of ``condition`` (``opcode == READ``, from verb ``value``) widened to the halves of the
    ``allowed`` verbs too: ``opcode in {READ, SEND}``."""
    return Condition(condition.feature, "in",
                     tuple(sorted({_half_value(condition, v) for v in (value, *allowed)})))


def _superseded(conditions: list[Condition]) -> list[Condition]:
    """``conditions`` without an ``in`` on a feature that an ``==`` also pins (the verb check that found the
    half necessary after all narrows the disagreeing alternatives' set)."""
    pinned = {c.feature for c in conditions if c.op == "=="}
    return [c for c in conditions if c.op != "in" or c.feature not in pinned]


def _ladder(d: IntRange | Choice) -> list[Any]:
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


def _index(values: list[Any], v: Any) -> int:
    if v in values:
        return values.index(v)
    return min(range(len(values)), key=lambda i: abs(values[i] - v))


def _categorical_conditions(space: SearchSpace, name: str, value: Any) -> list[Condition]:
    """Conditions that pin a necessary categorical value, in feature terms."""
    f = features(space.build({name: value}))
    if name == "op":
        return [Condition("transport", "==", f.transport), Condition("opcode", "==", f.opcode)]
    if name == "direction":
        flags = [Condition(x, "==", True) for x in _DIRECTION_FLAGS if getattr(f, x)]
        return flags or [Condition(x, "==", False) for x in _DIRECTION_FLAGS]
    if name == "memory":
        if value == "local":
            return [Condition("remote_numa", "==", False), Condition("gpu", "==", False)]
        return [Condition("remote_numa" if value == "remote" else "gpu", "==", True)]
    return []


def off_edges(space: SearchSpace, mfs: MFS, point: Mapping[str, Any]) -> list[Condition]:
    """The numeric conditions of ``mfs`` that the case ``point`` does not sit at (none for a minimized case).

    A minimized case sits at each edge of its MFS, the simplest value that keeps the condition: the feature
    equals the condition's value, unless the dimension driving it holds its simplest value inside the region
    (an upper edge found from the simplest value). Message sizes are not held to it: a size edge is found by a
    far-side check of the case's one size, which stays as found (moving it down to a lower edge changed what
    the other dimensions were checked against, and the campaigns found fewer planted anomalies).
    """
    f = features(space.build(point))
    off: list[Condition] = []
    for c in mfs.conditions:
        if c.op not in (">=", "<=") or getattr(f, c.feature) == c.value:
            continue
        if c.feature in _SIZE_FEATURES:
            continue
        drivers = [p for p, feature in PARAM_FEATURE.items() if feature == c.feature and p in point]
        if not any(point[p] == space.dimension(p).simplest() for p in drivers):
            off.append(c)
    return off


def moved_to(space: SearchSpace, case: Mapping[str, Any], point: Mapping[str, Any],
             feature_names: list[str]) -> dict[str, Any] | None:
    """``case`` with the dimensions that drive ``feature_names`` taken from ``point``.

    Used to check that a point just past a known MFS's edge is that anomaly and not another one of the same
    symptom: the known minimal case moved to the new value must still show it. None when some feature has no
    dimension of its own (then the point is minimized instead).
    """
    moved = dict(case)
    for name in feature_names:
        dims = [p for p, f in PARAM_FEATURE.items() if f == name and p in point]
        if name in _SIZE_FEATURES and "sizes" in point:
            dims.append("sizes")
        if name == "qps_total" and "processes" in point:
            dims.append("processes")  # the total counts every process's QPs
        if not dims:
            return None
        moved.update({d: point[d] for d in dims})
    return moved
