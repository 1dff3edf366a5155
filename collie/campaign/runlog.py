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

    def evidence(self, point: Mapping[str, Any], leading: str) -> CaseEvidence | None:
        """The evidence of the runs of ``point`` so far (see :meth:`CaseEvidence.of`)."""
        return CaseEvidence.of(point, self._runs.get(point_key(point), []), leading)
