"""Shared fixtures: paths into the checkout and a helper that runs the real CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "workloads" / "examples"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m collie ARGS`` as a user would; returns the completed process (never raises on exit)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "collie", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli
