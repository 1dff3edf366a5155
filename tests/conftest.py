"""Shared fixtures: paths into the checkout and a helper that runs the real CLI in a subprocess."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "workloads" / "examples"
COUNTER_FIXTURES = ROOT / "tests" / "fixtures" / "counters"


def _load_ttar_tree() -> ModuleType:
    """The fixture helper that unpacks ttar archives into sysfs-like trees (it lives beside the fixtures)."""
    spec = importlib.util.spec_from_file_location("ttar_tree", COUNTER_FIXTURES / "ttar_tree.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ttar_tree = _load_ttar_tree()


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 120,
            columns: int = 160) -> subprocess.CompletedProcess[str]:
    """Run ``python -m collie ARGS`` as a user would, in a terminal ``columns`` wide; returns the completed process
    (never raises on exit)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "collie", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def ctrl_c_reaches_it() -> None:
    """``preexec_fn`` of a child a test sends SIGINT: Ctrl-C is its default even when the tests run from a
    background job of a non-interactive shell (which starts them with SIGINT ignored, and Python then never raises
    KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    return run_cli
