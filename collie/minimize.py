"""From one anomalous point, the minimal feature set (MFS) and the simplest concrete case that still shows it.

The minimizer only sees verdicts: it calls ``probe(point) -> Verdict | None`` (``None`` = the point could not
run) and never looks inside the target. It works dimension by dimension, in the way of Hypothesis's shrinker:
a change is kept only if the anomaly (same signature) survives it, so the current point is anomalous at
every step (the invariant), and it only ever becomes simpler.

Per dimension:
    * categorical (``op``, ``direction``, ``memory``): try the simplest value; if the anomaly vanishes the
      current value is necessary (an ``==``/flag condition), else adopt the simplest; the verb's transport and
      opcode are then tested apart (another opcode on the same transport, the same opcode on another one);
    * ordered or numeric: try the simplest value; if the anomaly vanishes, bisect (on the log scale) for the
      edge of the region and record ``feature >= edge`` (or ``<=``); if it survives, adopt it; the far bounds
      of all such dimensions are probed together at the end, a group split in halves only when the anomaly
      vanishes there, and a single dimension that loses it is bisected for an upper edge the same way;
    * the size pattern: all-small, then all-large; if neither single size keeps the anomaly, a mix is
      necessary (``size_mix == true``); otherwise the bounds of the single size are found as above.
A final confirmation re-runs the simplest case ``runs`` times and requires ``required`` anomalous runs (a probe
that already kept that exact case counts as one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from collie.dimensions import Choice, Dimension, Flag, IntRange, SizeVector
from collie.features import features
from collie.mfs import MFS, Condition
from collie.oracle import Verdict
from collie.space import SearchSpace

Probe = Callable[[Mapping[str, Any]], "Verdict | None"]

#: The feature each numeric parameter drives (the MFS speaks in features, like the simulator and reports).
PARAM_FEATURE: Final[Mapping[str, str]] = {
    "qps": "qps_total", "mrs": "mrs_host", "mr_size": "mr_size", "batch": "batch", "sges": "sges",
    "wq_depth": "wq_depth", "mtu": "mtu", "processes": "processes", "inline": "inline",
    "signal_every": "signal_every",
}
_DIRECTION_FLAGS: Final = ("bidirectional", "loopback", "incast")
_TOPOLOGY: Final = ("direction", "memory")


@dataclass(frozen=True)
class MinimizeSettings:
    """Preset ``[minimize]`` table."""

    runs: int = 3
    required: int = 2
    bisect_steps: int = 5
    far_side: bool = True
    recheck: bool = True


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

    def __init__(self, space: SearchSpace, probe: Probe, settings: MinimizeSettings | None = None) -> None:
        self.space = space
        self._probe = probe
        self.settings = settings or MinimizeSettings()
        self.experiments = 0
        self.steps: list[dict[str, Any]] = []
        # (dimension, far bound) of every dimension whose far side is still to be probed
        self._far: list[tuple[IntRange | Choice, Any]] = []

    def _test(self, point: Mapping[str, Any], signature: str, why: str, recheck: bool = True) -> bool | None:
        """True: the anomaly survives at ``point``; False: it vanished; None: ``point`` cannot be tested
        (illegal in the space, or the target could not run it). ``recheck=False`` for probes whose "vanished"
        decides nothing on its own (a bisection step, a grouped probe that is split next)."""
        if not self.space.is_valid(point):
            return None
        runs = 1
        verdict = self._probe(point)
        kept = None if verdict is None else verdict.anomalous and verdict.leading == signature
        if kept is False and recheck and self.settings.recheck:
            # "vanished" makes a feature necessary: a second run guards against noise near a threshold
            runs = 2
            again = self._probe(point)
            kept = None if again is None else again.anomalous and again.leading == signature
        self.experiments += runs
        self.steps.append({"why": why, "kept": kept, "point": dict(point), "runs": runs})
        return kept

    def _still(self, point: Mapping[str, Any], signature: str, why: str) -> bool:
        return self._test(point, signature, why) is True

    def _gone(self, point: Mapping[str, Any], signature: str, why: str) -> bool:
        return self._test(point, signature, why) is False

    def run(self, point: Mapping[str, Any], verdict: Verdict) -> MinimizeResult:
        # a change is kept only if the run shows the same leading symptom (kind and end)
        signature = verdict.leading
        current = dict(point)
        conditions: list[Condition] = []
        # sizes last (they interact with MTU and MR size); a dimension whose probe could not run is tried
        # once more at the end, when the others are simpler
        # topology first (fewer flows, plainer memory), as a shrinker deletes structure before it edits
        # values: a verb change tried early can slip onto a different anomaly with the same symptom (a READ
        # incast turned WRITE pauses for another reason)
        first = [d for d in self.space.dimensions if d.name in _TOPOLOGY]
        order: list[Dimension] = first + [d for d in self.space.dimensions
                                          if d.name not in _TOPOLOGY and not isinstance(d, SizeVector)]
        order += [d for d in self.space.dimensions if isinstance(d, SizeVector)]
        retry = []
        for d in order:
            found = self._dimension(d, current, signature)
            if found is None:
                retry.append(d)
            else:
                conditions += found
        for d in retry:
            conditions += self._dimension(d, current, signature) or []
        conditions += self._far_sides(self._far, current, signature)
        confirmed = self._confirm(current, signature)
        if not confirmed:
            # the simplified case does not hold up: keep the original (confirmed) point as the case
            current = dict(point)
        return MinimizeResult(MFS(verdict.signature, tuple(conditions)), current, confirmed,
                              self.experiments, self.steps)

    def _dimension(self, d: Dimension, current: dict[str, Any], signature: str) -> list[Condition] | None:
        """Conditions dimension ``d`` contributes (None: its key probe could not run)."""
        if isinstance(d, SizeVector):
            return self._sizes(d, current, signature)
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
            kept = self._test({**current, d.name: simplest}, signature, f"{d.name} -> {simplest}")
            if kept is None:
                return None
            if not kept:
                return self._verb(d, current, signature) if d.name == "op" else \
                    _categorical_conditions(self.space, d.name, value)
            current[d.name] = simplest
        return self._verb(d, current, signature) if d.name == "op" else []

    def _verb(self, d: Choice, current: dict[str, Any], signature: str) -> list[Condition]:
        """Whether the transport, the opcode or both of the current verb are necessary, one probe each.

        The opcode is tested by another verb of the same transport and the transport by the same opcode on
        another transport (when the space has them). Probing the halves apart keeps a verb change from slipping
        onto a different anomaly of the same symptom and reading as "the verb does not matter".
        """
        value = current[d.name]
        transport, opcode = str(value).split("_", 1)
        out: list[Condition] = []
        for other, condition in (
            (_first(d.values, lambda v: v.startswith(f"{transport}_") and v != value), ("opcode", opcode)),
            (_first(d.values, lambda v: v.endswith(f"_{opcode}") and v != value), ("transport", transport)),
        ):
            if other is not None and self._gone({**current, d.name: other}, signature, f"{d.name} -> {other}"):
                out.append(Condition(condition[0], "==", condition[1]))
        # UD has one opcode: its transport being necessary pins the opcode as well
        if transport == "UD" and out and not any(c.feature == "opcode" for c in out):
            out.append(Condition("opcode", "==", opcode))
        return sorted(out, key=lambda c: c.feature != "transport")

    def _flag(self, d: Flag, current: dict[str, Any], signature: str) -> list[Condition] | None:
        value = current[d.name]
        if value == d.simplest():
            return []
        kept = self._test({**current, d.name: d.simplest()}, signature, f"{d.name} -> {d.simplest()}")
        if kept is None:
            return None
        if kept:
            current[d.name] = d.simplest()
            return []
        return [Condition(d.name, "==", value)]

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
                edge = self._bisect(d.name, values, simplest, value, current, signature)
                current[d.name] = edge
                if feature:
                    op = ">=" if _index(values, edge) > _index(values, simplest) else "<="
                    out.append(Condition(feature, op, self._feature_at(current, feature)))
                return out
        if not self.settings.far_side:
            return out
        here = current[d.name]
        far = values[-1] if _index(values, here) <= len(values) // 2 else values[0]
        if far != here:
            self._far.append((d, far))
        return out

    def _far_sides(self, group: list[tuple[IntRange | Choice, Any]], current: dict[str, Any],
                   signature: str) -> list[Condition]:
        """Far-side probes, grouped: one probe moves every dimension of ``group`` to its far bound at once.

        If the anomaly survives, no dimension of the group has an edge on its far side (one experiment instead
        of one per dimension); if it vanishes or the grouped point is illegal, the group is split in halves.
        A single dimension whose far side loses the anomaly is bisected for that edge.
        """
        if not group:
            return []
        trial = {**current, **{d.name: far for d, far in group}}
        why = ", ".join(f"{d.name} -> {far}" for d, far in group) + " (far side)"
        if len(group) == 1:
            d, far = group[0]
            if not self._gone(trial, signature, why):
                return []
            here = current[d.name]
            values = sorted(set(_ladder(d)) | {here})
            edge = self._bisect(d.name, values, far, here, current, signature)
            feature = PARAM_FEATURE.get(d.name)
            if not feature:
                return []
            op = "<=" if _index(values, far) > _index(values, here) else ">="
            return [Condition(feature, op, self._feature_at({**current, d.name: edge}, feature))]
        if self._test(trial, signature, why, recheck=False):
            return []
        mid = len(group) // 2
        return self._far_sides(group[:mid], current, signature) + self._far_sides(group[mid:], current, signature)

    def _bisect(self, name: str, values: list[Any], bad: Any, good: Any, current: dict[str, Any],
                signature: str) -> Any:
        """The value nearest ``bad`` on ``values`` that still shows the anomaly (``good`` does, ``bad`` not)."""
        lo, hi = _index(values, bad), _index(values, good)
        for _ in range(self.settings.bisect_steps):
            if abs(hi - lo) <= 1:
                break
            mid = (lo + hi) // 2
            # no recheck: a noisy "vanished" here only moves the edge one step toward the anomalous side
            if self._test({**current, name: values[mid]}, signature, f"{name} -> {values[mid]} (bisect)",
                          recheck=False):
                hi = mid
            else:
                lo = mid
        return values[hi]

    def _feature_at(self, point: Mapping[str, Any], feature: str) -> Any:
        return getattr(features(self.space.build(point)), feature)

    def _sizes(self, d: SizeVector, current: dict[str, Any], signature: str) -> list[Condition]:
        sizes = list(current[d.name])
        small, large = [min(sizes)], [max(sizes)]
        single: list[int] | None = None
        if len(set(sizes)) == 1:
            single = sizes[:1]
        elif self._still({**current, d.name: small}, signature, f"sizes -> {small}"):
            single = small
        elif self._still({**current, d.name: large}, signature, f"sizes -> {large}"):
            single = large
        if single is None:
            mix = [min(sizes), max(sizes)]
            if self._still({**current, d.name: mix}, signature, f"sizes -> {mix}"):
                current[d.name] = mix
            return [Condition("size_mix", "==", True)]
        current[d.name] = single
        exps = [1 << e for e in range((d.lo - 1).bit_length(), d.hi.bit_length())]
        out: list[Condition] = []
        v = single[0]
        for end in (exps[0], exps[-1]):
            if end == v or not self._gone({**current, d.name: [end]}, signature, f"sizes -> [{end}]"):
                continue
            edge = self._bisect_sizes(exps, end, v, current, signature, d.name)
            # the original pattern was anomalous: if it held sizes beyond the edge, only its largest (for a
            # lower edge) or smallest (for an upper edge) message can be what the anomaly needs
            if end < v:
                out.append(Condition("max_msg" if min(sizes) < edge else "min_msg", ">=", edge))
            else:
                out.append(Condition("min_msg" if max(sizes) > edge else "max_msg", "<=", edge))
        return out

    def _bisect_sizes(self, exps: list[int], bad: int, good: int, current: dict[str, Any], signature: str,
                      name: str) -> int:
        edge = self._bisect(name, [[e] for e in exps], [bad], [good], current, signature)
        return int(edge[0])


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


def _first(values: tuple[Any, ...], test: Callable[[Any], bool]) -> Any:
    return next((v for v in values if test(v)), None)


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
