"""Targets: something that runs a workload and reports what happened (:mod:`~collie.targets.base`), the
kinds of them (:mod:`~collie.targets.kind`) and the registry that parses and opens the spec strings naming them
(:mod:`~collie.targets.registry`: ``sim[:PROFILE|:PATH.toml]``, ``verbs:DEV[:PORT[:GID]]``, and
``remote:INVENTORY.toml`` once :mod:`collie.remote.kind` has registered it), and one host's side of a cross-host run
(:mod:`~collie.targets.session`).

This layer imports nothing from :mod:`collie.remote`, which sits above it.
"""
