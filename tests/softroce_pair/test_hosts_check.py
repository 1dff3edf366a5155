"""``collie hosts check`` against the two soft-RoCE guests, through real SSH and real agents."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.softroce_pair.conftest import Guest


def test_hosts_check_finds_both_guests_usable_with_rxe_counters_and_a_measured_skew(
        pair_inventory: Path, guests: tuple[Guest, Guest]) -> None:
    done = run_cli("hosts", "check", "--inventory", str(pair_inventory), "--format", "json", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(done.stdout)
    assert [r["host"] for r in rows] == ["guest1", "guest2"]
    for r in rows:
        assert r["status"] == "ok" and r["failure"] is None and r["problem"] == "", r
        assert r["target"] == "verbs:rxe0:1:1"
        assert r["host_key_state"] == "known", r  # the run's known_hosts holds the key the guest's sshd offers
        assert r["driver"] == "rxe", r
        assert r["counters"] > 0 and "hw" in r["sources"], r
        assert r["clock_skew_ms"] is not None and r["rtt_ms"] is not None and r["rtt_ms"] > 0, r
    for r, guest in zip(rows, guests, strict=True):
        # the agent runs the guest's Debian python3, the one with pyverbs: it can open verbs targets
        debian = guest.ssh("/usr/bin/python3 -c 'import platform; print(platform.python_version())'").stdout.strip()
        assert r["python"] == debian and "target:verbs" in r["capabilities"], r
