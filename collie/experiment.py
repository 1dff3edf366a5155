"""One experiment: run one workload on a target, prune what the target cannot run, judge what it measured.

Every caller that runs a workload to judge it goes through :func:`run_and_judge`: the campaign's trial runner,
``collie replay``, ``collie minimize`` and ``collie run`` (see :mod:`collie.services`). What a caller does with a
pruned or failed experiment is its own decision (a campaign journals it; an interactive command raises
:attr:`Experiment.error` again or says the target cannot run the case).

Invariants:
    * an experiment is COMPLETE (with the target's result, and the oracle's verdict when an oracle was given),
      PRUNED (the target raised :class:`~collie.targets.base.Unsupported`) or FAILED (any other ``Exception`` of
      the target), never anything else;
    * :class:`~collie.errors.TargetUnavailable` (nothing can run any more) and ``KeyboardInterrupt`` are raised,
      never recorded: they end whatever runs the experiments;
    * judging is pure: the verdict is a function of the result, the workload and the oracle;
    * an isolation experiment judged by an oracle that has no solo baseline of its victims has them measured
      first (:func:`measure_solo`), as a campaign's SOLO trial does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collie.errors import TargetUnavailable
from collie.model.workload import Workload
from collie.oracle import Oracle, Verdict
from collie.storage.records import TrialState
from collie.targets.base import RunResult, Target, Unsupported


@dataclass(frozen=True)
class Experiment:
    """How one experiment ended.

    Attributes:
        state: COMPLETE, PRUNED or FAILED.
        result: what the target measured (COMPLETE only).
        verdict: the oracle's verdict on ``result`` (COMPLETE with an oracle only).
        reason: why it was pruned or failed, as a campaign journals it (``unsupported: ...``,
            ``OSError: ...``); ``""`` when COMPLETE.
        detail: the target's own words for it (the exception's message); ``""`` when COMPLETE.
        error: the exception the target raised (PRUNED or FAILED), for callers that raise it again.
    """

    state: TrialState
    result: RunResult | None = None
    verdict: Verdict | None = None
    reason: str = ""
    detail: str = ""
    error: Exception | None = field(default=None, compare=False, repr=False)


def run_and_judge(target: Target, workload: Workload, duration: float, oracle: Oracle | None,
                  repetition: int | None = None) -> Experiment:
    """Run ``workload`` for ``duration`` seconds on the entered ``target`` and judge the result with ``oracle``
    (None: not judged, e.g. a calibration run).

    Args:
        target: the entered target.
        workload: what to run.
        duration: seconds of measured traffic.
        oracle: judges a complete run (None: the experiment has no verdict).
        repetition: passed to :meth:`~collie.targets.base.Target.run` (None: the target counts its own runs).

    Raises:
        TargetUnavailable: the target's hosts cannot be reached any more.
        KeyboardInterrupt: Ctrl-C while it ran.
    """
    if oracle is not None and workload.isolation:
        measure_solo(target, workload, duration, oracle)
    try:
        result = target.run(workload, duration, repetition=repetition)
    except Unsupported as exc:
        return Experiment(TrialState.PRUNED, reason=f"unsupported: {exc}", detail=str(exc), error=exc)
    except TargetUnavailable:
        raise
    except Exception as exc:  # a target failure is an outcome, not a crash of the caller
        return Experiment(TrialState.FAILED, reason=f"{type(exc).__name__}: {exc}", detail=str(exc), error=exc)
    verdict = oracle.judge(result, workload) if oracle is not None else None
    return Experiment(TrialState.COMPLETE, result, verdict)


def measure_solo(target: Target, workload: Workload, duration: float, oracle: Oracle) -> Experiment | None:
    """Run the victims of the isolation experiment ``workload`` alone and give the oracle the result as their solo
    baseline (:attr:`~collie.oracle.Oracle.solos`), unless it has one; the experiment, or None when it had one.

    Raises:
        TargetUnavailable: the target's hosts cannot be reached any more.
        KeyboardInterrupt: Ctrl-C while it ran.
    """
    solo = workload.solo()
    if solo.key() in oracle.solos:
        return None
    e = run_and_judge(target, solo, duration, None)
    if e.result is not None:
        oracle.solos[solo.key()] = e.result
    return e
