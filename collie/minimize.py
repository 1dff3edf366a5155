"""From one anomalous point, the minimal feature set (MFS) and the simplest concrete case that still shows it.

The minimizer only sees verdicts: it calls ``probe(point) -> Verdict | None`` (``None`` = the point could not
run) and never looks inside the target. It works dimension by dimension, in the way of Hypothesis's shrinker:
a change is kept only if the anomaly (same signature) survives it, so the current point is anomalous at
every step (the invariant), and it only ever becomes simpler. The general moves (probes and their recheck rule,
settled points, group probes, bisection and refine, deferred edges, checks of the simplified case, the
confirmation) are :class:`collie.shrink.Shrinker`'s, which knows nothing of RDMA; this module is the RDMA policy
that composes them, with its data: the space's shrink order (``SearchSpace.shrink_order``, a space file's
``[minimize] order``), the features each parameter drives (:data:`DRIVES`) and the halves of a verb
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
      where another anomaly's stronger symptom masks this one deciding nothing; a half whose alternative kept
      the anomaly is checked again on the simplified case, where a slip onto another anomaly is less likely);
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
      moved to the lower edge beside a power of two (see :meth:`Minimizer._boundary`);
    * a dimension whose probe could not run is tried once more, when the others are simpler;
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from collie.mfs import MFS, Condition
from collie.model.dimensions import Choice, Dimension, Flag, IntRange, OpcodePattern, SizeVector
from collie.model.features import CACHE_LINE, features
from collie.model.flow import ATOMIC_OPCODES, MIXED
from collie.model.space import SearchSpace
from collie.oracle import Verdict
from collie.shrink import Check, MinimizeSettings, Seen, Shrinker, from_to, ladder, nearest_index, retreating

__all__ = ["DRIVES", "VERB_PARTS", "MinimizeResult", "MinimizeSettings", "Minimizer", "moved_to", "off_edges"]

Probe = Callable[[Mapping[str, Any]], "Verdict | None"]

#: The features each parameter drives (the MFS speaks in features, like the simulator and reports): a numeric
#: parameter's edges are stated in its first; a case moved to a point's value of a feature takes every parameter
#: that drives it (:func:`moved_to`), the QPs with the processes they are split over.
DRIVES: Final[Mapping[str, tuple[str, ...]]] = {
    "qps": ("qps_total",), "mrs": ("mrs_host",), "mr_size": ("mr_size",), "batch": ("batch",), "sges": ("sges",),
    "wq_depth": ("wq_depth",), "mtu": ("mtu",), "processes": ("processes", "qps_total"), "inline": ("inline",),
    "signal_every": ("signal_every",), "rq_depth": ("rq_depth",), "recv_batch": ("recv_batch",),
    "recv_sges": ("recv_sges",), "recv_delay_us": ("recv_delay_us",), "mr_churn": ("mr_churn",),
    "qp_churn": ("qp_churn",),
    "sizes": ("max_msg", "min_msg", "sizes", "size_mix", "line_tail", "tail_packet"),
}
#: The halves of a verb (``RC_READ``: transport ``RC``, opcode ``READ``), tested apart when the verb is necessary.
VERB_PARTS: Final = ("transport", "opcode")
_DIRECTION_FLAGS: Final = ("bidirectional", "loopback", "incast")
#: What :meth:`Minimizer._half_kept` returns when an alternative verb could not run.
_UNTESTABLE: Final = object()


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
        self._signature = ""

    @property
    def experiments(self) -> int:
        """Probes run so far."""
        return self._shrink.experiments

    @property
    def steps(self) -> list[dict[str, Any]]:
        """One entry per probe decision: why, whether the anomaly kept, the point, how many runs."""
        return self._shrink.steps

    def _seen(self, point: Mapping[str, Any]) -> Seen | None:
        """What a run of ``point`` showed of the anomaly: kept when anomalous with the same leading symptom."""
        verdict = self._probe(point)
        if verdict is None:
            return None
        signature = self._signature
        return Seen(verdict.anomalous and verdict.leading == signature, verdict.shows(signature),
                    verdict.levels.get(signature))

    def run(self, point: Mapping[str, Any], verdict: Verdict, defer: bool = False) -> MinimizeResult:
        """Minimize ``point`` (which showed ``verdict``); with ``defer``, leave edges open for :meth:`finish`."""
        # a change is kept only if the run shows the same leading symptom (kind and end)
        self._signature = verdict.leading
        self._shrink.defer = defer
        # a point of a smaller or older space (workloads/paper.toml, a case recorded before a dimension existed:
        # no mix, no rq_depth) lacks some dimensions; each starts where the point's workload has it
        current = {**self.space.point_of(self.space.build(point)), **point}
        conditions: list[Condition] = []
        # the space's order: by default topology first (fewer flows, plainer memory), as a shrinker deletes
        # structure before it edits values: a verb change tried early can slip onto a different anomaly with the
        # same symptom (a READ incast turned WRITE pauses for another reason); the opcode mix before the verb (the
        # verb's opcode condition depends on whether the flow is mixed); sizes after the others (they interact
        # with MTU and MR size). A dimension whose probe could not run is tried once more at the end, when the
        # others are simpler.
        order = self.space.shrink_order
        rest = order.index("*")
        named = [[d for n in names for d in self.space.dimensions if d.name == n]
                 for names in (order[:rest], order[rest + 1:])]
        retry: list[Dimension] = []
        for d in named[0]:
            conditions += self._single(d, current, retry)
        # the others are simplified in groups: most anomalies need few of them
        conditions += self._shrink.group([d for d in self.space.dimensions if d.name not in order], current,
                                         partial(self._single, current=current, retry=retry))
        for d in named[1]:
            conditions += self._single(d, current, retry)
        for d in retry:
            conditions += self._dimension(d, current) or []
        conditions += self._shrink.check_far(current)
        confirmed = self._shrink.confirm(current)
        if not confirmed:
            # the simplified case does not hold up: keep the original (confirmed) point as the case
            current = dict(point)
        return MinimizeResult(MFS(verdict.signature, tuple(_superseded(conditions))), current, confirmed,
                              self.experiments, self.steps)

    @property
    def open_edges(self) -> int:
        """Edges of the last deferred run's MFS still at the wide end of their bracket (see :meth:`finish`)."""
        return len(self._shrink.open)

    def open_cost(self) -> int:
        """At most how many probes :meth:`finish` takes (with the confirmation of a case it moves)."""
        return self._shrink.open_cost()

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
        conditions, case = self._shrink.finish_edges(list(result.mfs.conditions), dict(result.point))
        point, confirmed = result.point, result.confirmed
        if case != result.point and self._shrink.confirm(case):
            point, confirmed = case, True
        return MinimizeResult(MFS(result.mfs.signature, tuple(conditions)), point, confirmed,
                              self.experiments, self.steps)

    def _single(self, d: Dimension, current: dict[str, Any], retry: list[Dimension]) -> list[Condition]:
        """:meth:`_dimension`, with ``d`` put on ``retry`` when its key probe could not run."""
        found = self._dimension(d, current)
        if found is None:
            retry.append(d)
        return found or []

    def _dimension(self, d: Dimension, current: dict[str, Any]) -> list[Condition] | None:
        """Conditions dimension ``d`` contributes (None: its key probe could not run)."""
        if isinstance(d, SizeVector):
            return self._sizes(d, current)
        if isinstance(d, OpcodePattern):
            return self._mix(d, current)
        if isinstance(d, Choice) and not d.ordered and not isinstance(d.values[0], int):
            return self._categorical(d, current)
        if isinstance(d, Flag):
            return self._flag(d, current)
        return self._numeric(d, current)

    def _categorical(self, d: Choice, current: dict[str, Any]) -> list[Condition] | None:
        value = current[d.name]
        simplest = d.simplest()
        if value != simplest:
            trial = {**current, d.name: simplest}
            kept = self._shrink.test(trial, f"{d.name} -> {simplest}")
            if kept is None and d.name == "op" and self._shrink.masked(trial):
                return self._verb(d, current)  # a known anomaly's region: the verb's halves decide
            if kept is None:
                return None
            if not kept:
                return self._verb(d, current) if d.name == "op" else \
                    _categorical_conditions(self.space, d.name, value)
            current[d.name] = simplest
        if d.name == "op":
            # the verb is not necessary, but its transport or opcode may be: checked at the end, with the far sides
            for others, condition in _verb_halves(d, simplest):
                lost = partial(self._masked_then, d.name, others[0], others[1:],
                               self._verb_conditions(d, [condition], current))
                self._shrink.far.append(Check(d.name, others[0], lost, alone=True))
        return []

    def _verb(self, d: Choice, current: dict[str, Any]) -> list[Condition]:
        """Whether the transport, the opcode or both of the current verb are necessary.

        The opcode is tested by the other verbs of the same transport and the transport by the same opcode on
        the other transports (when the space has them), each up to the first alternative whose run decides.
        Probing the halves apart keeps a verb change from slipping onto a different anomaly of the same symptom
        and reading as "the verb does not matter".
        """
        value = current[d.name]
        necessary = []
        for others, condition in _verb_halves(d, value):
            kept = self._half_kept(d.name, others, current)
            if kept is None:
                necessary.append(condition)
            elif kept is not _UNTESTABLE:
                # alternatives that disagree (the simplest verb RC WRITE lost an RC READ anomaly, RC SEND kept
                # it): the half is not free, whatever the check below says; it excludes the values that lost
                # (the alternatives probed up to the one that kept: the others were not tested)
                probed = others[:others.index(kept) + 1]
                losing = [v for v in others if self._shrink.settled({**current, d.name: v})]
                if losing:
                    necessary.append(_half_allowed(condition, value, [v for v in probed if v not in losing]))
                # a keep this far from the simplest case may have slipped onto another anomaly of the same
                # symptom (a UD SEND case moved to RC SEND meeting an RC SEND anomaly): checked again on the
                # simplified case, with the far sides
                rest = [v for v in others if v != kept]
                lost = partial(self._masked_then, d.name, kept, rest, self._verb_conditions(d, [condition], current))
                self._shrink.far.append(Check(d.name, kept, lost, alone=True))
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

    def _half_kept(self, name: str, values: list[Any], current: dict[str, Any]) -> Any:
        """The first of ``values`` that keeps the anomaly when ``name`` moves to it, None if the verb half is
        necessary, :data:`_UNTESTABLE` if an alternative could not run.

        The half is necessary if the first alternative whose run decides loses the anomaly. A run that shows the
        anomaly's symptom behind a stronger one of another anomaly (RC SEND adding a receive-queue pause to a
        low-throughput anomaly that any RC verb shows) is *masked*: it decides nothing, and the next
        alternative is probed. If every alternative is masked, the half is necessary."""
        for v in values:
            point = {**current, name: v}
            kept = self._shrink.test(point, f"{name} -> {v}")
            if kept is None and self._shrink.masked(point):
                continue  # a known anomaly's region: the next alternative decides
            if kept is None:
                return _UNTESTABLE
            if kept:
                return v
            if not self._shrink.masked(point):
                return None
        return None

    def _masked_then(self, name: str, first: Any, rest: list[Any], conditions: list[Condition],
                     current: dict[str, Any]) -> list[Condition]:
        """The lost callback of a verb check (its first alternative ``first`` lost the anomaly): ``conditions``,
        unless that run was masked and one of the other alternatives ``rest`` keeps the anomaly."""
        masked = self._shrink.masked({**current, name: first})
        return list(conditions) if not masked or self._half_kept(name, rest, current) is None else []

    def _simplified(self, d: Flag | OpcodePattern, current: dict[str, Any]) -> bool | None:
        """Whether ``d`` at its simplest value keeps the anomaly (``current`` moves there; True too when it is
        there already); None when that probe could not run."""
        if current[d.name] == d.simplest():
            return True
        kept = self._shrink.test({**current, d.name: d.simplest()}, f"{d.name} -> {d.simplest()}")
        if kept:
            current[d.name] = d.simplest()
        return kept

    def _flag(self, d: Flag, current: dict[str, Any]) -> list[Condition] | None:
        kept = self._simplified(d, current)
        if kept is None:
            return None
        return [] if kept else [Condition(d.name, "==", current[d.name])]

    def _mix(self, d: OpcodePattern, current: dict[str, Any]) -> list[Condition] | None:
        """The opcodes cycled with the verb's: none if the anomaly keeps without them; else only READ with WRITE
        (``read_write_mix == True``) or only the atomics (``atomics == True``) when the mix has them and that
        keeps it; else the mix as found (``opcode == MIXED``)."""
        value = list(current[d.name])
        kept = self._simplified(d, current)
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
            if mix == value or self._shrink.still({**current, d.name: mix}, f"{d.name} -> {mix}"):
                current[d.name] = mix
                return [Condition(flag, "==", True)]
        return [Condition("opcode", "==", MIXED)]

    def _numeric(self, d: IntRange | Choice, current: dict[str, Any]) -> list[Condition] | None:
        value, simplest = current[d.name], d.simplest()
        # the current value is on the ladder, so bisection only ever adopts values it has seen anomalous
        values = sorted(set(ladder(d)) | {value})
        feature = _edge_feature(d.name)
        out: list[Condition] = []
        if value != simplest:
            kept = self._shrink.test({**current, d.name: simplest}, f"{d.name} -> {simplest}")
            if kept is None:
                return None
            if kept:
                current[d.name] = simplest
            else:
                op = ">=" if nearest_index(values, value) > nearest_index(values, simplest) else "<="
                current[d.name], found = self._shrink.bisect(
                    d.name, values, simplest, value, current, partial(self._edge_condition, d.name, feature, op),
                    places_case=True)
                return out + found
        if not self.settings.far_side:
            return out
        here = current[d.name]
        far = values[-1] if nearest_index(values, here) <= len(values) // 2 else values[0]
        if far != here:
            self._shrink.far.append(retreating(d.name, from_to(values, far, here),
                                               lambda v: partial(self._far_edge, d, v)))
        return out

    def _far_edge(self, d: IntRange | Choice, far: Any, current: dict[str, Any]) -> list[Condition]:
        """The edge between the current value of ``d`` (anomalous) and ``far`` (not), as a condition."""
        here = current[d.name]
        values = sorted(set(ladder(d)) | {here})
        op = "<=" if nearest_index(values, far) > nearest_index(values, here) else ">="
        return self._shrink.bisect(d.name, values, far, here, current,
                                   partial(self._edge_condition, d.name, _edge_feature(d.name), op))[1]

    def _edge_condition(self, name: str, feature: str | None, op: str, edge: Any, case: Mapping[str, Any]
                        ) -> list[Condition]:
        """``feature op`` its value at ``case`` with dimension ``name`` at ``edge`` (none without a feature)."""
        return [Condition(feature, op, self._feature_at({**case, name: edge}, feature))] if feature else []

    def _feature_at(self, point: Mapping[str, Any], feature: str) -> Any:
        return getattr(features(self.space.build(point)), feature)

    def _sizes(self, d: SizeVector, current: dict[str, Any]) -> list[Condition]:
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

        When the original pattern ``sizes`` held no message beyond the edge's side, it cannot tell whether the
        anomaly needs every message on this side of the edge or only one: one probe of the case with a message
        of ``end`` size added decides (kept: only the largest, or smallest, message matters)."""
        v = current[d.name][0]
        lower = end < v
        pattern = list(sizes)
        if (min(sizes) >= v) if lower else (max(sizes) <= v):
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


def _edge_feature(name: str) -> str | None:
    """The feature a numeric parameter's edges are stated in (:data:`DRIVES`), None if it drives none."""
    return DRIVES.get(name, (None,))[0]


