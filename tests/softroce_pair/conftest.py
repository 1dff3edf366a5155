"""The two-host soft-RoCE tier: tests run on this machine against two qemu guests that ``.ci/softroce.sh --pair``
boots, each with rxe0 on its own virtio NIC (the two NICs linked by qemu's socket network) and an OpenSSH server
reached on 127.0.0.1 through qemu's user network.

The guests come as an inventory named by ``COLLIE_PAIR_INVENTORY`` (hosts.toml with its known_hosts and the
identity generated for the run). Without it these files are not even collected, so a plain ``python -m pytest``
reports neither runs nor skips for them (as tests/softroce/); the tier always sets it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

INVENTORY_ENV = "COLLIE_PAIR_INVENTORY"

if not os.environ.get(INVENTORY_ENV):
    collect_ignore_glob = ["test_*.py"]


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
    control: Path  # OpenSSH's control socket: one login per guest, each command a channel on it

    def _argv(self, *options: str) -> list[str]:
        return ["ssh", "-F", "/dev/null", "-i", str(self.identity), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "ConnectTimeout=60", "-o", f"ControlPath={self.control}", *options, "-p", str(self.port),
                f"{self.user}@127.0.0.1"]

    def open(self) -> Guest:
        """Log in once and keep that connection as the control master (in the background, its output nowhere:
        a master holding a captured pipe would block every later ``subprocess.run``)."""
        subprocess.run(self._argv("-M", "-N", "-f", "-o", "ControlPersist=900"), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180, check=False)
        return self

    def ssh(self, command: str, *, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``command`` in the guest (its shell) through OpenSSH, checking the host key against the run's
        known_hosts; raises on a non-zero exit when ``check``."""
        done = subprocess.run([*self._argv("-o", "ControlMaster=no"), command], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{self.name}: {command!r} exited {done.returncode}: {done.stderr or done.stdout}")
        return done

    def read(self, path: str) -> str:
        return self.ssh(f"cat {path}").stdout.strip()

    def close(self) -> None:
        """Stop the control master, if one was started (``ssh -O exit``)."""
        if self.control.exists():
            subprocess.run(self._argv("-O", "exit"), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60, check=False)


@pytest.fixture(scope="session")
def pair_inventory() -> Path:
    """The inventory of the two guests (the files are collected only when it is named)."""
    value = os.environ[INVENTORY_ENV]
    path = Path(value)
    assert path.is_file(), f"{INVENTORY_ENV}={value} is not a file"
    return path


@pytest.fixture(scope="session")
def guests(pair_inventory: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Guest, Guest]]:
    """The two guests, in inventory order (their OpenSSH control masters stopped at the end)."""
    from collie.remote.inventory import load_inventory

    inv = load_inventory(pair_inventory)
    assert len(inv.hosts) == 2, f"{pair_inventory} should name two hosts, not {len(inv.hosts)}"
    assert inv.known_hosts is not None
    found = []
    for h in inv.hosts:
        assert h.identity is not None
        control = tmp_path_factory.mktemp("ssh") / "control"
        found.append(Guest(h.name, h.port, h.user, h.identity, inv.known_hosts, control).open())
    try:
        yield found[0], found[1]
    finally:
        for g in found:
            g.close()
