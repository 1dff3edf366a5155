"""The soft-RoCE tier: runs only inside the qemu guest that ``.ci/softroce.sh`` boots (COLLIE_SOFTROCE=1, an rxe
device named by COLLIE_SOFTROCE_DEVICE, default rxe0). Anywhere else these files are not even collected, so a
plain ``python -m pytest`` on a host reports neither runs nor skips for them."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator

import pytest

ENABLED = os.environ.get("COLLIE_SOFTROCE") == "1"
DEVICE = os.environ.get("COLLIE_SOFTROCE_DEVICE", "rxe0")

if not ENABLED:
    collect_ignore_glob = ["test_*.py"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/softroce/" in str(item.fspath):
            item.add_marker(pytest.mark.softroce)


@pytest.fixture(scope="session")
def device() -> str:
    return DEVICE


@pytest.fixture(scope="module")
def target(device: str) -> Iterator[object]:
    from collie.targets.verbs import VerbsTarget
    from collie.targets.verbs.spec import parse_spec

    with VerbsTarget(parse_spec(device), verify=True, warmup=0.1) as t:
        yield t


def rdma_resources(device: str) -> dict[str, int]:
    """Counts of live verbs objects on ``device`` from ``rdma resource show`` (pd, cq, qp, mr, ...)."""
    out = subprocess.run(["rdma", "resource", "show"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if f" {device}:" in line or line.startswith(f"{device}:"):
            return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", line.split(":", 2)[-1])}
    raise AssertionError(f"rdma resource show has no line for {device}: {out!r}")
