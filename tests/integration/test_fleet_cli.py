"""``collie fleet check`` through the CLI on simulated fleets: a clean fleet exits 0 after one ring, a fleet with
two faulty hosts names exactly them (exit 1) with their evidence, JSON and the HTML heat map, and every usage
mistake is one sentence and exit 2."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from collie.targets.sim.profile import PROFILE_DIR
from tests.conftest import run_cli


def faulty_fleet(folder: Path, hosts: int = 16) -> Path:
    text = (PROFILE_DIR / "fleet8-cx6.toml").read_text(encoding="utf-8")
    text = text.replace('name = "fleet8-cx6"', 'name = "faulty"').replace("\nhosts = 8\n", f"\nhosts = {hosts}\n")
    path = folder / "faulty.toml"
    path.write_text(text + '\n[[faults]]\nhost = "h05"\nkind = "pcie"\nfactor = 0.25\n'
                           '\n[[faults]]\nhost = "h11"\nkind = "port_speed"\nfactor = 0.5\n', encoding="utf-8")
    return path


def test_a_slow_link_between_switches_is_named_as_a_slow_path_between_healthy_hosts(tmp_path: Path) -> None:
    from collie.targets.sim.fabric import spread

    (spine, _), *_ = spread("h07", "h08", 2, 4)  # the spine ECMP puts one of the ring's h07 -> h08 QPs on
    text = (PROFILE_DIR / "fleet8-cx6.toml").read_text(encoding="utf-8")
    text = text.replace('name = "fleet8-cx6"', 'name = "slowlink"').replace("\nhosts = 8\n", "\nhosts = 32\n")
    path = tmp_path / "slowlink.toml"
    path.write_text(text + "\n[fabric]\nhosts_per_leaf = 8\nspines = 4\nuplink_gbps = 400\n"
                           f"\n[[fabric.slow_links]]\nleaf = 0\nspine = {spine}\nfactor = 0.1\n", encoding="utf-8")
    html = tmp_path / "fleet.html"
    r = run_cli("fleet", "check", "--target", f"sim:{path}", "--format", "json", "--html", str(html))
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["suspects"] == [] and data["unexplained"] == ["h07->h08"] and data["exit_code"] == 1
    assert "0 suspect(s): ; 1 slow link(s) between healthy hosts: h07->h08" not in r.stderr
    assert "1 slow link(s) between healthy hosts: h07->h08" in r.stderr
    page = html.read_text(encoding="utf-8")
    assert 'id="unexplained"' in page and "h07-&gt;h08" in page


class Cells(HTMLParser):
    """The heat map's cells (by row) and the suspects' cards of a fleet page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.suspects: list[str] = []
        self.in_map = False
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.in_map = a.get("id") == "heatmap"
        elif self.in_map and tag == "tr":
            self.rows.append([])
        elif self.in_map and tag == "td":
            self.rows[-1].append(a.get("class") or "measured")
        elif tag == "div" and "suspect" in (a.get("class") or ""):
            self.suspects.append(a.get("data-host") or "")
        elif tag == "script":
            self.scripts += 1


