"""The verbs target: pyverbs on a local RDMA device (``verbs:DEVICE[:PORT[:GID_INDEX]]``).

Modules, one job each:
``spec`` (the target spec), ``compat`` (lazy pyverbs import, enums), ``device`` (finding the device, limits,
fingerprint), ``limits`` (workload vs device limits, pure), ``plan`` (WR layout, cycles, signalling, QP
spreading, pure), ``job`` (what a worker does, which ends of a flow it holds), ``endpoints`` (QP connection
data exchanged between hosts, pure), ``resources`` (PD/MR/CQ/QP, connection, WRs described once), ``engine``
(the Python traffic loop and the interval's orchestration), ``native`` (the native loop under it: which loop runs,
raw handles, the loop's own ceiling; its C source ``_native.c``), ``native_build`` (compiling it), ``worker`` (one
worker's job from start to end), ``workers`` (processes and their handshake), ``measure`` (stats and rate math, pure),
``results`` (reports to flow and host results), ``counters`` (device counter reads), ``target``
(:class:`VerbsTarget`), ``kind`` (the ``verbs`` target kind), ``session`` (``VerbsSession``: one host's side of
a cross-host run; not imported here).

Importing this package never imports pyverbs.
"""

from collie.targets.verbs.spec import VerbsSpec, parse_spec
from collie.targets.verbs.target import VerbsTarget

__all__ = ["VerbsSpec", "VerbsTarget", "parse_spec"]
