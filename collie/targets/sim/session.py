"""``SimSession``: a sim host's side of one remote run (see :class:`collie.targets.session.HostSession`).

Each sim agent runs the *whole* workload on its own simulator (seeded by ``hello``'s seed, told the plan's
repetition) and returns its roles' slice: the HostResults of the roles it plays and the flows whose client end is
on one of them. Every agent of a run draws the same noise for the same ``(seed, workload key, repetition)``, so the
controller's merge of the slices is exactly the RunResult a local ``sim:PROFILE`` target returns.

Invariants:
    * ``prepare`` raises :class:`~collie.targets.base.Unsupported` exactly when the local simulator would, and
      returns no endpoints (a simulated host has nothing a peer must know); ``connect`` and ``start``
      only record what they are told; nothing sleeps;
    * ``finish`` before ``prepare`` is a :class:`~collie.errors.CollieError`; ``abort`` forgets the plan
      (idempotent).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from collie.errors import CollieError
from collie.targets.session import HostPart, RunPlan
from collie.targets.sim import SimTarget


class SimSession:
    """One run of a sim host.

    Args:
        target: the agent's simulator (entered); its seed is the one ``hello`` gave.
    """

    def __init__(self, target: SimTarget) -> None:
        self._target = target
        self._plan: RunPlan | None = None
        self._at: float | None = None

    def prepare(self, plan: RunPlan) -> list[dict[str, Any]]:
        """Record the plan; a workload the profile cannot run raises ``Unsupported`` here, before any host
        starts."""
        self._target.checked(plan.workload)
        self._plan = plan
        self._at = None
        return []

    def connect(self, peers: Sequence[Mapping[str, Any]]) -> None:
        if self._plan is None:
            raise CollieError("connect before prepare: this session has no run")

    def start(self, at: float) -> None:
        if self._plan is None:
            raise CollieError("start before prepare: this session has no run")
        self._at = at

    def finish(self) -> HostPart:
        plan = self._plan
        if plan is None:
            raise CollieError("finish before prepare: this session has no run")
        result = self._target.run(plan.workload, plan.duration, repetition=plan.repetition)
        begin = (self._at if self._at is not None else time.time()) + plan.warmup
        roles = set(plan.roles)
        return HostPart(hosts=tuple(h for h in result.hosts if h.host in roles),
                        flows=tuple(f for f in result.flows if f.client in roles),
                        setup_s=result.setup_s, errors=result.errors, engine_bound=result.engine_bound,
                        truth=result.truth, interval=(begin, begin + plan.duration))

    def abort(self) -> None:
        self._plan = None
        self._at = None
