"""The simulator reports its counters through the same catalogs and normalized view as real NICs."""

from __future__ import annotations

from pathlib import Path

import pytest

from collie.collectors.normalize import catalog_for, normalize
from collie.model.workload import Workload
from collie.targets.registry import open_target, parse_target
from collie.targets.sim.profile import builtin_names

EXAMPLES = Path(__file__).resolve().parents[3] / "workloads" / "examples"


@pytest.mark.parametrize("profile", builtin_names())
def test_every_sim_counter_is_catalogued_and_normalizes(profile: str) -> None:
    workload = Workload.load(EXAMPLES / "rc-write-64k.toml")
    with open_target(parse_target(f"sim:{profile}"), seed=1) as target:
        info = target.describe()
        catalog = catalog_for(info.counter_dialect, simulated=True)
        run = target.run(workload, 1.0)
    receivers = [h for h in run.hosts if h.rx_bps > 0]
    assert receivers
    for host in run.hosts:
        assert host.counters, f"{profile}: host {host.host} reports no counters"
        unknown = [n for n in host.counters if catalog.lookup(n) is None]
        assert unknown == [], f"{profile}: counters outside the {catalog.driver} catalogs: {unknown}"
        n = normalize(host.counters, run.duration_s, catalog, line_rate_bps=info.line_rate_bps)
        assert n.uncatalogued == ()
        assert n.diagnostic_per_s, "the simulator's sim_* diagnostics must come through"
    for host in receivers:
        n = normalize(host.counters, run.duration_s, catalog, line_rate_bps=info.line_rate_bps)
        assert n.packets_rx_per_s is not None and n.packets_rx_per_s > 0
        if n.bytes_rx_per_s is not None:  # rxe has packet counters only
            # counters include RoCEv2 headers, so they sit a little above the payload rate
            assert host.rx_bps / 8 <= n.bytes_rx_per_s <= 1.3 * host.rx_bps / 8
