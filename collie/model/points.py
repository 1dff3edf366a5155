"""Points of a search space, generically: a point is a mapping from dimension name to a plain JSON value.

Nothing here knows what the dimensions mean (the RDMA workload parameters live in :mod:`collie.model.space`), so
search strategies and the minimizer can share it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def point_key(point: Mapping[str, Any]) -> str:
    """A hashable identity of a point (equal for equal points, whatever the order of their keys)."""
    return repr(sorted(point.items()))
