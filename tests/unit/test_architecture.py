"""The house: every import of the package points down its floors, and no modules import each other in a loop.

A floor is a set of *units* (a subpackage such as ``collie.targets``, or a top-level module such as
``collie.oracle``). A module may import its own unit and any unit of a lower floor; two units of one floor know
nothing of each other. Every import counts, wherever it is written (module level, inside a function, under
``TYPE_CHECKING``): a lazy import that hides an upward arrow is still one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import collie

PACKAGE = Path(collie.__file__).resolve().parent

#: the floors, from the ground up
FLOORS: tuple[tuple[str, ...], ...] = (
    ("collie.errors", "collie.metrics", "collie.data"),
    ("collie.codec",),
    ("collie.tomlio",),
    ("collie.model",),
    ("collie.strategies", "collie.collectors", "collie.shrink"),
    ("collie.targets",),
    ("collie.oracle", "collie.mfs", "collie.remote"),
    ("collie.calibrate", "collie.minimize", "collie.fleet", "collie.importers"),
    ("collie.preset",),
    ("collie.storage",),
    ("collie.events",),
    ("collie.experiment",),
    ("collie.campaign",),
    ("collie.report", "collie.gate"),
    ("collie.services",),
    ("collie.cli",),
    ("collie.agent", "collie.__main__"),
)
FLOOR = {unit: level for level, units in enumerate(FLOORS) for unit in units}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("collie", *parts)).removesuffix(".__init__")
        yield name, path


def _unit(module: str) -> str | None:
    """The unit ``module`` belongs to (None for the package's own face, ``collie``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else None


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every collie module ``path`` imports (``from a import b`` names ``a.b`` when that is a
    module, else ``a``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("collie."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                (node.module == "collie" or node.module.startswith("collie.")):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                is_module = (PACKAGE.parent / sub.replace(".", "/")).with_suffix(".py").exists() or \
                    (PACKAGE.parent / sub.replace(".", "/")).is_dir()
                yield node.lineno, sub if is_module else node.module


MODULES = dict(_modules())


def test_every_unit_has_a_floor() -> None:
    units = {_unit(m) for m in MODULES} - {None}
    assert units - FLOOR.keys() == set(), "a new unit needs a floor in FLOORS (and a line in CONTRIBUTING.md)"
    assert FLOOR.keys() - units == set(), "FLOORS names a unit that no longer exists"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    own = _unit(module)
    wrong = []
    for line, imported in sorted(set(_imports(MODULES[module]))):
        unit = _unit(imported)
        if unit is None or own is None or unit == own:
            continue
        if FLOOR[unit] >= FLOOR[own]:
            wrong.append(f"line {line}: {imported} (floor {FLOOR[unit]}, {module} is on {FLOOR[own]})")
    assert not wrong, f"{module} imports sideways or up: " + "; ".join(wrong)


def test_no_modules_import_each_other_in_a_loop() -> None:
    graph = {m: {i for _, i in _imports(p) if i in MODULES and i != m} for m, p in MODULES.items()}
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    loops.append(sorted(component))
    assert not loops, f"modules that import each other: {loops}"
