"""A campaign folder written by the current collie, made once for the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from reporthelpers import make_campaign


@pytest.fixture(scope="session")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``collie campaign --budget 150 --seed 2`` on the default simulator target (do not modify it)."""
    return make_campaign(tmp_path_factory.mktemp("report") / "c150")
