"""Shrinking the categorical dimensions: topology, the verb by its halves, the collective pattern, and the opcode
mix.

A necessary verb has its transport and opcode tested apart (:data:`~collie.minimize.policy.VERB_PARTS`): the other
opcodes on the same transport test the opcode, the same opcode on the other transports the transport. A half is
necessary if its first alternative whose run decides loses the anomaly; a run where another anomaly's stronger
symptom masks this one decides nothing. A half whose alternative kept the anomaly is checked again on the
simplified case (a check probed alone), where a slip onto another anomaly is less likely. A simplest verb that
lost while each half moved alone kept is excluded by the parts that kept of one half (``opcode in {SEND,
SEND_IMM}``), else by the verb as found. The opcode mix goes none, then only READ with WRITE, then only the
atomics, else as found. A necessary pattern is probed against each other pattern of the space on the same hosts:
the condition names every pattern that kept the anomaly.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from collie.mfs import Condition
from collie.minimize.policy import VERB_PARTS, categorical_conditions, feature_at
from collie.model.dimensions import Choice, OpcodePattern
from collie.model.flow import ATOMIC_OPCODES, MIXED
from collie.model.space import SearchSpace
from collie.shrink import Check, Shrinker


class Verbs:
    """The categorical and opcode moves of one minimization, on its shrinker."""

    def __init__(self, space: SearchSpace, shrink: Shrinker[Condition]) -> None:
        self.space = space
        self._shrink = shrink
        #: the verb checks of the last run and the conditions each implies when it loses the anomaly (repeated
        #: by :meth:`recheck` on a case that moved to its finished edges)
        self.checks: list[tuple[Check[Condition], list[Condition]]] = []

    def _check(self, check: Check[Condition], implies: list[Condition]) -> None:
        """Queue ``check`` of a verb half with the shrinker's checks of the simplified case, and remember it."""
        self._shrink.far.append(check)
        self.checks.append((check, implies))

    def recheck(self, case: dict[str, Any], conditions: list[Condition]) -> list[Condition]:
        """The verb checks of the last run repeated on ``case``, a case moved to the finished edges of a deferred
        run: the conditions of those that lose the anomaly there, which ``conditions`` lacks.

        A half whose alternative kept the anomaly on the case at its open edges (a UD SEND case on 181 QPs moved
        to RC, where another pause with the same diagnostic counter fires from 64 QPs) may lose it at the
        finished ones (32 QPs); one probe per check whose conditions are missing, rechecked on a loss."""
        out: list[Condition] = []
        for check, implies in self.checks:
            if all(c in conditions for c in implies):
                continue
            if self._shrink.test({**case, check.name: check.value},
                                 f"{check.name} -> {check.value} (at the finished edges)") is False:
                out += [c for c in check.lost(case) if c not in conditions and c not in out]
        return out

    def categorical(self, d: Choice, current: dict[str, Any], final: bool = False) -> list[Condition] | None:
        """Conditions of an unordered choice (None: its probe could not run, unless ``final``, where that reads
        as a loss): none if its simplest value keeps the anomaly (``current`` moves there), else its value's,
        the verb's by halves."""
        value = current[d.name]
        simplest = d.simplest()
        if value != simplest:
            trial = {**current, d.name: simplest}
            kept = self._shrink.test(trial, f"{d.name} -> {simplest}")
            if kept is None and d.name == "op" and self._shrink.masked(trial):
                return self._verb(d, current, lost=False)  # a known anomaly's region: the verb's halves decide
            if kept is None and not final:
                return None
            if not kept:
                if d.name == "op":
                    return self._verb(d, current, lost=True)
                if d.name == "pattern":
                    return self._patterns(d, current)
                return categorical_conditions(self.space, d.name, value)
            current[d.name] = simplest
        if d.name == "op":
            # the verb is not necessary, but its transport or opcode may be: checked at the end, with the far sides
            for others, condition in _verb_halves(d, simplest):
                implies = self._verb_conditions(d, [condition], current)
                lost = partial(self._masked_then, d.name, others[0], others[1:], implies)
                self._check(Check(d.name, others[0], lost, alone=True), implies)
        return []

    def _patterns(self, d: Choice, current: Mapping[str, Any]) -> list[Condition]:
        """The patterns that keep an anomaly which needs one (its simplest value, no pattern, lost it): the case's
        and every other of the space's that kept it on the same hosts and connection shape, one probe each
        (``pattern in {all_to_all, ring_allreduce}``: a slow host slows every collective it takes part in).
        Each other pattern that kept is checked again on the simplified case (fewer hosts, fewer QPs), alone:
        one that loses the anomaly there leaves the condition (:func:`superseded` takes the intersection)."""
        value = current[d.name]
        keeping = [value, *(v for v in d.values if v not in (value, d.simplest()) and
                            self._shrink.test({**current, d.name: v}, f"{d.name} -> {v}"))]
        if len(keeping) == 1:
            return categorical_conditions(self.space, d.name, value)
        condition = Condition(d.name, "in", tuple(sorted(keeping)))
        for other in keeping[1:]:
            narrower = [Condition(d.name, "in", tuple(sorted(v for v in keeping if v != other)))]
            self._check(Check(d.name, other, partial(_given, narrower), alone=True), narrower)
        return [condition]

    def _verb(self, d: Choice, current: dict[str, Any], lost: bool) -> list[Condition]:
        """Whether the transport, the opcode or both of the current verb are necessary.

        The opcode is tested by the other verbs of the same transport and the transport by the same opcode on
        the other transports (when the space has them), each up to the first alternative whose run decides.
        Probing the halves apart keeps a verb change from slipping onto a different anomaly of the same symptom
        and reading as "the verb does not matter". When the simplest verb ``lost`` the anomaly (its run
        decided) and the halves' conditions would still take it in (it differs from the case in both halves,
        and each half's alternative kept), one half's parts that kept (the case's and its alternative's) are the
        condition if they leave it out, else the verb as found: the MFS never covers a verb that was probed and
        lost.
        """
        value = current[d.name]
        necessary: list[Condition] = []
        checks: list[tuple[Check[Condition], list[Condition]]] = []
        keeping: list[Condition] = []  # each half that kept: its value's part or its keeping alternative's
        halves = _verb_halves(d, value)
        for others, condition in halves:
            kept = self._half_kept(d.name, others, current)
            if kept is None:
                necessary.append(condition)
                continue
            keeping.append(_half_allowed(condition, value, [kept]))
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
            implies = self._verb_conditions(d, [condition], current)
            then = partial(self._masked_then, d.name, kept, rest, implies)
            checks.append((Check(d.name, kept, then, alone=True), implies))
        simplest = d.simplest()
        if lost and all(c.holds({c.feature: _half_value(c, simplest)}) for c in necessary):
            # each half moved alone kept the anomaly, both moved (the simplest verb) lost it: a half whose parts
            # that kept leave out the simplest verb's says so (UD SEND and UD SEND_IMM kept, RC WRITE lost:
            # opcode in {SEND, SEND_IMM}); if neither does, the verb as found
            excluding = [c for c in keeping if not c.holds({c.feature: _half_value(c, simplest)})][:1]
            if not excluding:
                return self._verb_conditions(d, [c for _, c in halves], current)
            necessary = [c for c in necessary if c.feature != excluding[0].feature] + excluding
        for check, implies in checks:
            self._check(check, implies)
        return self._verb_conditions(d, necessary, current)

    def _verb_conditions(self, d: Choice, necessary: list[Condition], current: Mapping[str, Any]
                         ) -> list[Condition]:
        """The verb's (``d``) necessary halves, transport first. A space with one UD verb pins its opcode with a
        necessary UD transport; a case whose flow cycles several opcodes (``opcode == MIXED``) leaves the opcode
        to the mix's conditions."""
        out = list(necessary)
        if feature_at(self.space, current, "opcode") == MIXED:
            return [c for c in out if c.feature != "opcode"]
        transport = next((c.value for c in out if c.feature == "transport"), None)
        ud = [v for v in d.values if v.startswith("UD_")]
        if transport == "UD" and len(ud) == 1 and not any(c.feature == "opcode" for c in out):
            out.append(Condition("opcode", "==", ud[0].split("_", 1)[1]))
        return sorted(out, key=lambda c: c.feature != "transport")

    def _half_kept(self, name: str, values: list[Any], current: dict[str, Any]) -> Any:
        """The first of ``values`` that keeps the anomaly when ``name`` moves to it, None if the verb half is
        necessary.

        The half is necessary if the first alternative whose run decides loses the anomaly. A run that shows the
        anomaly's symptom behind a stronger one of another anomaly (RC SEND adding a receive-queue pause to a
        low-throughput anomaly that any RC verb shows) is *masked*: it decides nothing, and the next
        alternative is probed; so is an alternative that cannot be tested (illegal, one the target cannot run,
        a known anomaly's region). If no alternative decides, the half is necessary: one that cannot be shown
        free is not free."""
        for v in values:
            point = {**current, name: v}
            kept = self._shrink.test(point, f"{name} -> {v}")
            if kept is None:
                continue  # the next alternative decides
            if kept:
                return v
            if not self._shrink.masked(point):
                return None
        return None

    def _masked_then(self, name: str, first: Any, rest: list[Any], conditions: list[Condition],
                     current: dict[str, Any]) -> list[Condition]:
        """The lost callback of a verb check (its first alternative ``first`` did not keep the anomaly):
        ``conditions``, unless that run decided nothing (masked, or ``first`` could not be tested) and one of
        the other alternatives ``rest`` keeps the anomaly."""
        point = {**current, name: first}
        decided = self._shrink.vanished(point) and not self._shrink.masked(point)
        return list(conditions) if decided or self._half_kept(name, rest, current) is None else []

    def mix(self, d: OpcodePattern, current: dict[str, Any], final: bool = False) -> list[Condition] | None:
        """The opcodes cycled with the verb's: none if the anomaly keeps without them; else only READ with WRITE
        (``read_write_mix == True``) or only the atomics (``atomics == True``) when the mix has them and that
        keeps it; else the mix as found (``opcode == MIXED``). None when the probe without them could not run,
        unless ``final`` (read as a loss)."""
        value = list(current[d.name])
        kept = self._shrink.simplified(d, current)
        if kept is None and not final:
            return None
        if kept:
            return []
        first = str(self.space.complete(current)["op"]).split("_", 1)[1]
        pair = {"READ": ["WRITE"], "WRITE": ["READ"], "WRITE_IMM": ["READ"]}.get(first, ["READ", "WRITE"])
        narrower = (("read_write_mix", pair), ("atomics", [o for o in dict.fromkeys(value) if o in ATOMIC_OPCODES]))
        for flag, mix in narrower:
            if not mix or not feature_at(self.space, current, flag):
                continue
            if mix == value or self._shrink.still({**current, d.name: mix}, f"{d.name} -> {mix}"):
                current[d.name] = mix
                return [Condition(flag, "==", True)]
        return [Condition("opcode", "==", MIXED)]


def _given(conditions: list[Condition], _case: dict[str, Any]) -> list[Condition]:
    """The lost callback of a check whose conditions do not depend on the case it lost on."""
    return conditions


def superseded(conditions: list[Condition]) -> list[Condition]:
    """``conditions`` without an ``in`` on a feature that an ``==`` also pins (the verb check that found the
    half necessary after all narrows the disagreeing alternatives' set), and with the ``in`` conditions on one
    feature as one, their intersection where the first stood (``==`` when one value is left: a pattern check
    that lost on the simplified case narrows the patterns that kept on the case as found)."""
    pinned = {c.feature for c in conditions if c.op == "=="}
    sets: dict[str, set[Any]] = {}
    for c in conditions:
        if c.op == "in" and c.feature not in pinned:
            sets[c.feature] = sets[c.feature] & set(c.value) if c.feature in sets else set(c.value)
    out: list[Condition] = []
    for c in conditions:
        if c.op != "in":
            out.append(c)
        elif c.feature in sets:
            values = sorted(sets.pop(c.feature))
            out.append(Condition(c.feature, "==", values[0]) if len(values) == 1 else
                       Condition(c.feature, "in", tuple(values)))
    return out


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
