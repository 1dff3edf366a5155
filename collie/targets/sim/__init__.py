"""The simulated RDMA subsystem (the default target): profiles, a base model, quirks, real counter names.

Public: :class:`SimTarget`, :func:`load_profile`, :func:`builtin_names`, :func:`library`. Also here: ``kind`` (the
``sim`` target kind), ``session`` (``SimSession``: a sim host's side of a cross-host run) and ``totals``
(``SimTotals``: a sim host's running counters, what sampling it reads).
"""

from collie.targets.sim.profile import Profile, builtin_names, library, load_profile
from collie.targets.sim.target import SimTarget

__all__ = ["Profile", "SimTarget", "builtin_names", "library", "load_profile"]
