"""The simulated RDMA subsystem (the default target): profiles, a base model, quirks, real counter names.

Public: :class:`SimTarget`, :func:`load_profile`, :func:`builtin_names`, :func:`library`.
"""

from collie.targets.sim.profile import Profile, builtin_names, library, load_profile
from collie.targets.sim.target import SimTarget

__all__ = ["Profile", "SimTarget", "builtin_names", "library", "load_profile"]
