"""``collie run --target verbs:...`` on a host without an RDMA device: one sentence, exit 2, no traceback."""

from __future__ import annotations

import os
from typing import Any

import pytest

from collie.targets.verbs.compat import INSTALL_HINT
from collie.targets.verbs.device import NO_DEVICE

WORKLOAD = "workloads/examples/rc-write-64k.toml"


def test_run_without_device_or_pyverbs_says_so(cli: Any) -> None:
    if os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"):
        pytest.skip("this host has an RDMA device; the soft-RoCE tier covers runs on one")
    p = cli("run", "--target", "verbs:rxe0", "--workload", WORKLOAD, "--duration", "1")
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    line = p.stderr.strip()
    # which sentence depends on the host: pyverbs missing, or pyverbs present and no device
    assert line in (f"collie: error: {INSTALL_HINT}", f"collie: error: {NO_DEVICE}"), line


def test_run_with_a_malformed_verbs_spec(cli: Any) -> None:
    p = cli("run", "--target", "verbs:rxe0:zero", "--workload", WORKLOAD)
    assert p.returncode == 2
    assert "port 'zero' is not an integer >= 1; use verbs:DEVICE[:PORT[:GID_INDEX]]" in p.stderr
    assert "Traceback" not in p.stderr
