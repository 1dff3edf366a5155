"""Fixture paths and sysfs trees built from the shared dumps."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "counters"


def _helper() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ttar_tree", FIXTURES / "ttar_tree.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ttar_tree = _helper()


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
