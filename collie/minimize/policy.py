"""The minimizer's RDMA vocabulary as data: which parameter drives which feature, the halves of a verb, and what a
necessary categorical value says in feature terms.

The order the dimensions are shrunk in belongs to a space (``SearchSpace.shrink_order``, a space file's
``[minimize] order``); what is here follows from how a point builds a workload and what its features are, so it
stays beside that code rather than in a file that could disagree with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from collie.metrics import DIAG_PREFIX
from collie.mfs import Condition
from collie.model.features import features
from collie.model.space import SearchSpace

#: The features each parameter drives (the MFS speaks in features, like the simulator and reports): a numeric
#: parameter's edges are stated in its first; a case moved to a point's value of a feature takes every parameter
#: that drives it (:func:`collie.minimize.moved_to`), the QPs with the processes they are split over.
DRIVES: Final[Mapping[str, tuple[str, ...]]] = {
    "qps": ("qps_total",), "mrs": ("mrs_host",), "mr_size": ("mr_size",), "batch": ("batch",), "sges": ("sges",),
    "wq_depth": ("wq_depth",), "mtu": ("mtu",), "processes": ("processes", "qps_total"), "inline": ("inline",),
    "signal_every": ("signal_every",), "rq_depth": ("rq_depth",), "recv_batch": ("recv_batch",),
    "recv_sges": ("recv_sges",), "recv_delay_us": ("recv_delay_us",), "mr_churn": ("mr_churn",),
    "qp_churn": ("qp_churn",), "hosts": ("hosts",), "ranks_per_host": ("ranks_per_host",),
    "nics": ("nics",),
    "sizes": ("max_msg", "min_msg", "sizes", "size_mix", "line_tail", "tail_packet"),
}
#: The halves of a verb (``RC_READ``: transport ``RC``, opcode ``READ``), tested apart when the verb is necessary.
VERB_PARTS: Final = ("transport", "opcode")
_DIRECTION_FLAGS: Final = ("bidirectional", "loopback", "incast")
#: A verb alternative showed the anomaly's symptom through another cause when its diagnostic counters moved apart
#: from the case's: one at least this many times higher and another this many times lower (a verb's own effect
#: moves them one way: RC SEND adds receive-WQE misses to what RC READ showed, but takes nothing away).
CAUSE_SHIFT: Final = 2.0
#: Diagnostic events per unit of work added to both sides of a ratio, so counters near zero compare as equal.
DIAG_FLOOR: Final = 0.01


def edge_feature(name: str) -> str | None:
    """The feature a numeric parameter's edges are stated in (:data:`DRIVES`), None if it drives none."""
    return DRIVES.get(name, (None,))[0]


def feature_at(space: SearchSpace, point: Mapping[str, Any], feature: str) -> Any:
    """The value of ``feature`` in the workload ``point`` builds."""
    return getattr(features(space.build(point)), feature)


def categorical_conditions(space: SearchSpace, name: str, value: Any) -> list[Condition]:
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
    if name in ("victim", "pattern", "tclass"):
        return [Condition(name, "==", getattr(f, name))]
    return []


def other_cause(case: Mapping[str, float], run: Mapping[str, float]) -> bool:
    """Whether ``run``'s diagnostic counters (a verdict's ``diag:*`` metrics) point at another cause than
    ``case``'s: one rose :data:`CAUSE_SHIFT` times or more while another fell as much (each with
    :data:`DIAG_FLOOR` added). A counter missing from either side says nothing."""
    ratios = [(run[k] + DIAG_FLOOR) / (v + DIAG_FLOOR) for k, v in case.items()
              if k.startswith(DIAG_PREFIX) and k in run]
    return max(ratios, default=1.0) >= CAUSE_SHIFT and min(ratios, default=1.0) * CAUSE_SHIFT <= 1.0