def test_a_clean_fleet_takes_one_ring_and_exits_0() -> None:
    r = run_cli("fleet", "check", "--format", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["target"] == "sim:fleet8-cx6" and data["experiments"] == 1 and data["suspects"] == []
    assert data["all_pairs"] == 28 and data["exit_code"] == 0
    assert "clean: no suspect among 8 hosts" in r.stderr


def test_two_faulty_hosts_are_named_with_evidence_and_a_heat_map(tmp_path: Path) -> None:
    profile = faulty_fleet(tmp_path)
    html = tmp_path / "fleet.html"
    r = run_cli("fleet", "check", "--target", f"sim:{profile}", "--format", "json", "--html", str(html))
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert sorted(s["host"] for s in data["suspects"]) == ["h05", "h11"] and data["exit_code"] == 1
    assert data["experiments"] == 2 and data["all_pairs"] == 120
    worst = {s["host"]: s["worst"] for s in data["suspects"]}
    assert worst["h05"] < worst["h11"] < 0.8  # PCIe at a quarter is slower than a port at half
    assert all(any("round 2 (pairs)" in e for e in s["evidence"]) for s in data["suspects"])
    assert "truth" not in r.stdout and "fault:" not in r.stdout  # ground truth is never shown
    page = Cells()
    page.feed(html.read_text(encoding="utf-8"))
    assert page.scripts == 0 and sorted(page.suspects) == ["h05", "h11"]
    body = page.rows[1:]  # the first row holds the column heads
    assert len(body) == 16 and all(len(row) == 16 for row in body)
    measured = sum(cell == "measured" for row in body for cell in row)
    assert measured == len({(link["src"], link["dst"]) for rnd in data["rounds"] for link in rnd["links"]})


def test_the_table_names_the_suspects(tmp_path: Path) -> None:
    r = run_cli("fleet", "check", "--target", f"sim:{faulty_fleet(tmp_path)}")
    assert r.returncode == 1
    assert "suspects" in r.stdout and "h05" in r.stdout and "h11" in r.stdout and "2 suspect(s): h05, h11" in r.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["--target", "sim:cx6-200g"], "sim:cx6-200g has 2 hosts (a, b); a fleet check needs at least 3"),
    (["--margin", "1.5"], "--margin 1.5: a link's shortfall below its round's reference must be in (0, 1)"),
    (["--size", "lots"], "--size lots:"),
    (["--target", "sim:nope"], "nope"),
])
def test_usage_mistakes_are_one_sentence_and_exit_2(args: list[str], says: str) -> None:
    r = run_cli("fleet", "check", *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert says in r.stderr and "Traceback" not in r.stderr


def test_an_html_path_that_is_a_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    r = run_cli("fleet", "check", "--html", str(tmp_path))
    assert r.returncode == 2 and "is a folder; give a file name" in r.stderr


def test_a_fleet_of_dual_port_hosts_is_checked_port_by_port_and_names_the_slow_port(tmp_path: Path) -> None:
    html = tmp_path / "fleet.html"
    r = run_cli("fleet", "check", "--target", "sim:fleet8-cx6-2port", "--format", "json", "--html", str(html))
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert [s["host"] for s in data["suspects"]] == ["h5/1"] and data["nics_per_host"] == 2
    assert data["all_pairs"] == 56 and len(data["hosts"]) == 16 and data["experiments"] == 3
    assert all(len({h.split("/")[0] for h in rnd["order"]}) == len(rnd["order"]) for rnd in data["rounds"])
    assert "1 suspect(s): h5/1" in r.stderr
    page = html.read_text(encoding="utf-8")
    assert "16 NICs (8 hosts x 2)" in page and "rail by rail" in page
    table = run_cli("fleet", "check", "--target", "sim:fleet8-cx6-2port")
    assert table.returncode == 1 and "fleet check of 16 NICs (8 hosts x 2)" in table.stdout.replace("\n", " ")


def test_a_flapping_link_is_named_with_its_host(tmp_path: Path) -> None:
    text = (PROFILE_DIR / "fleet8-cx6.toml").read_text(encoding="utf-8").replace('name = "fleet8-cx6"',
                                                                                  'name = "flapping"')
    path = tmp_path / "flapping.toml"
    path.write_text(text + '\n[[faults]]\nhost = "h4"\nkind = "flapping_link"\nfactor = 0.8\n', encoding="utf-8")
    r = run_cli("fleet", "check", "--target", f"sim:{path}", "--format", "json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    # up 80 % of the time, and RC waits out its timeout after each of two outages a second: two thirds of the rate
    assert [s["host"] for s in data["suspects"]] == ["h4"] and 0.6 < data["suspects"][0]["worst"] < 0.72
