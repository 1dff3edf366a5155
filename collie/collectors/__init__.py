"""Counter collectors: catalogs, readers/parsers of upstream counter sources, snapshots, deltas, normal form.

* :mod:`collie.collectors.catalog` - the per-driver catalogs in ``counters/*.toml``;
* :mod:`collie.collectors.sysfs` - ``/sys/class/infiniband/DEV/ports/P/{counters,hw_counters}`` (any root);
* :mod:`collie.collectors.ethtool` - ``ethtool -S`` text;
* :mod:`collie.collectors.rdma_stat` - ``rdma statistic show`` text and ``-j`` JSON;
* :mod:`collie.collectors.snapshot` - :class:`Snapshot`, :func:`delta` honouring counter kinds;
* :mod:`collie.collectors.sampling` - periodic sampling during a run (mean and spread);
* :mod:`collie.collectors.normalize` - the driver-independent view the oracle reads.

Nothing here prints; every user mistake is a :class:`~collie.errors.InputError` with one sentence.
"""
