"""The verdicts of every run of each point a campaign or a minimization makes: what a case's evidence is taken
from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from collie.model.points import point_key
from collie.oracle import Verdict
from collie.storage.case import CaseEvidence


class RunLog:
    """The verdicts of every run of each point, in order: what a case's own evidence is taken from.

    Watch a probe with :meth:`watch` (and :meth:`add` runs made outside it); :meth:`evidence` then gives the
    :class:`CaseEvidence` of whichever point became the case. It only records; it never runs anything.
    """

    def __init__(self) -> None:
        self._runs: dict[str, list[Verdict]] = {}

    def add(self, point: Mapping[str, Any], verdict: Verdict | None) -> None:
        """Record one run of ``point`` (None: it could not run, nothing to record)."""
        if verdict is not None:
            self._runs.setdefault(point_key(point), []).append(verdict)

    def watch(self, probe: Callable[[Mapping[str, Any]], Verdict | None]
              ) -> Callable[[Mapping[str, Any]], Verdict | None]:
        """``probe``, recording every verdict it returns (whatever it raises passes through)."""

        def watched(point: Mapping[str, Any]) -> Verdict | None:
            verdict = probe(point)
            self.add(point, verdict)
            return verdict

        return watched

    def recorded(self) -> dict[str, tuple[Verdict, ...]]:
        """Every point's runs so far, by :func:`~collie.model.points.point_key` (a snapshot)."""
        return {key: tuple(runs) for key, runs in self._runs.items()}

    def evidence(self, point: Mapping[str, Any], leading: str) -> CaseEvidence | None:
        """The evidence of the runs of ``point`` so far (see :meth:`CaseEvidence.of`)."""
        return CaseEvidence.of(point, self._runs.get(point_key(point), []), leading)


class Replay:
    """The runs ``log`` recorded, handed out again: a walk that asks the same points again, in the same order,
    gets the same verdicts without running them, and goes on live where the recorded runs end.

    Each probe wrapped by :meth:`through` shares one place per point: the n-th ask of a point, by whichever
    probe, gets its n-th recorded run, then live runs (recorded by the probe wrapped, if it watches ``log``).

    Args:
        log: the runs recorded so far.
        first: the point whose first run is already taken (the find whose recording is walked again).
    """

    def __init__(self, log: RunLog, first: Mapping[str, Any]) -> None:
        self._recorded = log.recorded()
        self._used: dict[str, int] = {point_key(first): 1}

    def through(self, probe: Callable[[Mapping[str, Any]], Verdict | None]
                ) -> Callable[[Mapping[str, Any]], Verdict | None]:
        """``probe``, answered from the recorded runs while they last (per point)."""

        def replayed(point: Mapping[str, Any]) -> Verdict | None:
            key = point_key(point)
            n = self._used.get(key, 0)
            recorded = self._recorded.get(key, ())
            if n < len(recorded):
                self._used[key] = n + 1
                return recorded[n]
            return probe(point)

        return replayed
