"""The strategies know nothing about RDMA: what importing them loads, and what they import."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import collie
import collie.strategies

#: the package root, so a fresh interpreter imports the same checkout as this one
ROOT = Path(collie.__file__).resolve().parents[1]
STRATEGIES = Path(collie.strategies.__file__).resolve().parent
#: what ``collie/strategies/*`` may import of collie (generic modules, none of which imports an RDMA module)
ALLOWED = ("collie.strategies", "collie.metrics", "collie.errors", "collie.model.points", "collie.model.dimensions")
RDMA = ("collie.model.features", "collie.model.space", "collie.model.workload", "collie.oracle", "collie.targets",
        "collie.model.constraints", "collie.collectors", "collie.campaign")


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in prefixes)


def _loaded(module: str) -> set[str]:
    """The collie modules a fresh interpreter has loaded after ``import module``."""
    code = f"import sys, {module}; print('\\n'.join(m for m in sys.modules if m.startswith('collie')))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


def test_importing_the_strategies_loads_no_rdma_module() -> None:
    loaded = _loaded("collie.strategies")
    assert "collie.strategies.anneal" in loaded  # the probe sees what it should
    assert not {m for m in loaded if _within(m, RDMA)}
    assert {m for m in loaded if m not in ("collie", "collie.model") and not _within(m, ALLOWED)} == set()


def test_the_strategies_import_only_themselves_and_generic_modules() -> None:
    for source in sorted(STRATEGIES.glob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name == "collie" or name.startswith("collie."):
                    assert _within(name, ALLOWED), f"{source.name} imports {name}"


@pytest.mark.parametrize("module", ["collie.metrics", "collie.oracle", "collie.model.points",
                                    "collie.model.dimensions"])
def test_the_modules_strategies_share_with_the_rest_load_no_strategy(module: str) -> None:
    loaded = _loaded(module)
    assert module in loaded
    assert not {m for m in loaded if _within(m, ("collie.strategies",))}


def test_the_generic_modules_load_no_rdma_module() -> None:
    for module in ("collie.metrics", "collie.model.points", "collie.model.dimensions"):
        assert not {m for m in _loaded(module) if _within(m, RDMA)}, module
