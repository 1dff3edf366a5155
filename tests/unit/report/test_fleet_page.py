"""The fleet check's page: its heat map's cells and colours, the whole map of a small fleet and the suspects'
part of a large one, and names shown as text."""

from __future__ import annotations

from collie.fleet import FleetCheck, check_fleet
from collie.report.fleet_page import WHOLE_MAP_HOSTS, colour, heat_map, render_fleet_html
from collie.targets.base import TargetInfo
from tests.unit.fleet.test_fleet_check import Fake, fleet

INFO = TargetInfo(name="sim:x", kind="sim", nic_model="<b>NIC</b>", firmware="", driver="mlx5", kernel="",
                  counter_dialect="mlx5", line_rate_bps=200e9, msg_rate_pps=1e8, hosts=())


def checked(n: int, slow: dict[str, float]) -> FleetCheck:
    return FleetCheck("sim:x", INFO, 1 << 20, check_fleet(Fake(slow), fleet(n)))


def test_colours_go_from_green_at_the_reference_to_red_at_half() -> None:
    assert colour(1.2) == colour(1.0) == "hsl(120, 65%, 45%)"
    assert colour(0.75) == "hsl(60, 65%, 45%)" and colour(0.5) == colour(0.1) == "hsl(0, 65%, 45%)"


def test_a_small_fleet_has_its_whole_map_with_the_measured_pairs_only() -> None:
    check = checked(8, {"h03": 0.5})
    hosts, rows = heat_map(check)
    assert hosts == tuple(fleet(8)) and len(rows) == 8 and all(len(r) == 8 for r in rows)
    measured = {(s, d) for s, row in zip(hosts, rows, strict=True) for d, c in zip(hosts, row, strict=True)
                if c.gbs is not None}
    assert measured == set(check.result.matrix())
    slow = rows[hosts.index("h02")][hosts.index("h03")]
    assert slow.fraction < 0.6 and slow.colour == colour(slow.fraction)
    assert all(c.colour == "" for row in rows for c in row if c.gbs is None)


def test_a_large_fleet_maps_its_suspects_and_the_hosts_they_were_measured_with() -> None:
    check = checked(200, {"h17": 0.5, "h150": 0.4})
    hosts, _ = heat_map(check)
    assert len(hosts) <= WHOLE_MAP_HOSTS and hosts[:2] == ("h150", "h17")  # the worst first
    peers = {h for pair in check.result.matrix() for h in pair if {"h17", "h150"} & set(pair)}
    assert set(hosts) == peers


def test_the_page_shows_names_as_text() -> None:
    page = render_fleet_html(checked(8, {"h03": 0.5}))
    assert "&lt;b&gt;NIC&lt;/b&gt;" in page and "<b>NIC</b>" not in page
    assert 'data-host="h03"' in page and "<script" not in page
