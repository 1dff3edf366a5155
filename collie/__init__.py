"""collie: find performance anomalies in RDMA subsystems.

The library never prints; the command line (``collie.cli``) renders what it returns and the events it emits.
"""

__version__ = "0.1.0"
