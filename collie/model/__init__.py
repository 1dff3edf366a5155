"""The ground floor: what a workload is (flows, endpoints, which end receives the payload), the search space
over it (dimensions, constraints), the features an MFS speaks of, units and RoCEv2 framing. Imports nothing
of collie above :mod:`collie.errors`, :mod:`collie.data`, :mod:`collie.codec` and :mod:`collie.tomlio`."""