def _verb_halves(d: Choice, value: str) -> list[tuple[list[str], Condition]]:
    """Probes for the halves of verb ``value`` (:data:`VERB_PARTS`): the same opcode on every other transport
    (they test the transport) and every other opcode on the same transport (they test the opcode), each half with
    the condition it implies when it is necessary. A half without alternatives is left out."""
    transport, opcode = value.split("_", 1)
    halves = (
        ([v for v in d.values if v.endswith(f"_{opcode}") and v != value], (VERB_PARTS[0], transport)),
        ([v for v in d.values if v.startswith(f"{transport}_") and v != value], (VERB_PARTS[1], opcode)),
    )
    return [(others, Condition(feature, "==", v)) for others, (feature, v) in halves if others]


def _half_value(condition: Condition, verb: str) -> str:
    """The part of ``verb`` (``RC_READ``) that ``condition``'s half speaks of: ``RC`` or ``READ``."""
    return verb.split("_", 1)[VERB_PARTS.index(condition.feature)]


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


def _categorical_conditions(space: SearchSpace, name: str, value: Any) -> list[Condition]:
    """Conditions that pin a necessary categorical value, in feature terms."""
    f = features(space.build({name: value}))
    if name == "op":
        return [Condition(part, "==", getattr(f, part)) for part in VERB_PARTS]
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
        if c.feature in DRIVES["sizes"]:
            continue
        drivers = [p for p in DRIVES if _edge_feature(p) == c.feature and p in point]
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
