"""The two-host soft-RoCE tier: tests run on this machine against two qemu guests that ``.ci/softroce.sh --pair``
boots, each with rxe0 on its own virtio NIC (the two NICs linked by qemu's socket network) and an OpenSSH server
reached on 127.0.0.1 through qemu's user network.

The guests come as an inventory named by ``COLLIE_PAIR_INVENTORY`` (hosts.toml with its known_hosts and the
identity generated for the run). Without it the tests skip, except under CI (``CI`` set): there a missing inventory
fails them, since ``.ci/run`` runs this tier and must never pass it by skipping.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

INVENTORY_ENV = "COLLIE_PAIR_INVENTORY"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/softroce_pair/" in str(item.fspath):
            item.add_marker(pytest.mark.softroce)


@dataclass(frozen=True)
class Guest:
    """One guest of the pair as the inventory names it, reached with OpenSSH's own client."""

    name: str
    port: int
    user: str
    identity: Path
    known_hosts: Path

    def ssh(self, command: str, *, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``command`` in the guest (its shell) through OpenSSH, checking the host key against the run's
        known_hosts; raises on a non-zero exit when ``check``."""
        argv = ["ssh", "-F", "/dev/null", "-i", str(self.identity), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "ConnectTimeout=30", "-p", str(self.port), f"{self.user}@127.0.0.1", command]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{self.name}: {command!r} exited {done.returncode}: {done.stderr or done.stdout}")
        return done

    def read(self, path: str) -> str:
        return self.ssh(f"cat {path}").stdout.strip()


@pytest.fixture(scope="session")
def pair_inventory() -> Path:
    """The inventory of the two guests; skips without one (fails under CI)."""
    value = os.environ.get(INVENTORY_ENV)
    if not value:
        why = f"{INVENTORY_ENV} is not set: run the two-guest tier with .ci/softroce.sh --pair"
        if os.environ.get("CI"):
            pytest.fail(f"{why} (under CI this tier must run, never skip)")
        pytest.skip(why)
    path = Path(value)
    assert path.is_file(), f"{INVENTORY_ENV}={value} is not a file"
    return path


@pytest.fixture(scope="session")
def guests(pair_inventory: Path) -> tuple[Guest, Guest]:
    """The two guests, in inventory order."""
    from collie.remote.inventory import load_inventory

    inv = load_inventory(pair_inventory)
    assert len(inv.hosts) == 2, f"{pair_inventory} should name two hosts, not {len(inv.hosts)}"
    assert inv.known_hosts is not None
    found = []
    for h in inv.hosts:
        assert h.identity is not None
        found.append(Guest(h.name, h.port, h.user, h.identity, inv.known_hosts))
    return found[0], found[1]
