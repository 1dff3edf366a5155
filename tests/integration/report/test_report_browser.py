"""The HTML report in a real headless Chromium (Debian's chromium + chromium-driver, through selenium).

The page must load with no console error and no request for anything but itself (every other URL a data:
URL), show a card and a plot per anomaly, and show a workload, host and counter named
``<script>alert(1)</script>`` as text: no alert, no script element.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reporthelpers import SCRIPT, hostile_copy

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

    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1300, min(int(height) + 100, 16000))
    shot = Path(os.environ.get("COLLIE_REPORT_SCREENSHOT", str(html.with_suffix(".png"))))
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_the_comparison_page_loads_offline_and_shows_every_anomaly(browser: Any, campaign: Path,
                                                                   tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    hostile = hostile_copy(campaign, tmp_path / "hostile")
    html = tmp_path / "compare.html"
    r = run_cli("report", "--compare", str(campaign), str(hostile), "-o", str(html))
    assert r.returncode == 0, r.stderr
    driver: Any = browser
    driver.get_log("performance")
    driver.get(html.as_uri())
    assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")] == []
    assert [u for u in _requests(driver) if u != html.as_uri() and not u.startswith("data:")] == []
    assert driver.execute_script("return document.scripts.length") == 0
    cards = driver.find_elements(By.CSS_SELECTOR, ".card")
    assert len(cards) == len(list((campaign / "anomalies").iterdir()))  # the same campaign: all still present
    cpu = next(row for row in driver.find_elements(By.CSS_SELECTOR, "table.fingerprints tr")
               if row.text.startswith("cpu") or SCRIPT in row.text)
    assert SCRIPT in cpu.text
