"""Fixture paths and sysfs trees built from the shared dumps."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import COUNTER_FIXTURES, ttar_tree

FIXTURES = COUNTER_FIXTURES


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def mlx5_root(tmp_path: Path) -> Path:
    """A sysfs root holding the procfs mlx5_0 fixture."""
    archive = FIXTURES / "sysfs_infiniband_mlx5_0_procfs_fixture.ttar"
    return ttar_tree.extract_ttar(archive, tmp_path)  # type: ignore[no-any-return]


@pytest.fixture
def rxe_root(tmp_path: Path) -> Path:
    return ttar_tree.make_rxe_tree(tmp_path / "rxe")  # type: ignore[no-any-return]
