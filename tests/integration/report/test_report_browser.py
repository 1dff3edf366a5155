"""The HTML report in a real headless Chromium (Debian's chromium + chromium-driver, through selenium).

The page must load with no console error and no request for anything but itself (every other URL a data:
URL), show a card and a plot per anomaly, and show a workload, host and counter named
``<script>alert(1)</script>`` as text: no alert, no script element. A simulated campaign's page opens with a
banner saying so, its table of anomalies links to every card, a remote campaign's page names each role's host,
and command lines wrap between words. ``COLLIE_REPORT_SHOTS=DIR`` keeps a full-page screenshot of each page
there (``simulated.png``, ``remote.png``, ``compare.png``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reporthelpers import REMOTE_HOSTS, SCRIPT, hostile_copy, remote_copy

from tests.conftest import run_cli
from tests.system_components import require


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    require("chromium")
    require("chromedriver")
    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,900", "--no-first-run", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, campaign: Path) -> tuple[Path, Path]:
    """(campaign folder with hostile names, its HTML report)."""
    base = tmp_path_factory.mktemp("report-browser")
    campaign = hostile_copy(campaign, base / "hostile")
    html = base / "report.html"
    r = run_cli("report", str(campaign), "--format", "html", "-o", str(html))
    assert r.returncode == 0, r.stderr
    return campaign, html


def _open_offline(driver: Any, html: Path) -> None:
    """Open ``html``: it loads with no console error, asks for nothing but itself, and holds no script."""
    driver.get_log("performance")  # drop what came before
    driver.get(html.as_uri())
    assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")] == []
    assert [u for u in _requests(driver) if u != html.as_uri() and not u.startswith("data:")] == []
    assert driver.execute_script("return document.scripts.length") == 0


def _requests(driver: Any) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def test_the_html_report_loads_offline_and_shows_every_card_and_plot(browser: Any, page: tuple[Path, Path]) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    campaign, html = page
    driver: Any = browser
    driver.get_log("performance")  # drop what came before
    driver.get(html.as_uri())
    assert driver.execute_script("return document.readyState") == "complete"

    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    others = [u for u in _requests(driver) if u != html.as_uri() and not u.startswith("data:")]
    assert others == [], f"the report asked for {others}"

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018
    assert driver.execute_script("return document.scripts.length") == 0

    folders = sorted(p.name for p in (campaign / "anomalies").iterdir())
    cards = driver.find_elements(By.CSS_SELECTOR, "section.card.anomaly")
    assert [c.get_attribute("data-anomaly") for c in cards] == folders
    for card in cards:
        plot = card.find_element(By.CSS_SELECTOR, "figure.counters svg")
        assert plot.size["width"] > 200 and plot.size["height"] > 50
        assert card.find_element(By.CSS_SELECTOR, "pre.replay").text.startswith("collie replay ")
    overview = driver.find_element(By.CSS_SELECTOR, "#plot-overview svg")
    assert overview.size["width"] > 400 and overview.size["height"] > 150

    # the hostile names are on the page as text: the workload's name in its case, the host, the counter, the CPU
    first = cards[0]
    assert f'name = "{SCRIPT}"' in first.find_element(By.CSS_SELECTOR, "pre.case").get_attribute("textContent")
    hosts = [h.text for h in first.find_elements(By.CSS_SELECTOR, ".host h3")]
    assert any(SCRIPT in h for h in hosts), hosts
    body = driver.find_element(By.TAG_NAME, "body").get_attribute("textContent")
    assert body.count(SCRIPT) >= 4

    # the banner says "simulated" above everything; the table at the top links to every card
    banner = driver.find_element(By.ID, "simulated")
    assert banner.text.startswith("Simulated results") and banner.is_displayed()
    assert banner.rect["y"] < driver.find_element(By.TAG_NAME, "h1").rect["y"]
    rows = driver.find_elements(By.CSS_SELECTOR, "table.findings tr[data-anomaly]")
    assert [r.get_attribute("data-anomaly") for r in rows] == folders
    for row, card in zip(rows, cards, strict=True):
        link = row.find_element(By.TAG_NAME, "a")
        assert link.get_attribute("href").endswith("#" + card.get_attribute("id"))
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert cells[1].startswith("host ") and cells[1].endswith(("(receiver)", "(sender)", "(victim)")), cells
        assert "x its threshold" in cells[4], cells
    _screenshot(driver, html, "simulated.png")


def _screenshot(driver: Any, html: Path, name: str) -> None:
    """A full-page screenshot of the page shown, into ``COLLIE_REPORT_SHOTS`` (else beside ``html``)."""
    driver.set_window_size(1300, 900)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1300, min(int(height) + 100, 16000))
    shot = Path(os.environ.get("COLLIE_REPORT_SHOTS", str(html.parent))) / name
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    driver.set_window_size(1300, 900)


#: Places where a command's rendered line breaks after a character other than a space (a word cut in two).
_CUT_WORDS = """
const cuts = []; let wraps = 0;
for (const pre of document.querySelectorAll('pre.command')) {
  const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let top = null, prev = ' ';
  while (walker.nextNode()) {
    const node = walker.currentNode;
    for (let i = 0; i < node.length; i++) {
      range.setStart(node, i); range.setEnd(node, i + 1);
      const rects = range.getClientRects();
      if (rects.length) {
        if (top !== null && rects[0].top > top + 2) { wraps++; if (prev !== ' ') cuts.push(pre.textContent); }
        top = rects[0].top;
      }
      prev = node.data[i];
    }
  }
}
return [wraps, cuts];
"""


def test_a_remote_campaigns_page_names_each_roles_host_and_wraps_commands_between_words(
        browser: Any, campaign: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    folder = remote_copy(campaign, tmp_path / "remote")
    html = tmp_path / "remote.html"
    r = run_cli("report", str(folder), "-o", str(html))
    assert r.returncode == 0, r.stderr
    driver: Any = browser
    driver.set_window_size(1300, 900)
    driver.get(html.as_uri())
    assert driver.find_elements(By.ID, "simulated") == []  # hosts that are not simulated
    roles = {row.get_attribute("data-role"): [td.text for td in row.find_elements(By.TAG_NAME, "td")]
             for row in driver.find_elements(By.CSS_SELECTOR, "table.machines tr[data-role]")}
    assert roles == {role: [role, host, endpoint.split("@")[1].rsplit(":", 1)[0], target, *target.split(":")[1:], gid]
                     for role, (host, endpoint, target, gid) in REMOTE_HOSTS.items()}
    for card in driver.find_elements(By.CSS_SELECTOR, "section.card.anomaly"):
        assert " on node-" in card.find_element(By.CSS_SELECTOR, "h2 .headline").text
        hosts = [h.text for h in card.find_elements(By.CSS_SELECTOR, ".host h3")]
        # each host by its inventory name, device and port, and its end (both receive in a case both ways)
        assert hosts and all(re.fullmatch(r"node-a \(mlx5_0:1, (sender|receiver)\)|node-b \(mlx5_1:1, "
                                          r"(sender|receiver)\)", h) for h in hosts), hosts
    cells = [r.find_elements(By.TAG_NAME, "td")[1].text
             for r in driver.find_elements(By.CSS_SELECTOR, "table.findings tr[data-anomaly]")]
    assert cells and all(c.startswith(("node-a (mlx5_0:1, ", "node-b (mlx5_1:1, ")) for c in cells), cells
    _screenshot(driver, html, "remote.png")
    driver.set_window_size(560, 900)  # narrow: the commands wrap
    wraps, cuts = driver.execute_script(_CUT_WORDS)
    assert wraps > 0 and cuts == []


def test_the_comparison_page_loads_offline_and_shows_every_anomaly(browser: Any, campaign: Path,
                                                                   tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    hostile = hostile_copy(campaign, tmp_path / "hostile")
    html = tmp_path / "compare.html"
    r = run_cli("report", "--compare", str(campaign), str(hostile), "-o", str(html))
    assert r.returncode == 0, r.stderr
    driver: Any = browser
    _open_offline(driver, html)
    cards = driver.find_elements(By.CSS_SELECTOR, ".card")
    assert len(cards) == len(list((campaign / "anomalies").iterdir()))  # the same campaign: all still present
    cpu = next(row for row in driver.find_elements(By.CSS_SELECTOR, "table.fingerprints tr")
               if row.text.startswith("cpu") or SCRIPT in row.text)
    assert SCRIPT in cpu.text
    assert driver.find_element(By.ID, "simulated").text.startswith("Simulated results: the old campaign")
    shown = driver.find_element(By.CSS_SELECTOR, "p.shown").text
    rows = driver.find_elements(By.CSS_SELECTOR, "table.throughput tr")[1:]
    assert shown.startswith(f"{len(rows)} of ") or shown == f"All {len(rows)} workloads, largest change first."
    for row in rows:  # each workload in words, beside its key
        words, key = (td.text for td in row.find_elements(By.TAG_NAME, "td")[:2])
        assert words.startswith(("calibrate-", "a victim alone")) or (" " in words and "QP" in words), (words, key)
    _screenshot(driver, html, "compare.png")


def test_the_fleet_check_page_loads_offline_with_its_heat_map(browser: Any, tmp_path: Path) -> None:
    """``collie fleet check --html``: the page of a simulated fleet with two faulty hosts, in the browser."""
    from selenium.webdriver.common.by import By

    from tests.integration.test_fleet_cli import faulty_fleet

    html = tmp_path / "fleet.html"
    r = run_cli("fleet", "check", "--target", f"sim:{faulty_fleet(tmp_path)}", "--html", str(html))
    assert r.returncode == 1, r.stderr
    driver: Any = browser
    _open_offline(driver, html)
    assert driver.find_element(By.ID, "simulated").is_displayed()
    cards = driver.find_elements(By.CSS_SELECTOR, "div.card.suspect")
    assert sorted(c.get_attribute("data-host") for c in cards) == ["h05", "h11"]
    heat = driver.find_element(By.ID, "heatmap")
    assert heat.is_displayed() and heat.size["width"] > 400
    cells = heat.find_elements(By.CSS_SELECTOR, "td[title]")
    # a measured cell of a faulty host's link is red, a healthy one green (as the browser computed them)
    rgb = {c.get_attribute("title").split(":")[0]:
           [int(x) for x in re.findall(r"\d+", c.value_of_css_property("background-color"))[:3]] for c in cells}
    red, green = rgb["h04 -> h05"], rgb["h00 -> h01"]
    assert red[0] > 2 * red[1] and green[1] > 2 * green[0], (red, green)
    if os.environ.get("COLLIE_REPORT_SHOTS"):
        driver.save_screenshot(str(Path(os.environ["COLLIE_REPORT_SHOTS"]) / "fleet.png"))


def test_an_import_folders_page_loads_offline_with_a_plot_per_sweep(browser: Any, tmp_path: Path) -> None:
    """Real perftest and nccl-tests logs imported: one plot per bandwidth sweep and per collective, every row in
    the table, a log named like a script shown as text."""
    from selenium.webdriver.common.by import By

    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    sweep = next((fixtures / "perftest").glob("07-*"))
    named = SCRIPT.replace("/", "_") + ".txt"
    (tmp_path / named).write_bytes(sweep.read_bytes())
    for tool, logs, plots, rows in (("perftest", [sweep, tmp_path / named], 2, 46),
                                    ("nccl-tests", sorted((fixtures / "nccl_tests").glob("0[12]-*")), 7, 70)):
        folder, html = tmp_path / tool, tmp_path / f"{tool}.html"
        assert run_cli("import", tool, *map(str, logs), "-o", str(folder)).returncode == 0
        done = run_cli("report", str(folder), "--format", "html", "-o", str(html))
        assert done.returncode == 0, done.stderr
        _open_offline(browser, html)
        assert len(browser.find_elements(By.CSS_SELECTOR, ".plot svg")) == plots
        assert len(browser.find_elements(By.CSS_SELECTOR, "#rows tr")) == rows + 1
        if tool == "perftest":
            assert named in browser.find_element(By.TAG_NAME, "body").text
