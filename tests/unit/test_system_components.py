"""The one rule for missing system components: skip naming the install command, or under CI fail with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.system_components import COMPONENTS, INSTALL_ALL, require


def test_a_missing_component_skips_naming_the_command_that_installs_it(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no command is found
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require("chromedriver")
    assert str(skipped.value) == COMPONENTS["chromedriver"].sentence()
    assert "apt-get install -y --no-install-recommends chromium-driver" in str(skipped.value)
    assert INSTALL_ALL in str(skipped.value)


def test_under_ci_a_missing_component_fails_with_the_same_sentence(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no command is found
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        require("chromedriver")
    assert str(failed.value) == COMPONENTS["chromedriver"].sentence()


def test_a_present_component_lets_the_test_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "chromedriver").write_text("#!/bin/sh\n")
    (tmp_path / "chromedriver").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    require("chromedriver")


def test_every_package_a_component_names_is_one_the_install_script_installs() -> None:
    script = (ROOT / ".ci" / "system-packages").read_text()
    installed = {p for group in re.findall(r"need\+=\(([^)]*)\)", script) for p in group.split()}
    named = {p for c in COMPONENTS.values() for p in c.packages}
    assert named == installed, (named - installed, installed - named)
