"""One run of one workload, as one host's agent takes part in it (see docs/remote.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from collie.model.workload import Workload
from collie.targets.base import EndChurn, FlowResult, HostResult


@dataclass(frozen=True)
class RunPlan:
    """What every agent of a run is told in ``prepare``.

    Attributes:
        run: the controller's run number (increases by one per run of a campaign).
        workload: the whole workload; flows name roles ("a", "b").
        roles: the roles this agent plays that the workload uses (its endpoints are the flow ends on these roles).
        warmup: seconds of unmeasured traffic before the measured interval.
        duration: seconds of the measured interval.
        repetition: the campaign's repetition number (simulator noise); None when the caller did not say.
    """

    run: int
    workload: Workload
    roles: tuple[str, ...]
    warmup: float
    duration: float
    repetition: int | None = None


@dataclass(frozen=True)
class HostPart:
    """What one agent measured in one run.

    Attributes:
        hosts: one HostResult per role it plays: counters (deltas over the measured interval, gauges: means), their
            sources and unreadable sources. tx/rx rates: what this host can tell; for verbs hosts the controller
            recomputes them from every host's flows.
        flows: the FlowResults of the flows whose client end is on this agent's roles.
        setup_s: seconds of setup on this host (resources, connection).
        errors: one sentence each (completion errors, verification failures, ...).
        engine_bound: the host's engine, not the NIC, limited its flows.
        truth: simulator ground truth (tests and benchmarks only).
        interval: (start, end) of the measured interval on this host's wall clock (time.time()).
        churn: the control-path churn of the flow ends on this agent's roles that churned, when ``flows`` does
            not carry it already (verbs hosts: each end reports its own; the controller makes each flow's churn
            figures of its ends with :func:`~collie.targets.base.with_churn`).
    """

    hosts: tuple[HostResult, ...]
    flows: tuple[FlowResult, ...]
    setup_s: float
    errors: tuple[str, ...] = ()
    engine_bound: bool = False
    truth: tuple[str, ...] = ()
    interval: tuple[float, float] = (0.0, 0.0)
    churn: tuple[EndChurn, ...] = ()


class HostSession(Protocol):
    """One agent's side of one run. Order: prepare -> connect -> start -> finish; abort at any time (idempotent),
    always after finish too. Every method may raise ``Unsupported`` (prepare only), ``CollieError`` or ``OSError``
    with one sentence."""

    def prepare(self, plan: RunPlan) -> list[dict[str, Any]]:
        """Create this host's endpoints (QPs, MRs, ...) and return their connection data (JSON-ready dicts that
        name flow, QP index, side and what a peer needs: QPN, PSN, GID, rkey, address, ...)."""
        ...

    def connect(self, peers: Sequence[Mapping[str, Any]]) -> None:
        """Connect this host's endpoints to the peers' (``peers`` = every other agent's prepare() output,
        concatenated; entries for endpoints this host does not face are ignored)."""
        ...

    def start(self, at: float) -> None:
        """Begin the warm-up at wall-clock ``at`` (this host's ``time.time()`` scale); returns at once."""
        ...

    def finish(self) -> HostPart:
        """Wait until the run has ended and return what this host measured."""
        ...

    def abort(self) -> None:
        """Stop any traffic this session started and free everything (idempotent)."""
        ...
