"""Hatchling build hook: compile collie's native traffic loop (``collie/targets/verbs/_native.c``) in place.

Wired by ``[tool.hatch.build.targets.wheel.hooks.custom]`` in pyproject.toml, so it runs for ``pip install -e .``
(editable: the extension is built beside its source, where the checkout imports it) and for ``pip install .`` or
``pip wheel .`` (the built extension is force-included and the wheel becomes platform-tagged). The build itself
is ``collie/targets/verbs/native_build.py``, loaded here by file path: pip's isolated build environment cannot
import collie. Nothing here ever fails the build: without a compiler or a header the wheel stays pure Python,
``_native_build.txt`` keeps the reason, and the engine says it at run time (pip hides a hook's output unless
``-v``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

#: Where the module and its build record go inside the wheel.
PACKAGE_DIR = "collie/targets/verbs"


def load_native_build(root: Path) -> ModuleType:
    """Load ``collie/targets/verbs/native_build.py`` under ``root`` by file path (collie need not be importable).

    Raises:
        ImportError: when the file is not there or cannot be loaded.
    """
    path = root / PACKAGE_DIR / "native_build.py"
    name = "_collie_native_build"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def build_native(root: Path, version: str, build_data: dict[str, Any],
                 out_dir: Path | None = None) -> tuple[bool, str]:
    """Build the native module and, for a standard (non-editable) wheel, put it in ``build_data``; never raises.

    Args:
        root: the project root (where pyproject.toml is).
        version: the wheel version hatchling builds, ``standard`` or ``editable``.
        build_data: the build data hatchling passes to the hook; changed only when a standard wheel is built.
        out_dir: build there instead of in place (for tests).

    Returns:
        Whether the module was built, and the line to show.
    """
    try:
        native_build = load_native_build(root)
        outcome = native_build.build(out_dir)
        if version != "editable":
            force_include = build_data.setdefault("force_include", {})
            record = (out_dir or native_build.HERE).resolve() / native_build.RECORD_NAME
            if record.is_file():
                force_include[str(record)] = f"{PACKAGE_DIR}/{native_build.RECORD_NAME}"
            if outcome.path is not None:
                force_include[str(outcome.path)] = f"{PACKAGE_DIR}/{outcome.path.name}"
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
        return outcome.path is not None, str(outcome.line())
    except Exception as exc:  # the install must never fail because of the native part
        return False, f"the native traffic loop was not built: its build hook failed ({type(exc).__name__}: {exc})"


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # outside a build (the unit tests load this file for build_native): no hook class
    pass
else:

    class NativeBuildHook(BuildHookInterface[Any]):
        """Builds the native traffic loop for the wheel target."""

        def initialize(self, version: str, build_data: dict[str, Any]) -> None:
            """Build the module before hatchling collects the wheel's files."""
            built, line = build_native(Path(self.root), version, build_data)
            if built:
                self.app.display_info(line)
            else:
                self.app.display_warning(line)
