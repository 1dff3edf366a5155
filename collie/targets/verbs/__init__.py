"""The verbs target: pyverbs on a local RDMA device (``verbs:DEVICE[:PORT[:GID_INDEX]]``).

Modules, one job each:
``spec`` (the target spec), ``compat`` (lazy pyverbs import, enums), ``device`` (finding the device, limits,
fingerprint), ``limits`` (workload vs device limits, pure), ``plan`` (WR layout, cycles, signalling, QP
spreading, pure), ``job`` (what a worker does), ``resources`` (PD/MR/CQ/QP, connection, prebuilt WRs),
``engine`` (the traffic loop), ``workers`` (processes), ``measure`` (stats and rate math, pure), ``counters``
(device counter reads), ``target`` (:class:`VerbsTarget`).

Importing this package never imports pyverbs.
"""

from collie.targets.verbs.spec import VerbsSpec, parse_spec
from collie.targets.verbs.target import VerbsTarget

__all__ = ["VerbsSpec", "VerbsTarget", "parse_spec"]
