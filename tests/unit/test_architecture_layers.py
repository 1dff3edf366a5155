"""The floors of the house, checked over every module's syntax tree: the targets import nothing of the remote layer
(also inside functions and by a module name handed to importlib), the model imports nothing of collie above it,
and a target spec string is split only by the target registry and the kind parsers it calls."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import collie

PACKAGE = Path(collie.__file__).resolve().parent
ROOT = PACKAGE.parent
#: what ``collie/model/*`` may import of collie: itself and the ground floor's helpers
MODEL_ALLOWED = ("collie.model", "collie.errors", "collie.data", "collie.tomlio", "collie.codec")
#: calls that import a module named by a string
IMPORTERS = frozenset({"import_module", "find_spec", "__import__"})
#: every ``X.partition(":")``-like split in collie, by module and the expression split: the registry and the
#: kind parsers it calls split spec strings; the others split strings that are not target specs
COLON_SPLITS = {
    ("targets/registry.py", "text"): "KIND[:REST] of a target spec, the one place it is split",
    ("targets/verbs/spec.py", "rest"): "REST of verbs:DEVICE[:PORT[:GID]], the verbs kind's parser",
    ("collectors/catalog.py", "name"): "a counter name's source: prefix",
    ("oracle.py", "reported"): "a counter name's source: prefix",
    ("targets/verbs/device.py", "line"): "a 'name: value' line of a device's sysfs or tool output",
    ("report/machines.py", "endpoint"): "address:port of a remote role's recorded SSH endpoint",
}


def _modules(under: str = "") -> list[Path]:
    return sorted((PACKAGE / under).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> Iterator[tuple[int, str]]:
    """Every module the collie module ``path`` imports, with its line (see :func:`_imports`)."""
    package = _module_name(path).split(".")
    yield from _imports(path.read_text(encoding="utf-8"), package if path.name == "__init__.py" else package[:-1])


def _imports(source: str, package: list[str]) -> Iterator[tuple[int, str]]:
    """Every module ``source`` (a module of ``package``) imports, with its line: import statements anywhere
    (module level, functions, ``TYPE_CHECKING`` blocks), ``from collie import x`` as ``collie.x``, relative
    imports resolved, and string module names handed to ``importlib.import_module``, ``find_spec`` or
    ``__import__``, or written as a whole string constant."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*package[:len(package) - node.level + 1], *([node.module] if node.module else [])]) \
                if node.level else node.module or ""
            yield node.lineno, base
            yield from ((node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in IMPORTERS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                yield node.lineno, node.args[0].value
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("collie.") \
                and node.value.replace(".", "").replace("_", "").isalnum():
            yield node.lineno, node.value


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in prefixes)


def _colon_splits(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("partition", "rpartition", "split", "rsplit") and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and ":" in node.args[0].value:
            yield node.lineno, ast.unparse(node.func.value)


def test_the_probe_sees_imports_of_every_form() -> None:
    source = ("import importlib\nfrom collie import remote\n"
              "def f() -> None:\n    from collie.remote.agent import Agent\n"
              "    importlib.import_module('collie.remote.orchestrator')\n    NAME = 'collie.remote.kind'\n"
              "from . import registry\n")
    found = [name for _, name in _imports(source, ["collie", "targets"])]
    assert {"collie.remote", "collie.remote.agent", "collie.remote.orchestrator", "collie.remote.kind",
            "collie.targets.registry"} <= set(found)


@pytest.mark.parametrize("path", _modules("targets"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_target_module_imports_the_remote_layer(path: Path) -> None:
    remote = [f"line {line}: {name}" for line, name in _imported(path) if _within(name, ("collie.remote",))]
    assert remote == [], f"{path.relative_to(ROOT)} imports the remote layer (above it): {remote}"


@pytest.mark.parametrize("path", _modules("model"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_model_imports_nothing_of_collie_above_it(path: Path) -> None:
    above = [f"line {line}: {name}" for line, name in _imported(path)
             if _within(name, ("collie",)) and name != "collie" and not _within(name, MODEL_ALLOWED)]
    assert above == [], f"{path.relative_to(ROOT)} imports above the model: {above}"


def test_a_spec_string_is_split_only_by_the_registry_and_its_kind_parsers() -> None:
    found = {(str(path.relative_to(PACKAGE)), receiver): line
             for path in _modules() for line, receiver in _colon_splits(path)}
    unexpected = sorted(f"{where}:{line}: {receiver}.partition(':')" for (where, receiver), line in found.items()
                        if (where, receiver) not in COLON_SPLITS)
    assert unexpected == [], ("split a target spec with collie.targets.registry.parse_target, not by hand "
                              f"(a colon split of something else: add it to COLON_SPLITS with why): {unexpected}")
    assert set(COLON_SPLITS) <= set(found), "COLON_SPLITS names a split that is gone; remove it"


def test_importing_the_target_layer_loads_no_remote_module() -> None:
    modules = ("collie.targets.registry", "collie.targets.sim.session", "collie.targets.sim.totals",
               "collie.targets.verbs.kind", "collie.targets.verbs.session")
    code = (f"import sys, {', '.join(modules)}; "
            "print('\\n'.join(m for m in sys.modules if m.startswith('collie')))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split())
    assert "collie.targets.registry" in loaded
    assert {m for m in loaded if _within(m, ("collie.remote",))} == set()
