"""Remote hosts: an inventory (``hosts.toml``), agents started over SSH, and the JSON-lines protocol they speak.

Layers, each with one job:

* :mod:`~collie.remote.inventory`: the validated ``hosts.toml``;
* :mod:`~collie.remote.protocol`: versioned JSON-line messages (frozen dataclasses);
* :mod:`~collie.remote.agent`: ``python3 -m collie.agent``, one per host, serving its device target;
* :mod:`~collie.remote.launch`: how an agent is started ("start one agent on one host and hand back its
  channel"); :mod:`~collie.remote.ssh` is the SSH launcher (paramiko, host keys verified);
* :mod:`~collie.remote.client`: requests to one agent with timeouts, failures as :class:`HostError`;
* :mod:`~collie.remote.check`: ``collie hosts check``;
* :mod:`~collie.remote.kind`: the ``remote:INVENTORY.toml`` target kind, registered into
  :mod:`collie.targets.registry` when that module is imported (the targets layer never imports this one).

This package's own import runs nothing: the agent's dependency check (:mod:`~collie.remote.deps`) comes first.
"""
