"""The CLI's boundary, read from its source (AST): it parses options, calls a service and renders.

Rules:
    * no module under ``collie/cli/`` takes a private name (``_name``) from outside ``collie/cli/``: neither
      ``from x import _y`` nor ``module._y`` on a module it imported;
    * the CLI does not reach past the services into what they orchestrate: it imports nothing from the campaign's
      modules (only the ``collie.campaign`` package's public names), the minimizer, the experiment runner,
      calibration, the case loader or the campaign folder's store, and from the oracle only the types it renders;
      it opens no target itself (``open_target`` is the services').
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLI = ROOT / "collie" / "cli"
FILES = sorted(CLI.rglob("*.py"))

#: modules the CLI must not import at all (a service does that work); ``collie.campaign.*``: any module of the
#: campaign package (its public names come from ``collie.campaign`` itself)
FORBIDDEN_MODULES = ("collie.campaign.*", "collie.minimize", "collie.minimize.*", "collie.experiment",
                     "collie.calibrate", "collie.storage.corpus")
#: names the CLI must not import from a module (another module of the library owns that work)
FORBIDDEN_NAMES = {"collie.storage.campaign": {"CampaignStore", "CampaignConfig"},
                   "collie.storage.records": {"CampaignConfig"},
                   "collie.targets.registry": {"open_target", "open_session"},
                   "collie.gate": {"run_gate"}}
#: the only names the CLI takes from the oracle: the types of what it renders
ORACLE_TYPES = {"Oracle", "Verdict", "Symptom"}


def _in_cli(module: str) -> bool:
    return module == "collie.cli" or module.startswith("collie.cli.")


def _imports(tree: ast.AST) -> Iterator[tuple[int, str, str | None]]:
    """``(line, module, name)`` for every import (``name`` None for ``import module``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            for alias in node.names:
                yield node.lineno, node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of this repository."""
    path = ROOT / dotted.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").is_file()


def _imported_module(module: str, name: str | None) -> str:
    """The module an import binds or takes a name from: ``from collie import calibrate`` is ``collie.calibrate``,
    ``from collie.oracle import Verdict`` is ``collie.oracle``."""
    return module if name is None or not _is_module(f"{module}.{name}") else f"{module}.{name}"


def _forbidden(module: str) -> bool:
    return any(module.startswith(m[:-1]) if m.endswith("*") else module == m for m in FORBIDDEN_MODULES)


def _module_names(tree: ast.AST) -> set[str]:
    """Local names bound to a module from outside ``collie/cli`` (``import x``, ``import x as y``,
    ``from collie import calibrate``)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {a.asname or a.name.split(".")[0] for a in node.names if not _in_cli(a.name)}
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not _in_cli(node.module):
            bound |= {a.asname or a.name for a in node.names if _is_module(f"{node.module}.{a.name}")}
    return bound


def _violations(source: str, where: str) -> list[str]:
    """What in the module ``source`` (named ``where`` in messages) breaks the rules."""
    tree = ast.parse(source, where)
    found: list[str] = []
    for line, module, name in _imports(tree):
        if not module.startswith("collie") or _in_cli(module):
            continue
        if name is not None and name.startswith("_") and not name.startswith("__"):
            found.append(f"{where}:{line}: imports the private name {name} from {module}")
        imported = _imported_module(module, name)
        if _forbidden(imported):
            found.append(f"{where}:{line}: imports {imported}, which a service uses for it")
        if name is not None and name in FORBIDDEN_NAMES.get(module, set()):
            found.append(f"{where}:{line}: imports {name} from {module}, which a service uses for it")
        if module == "collie.oracle" and name is not None and name not in ORACLE_TYPES:
            found.append(f"{where}:{line}: imports {name} from collie.oracle (only {sorted(ORACLE_TYPES)})")
    modules = _module_names(tree)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in modules):
            found.append(f"{where}:{node.lineno}: uses the private {node.value.id}.{node.attr}")
    return found


def test_the_rules_see_every_cli_module() -> None:
    assert len(FILES) > 10 and CLI / "case_cmd.py" in FILES and CLI / "campaign_cmd.py" in FILES


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(CLI)) for p in FILES])
def test_a_cli_module_keeps_to_its_side_of_the_services(path: Path) -> None:
    assert _violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))) == []


@pytest.mark.parametrize(("source", "why"), [
    ("from collie.campaign.chain import _described\n", "private name _described"),
    ("from collie.campaign.runner import TrialRunner\n", "imports collie.campaign.runner,"),
    ("from collie.campaign import CampaignInterrupted\n", None),
    ("import collie.minimize\n", "imports collie.minimize"),
    ("from collie import calibrate\ncalibrate._x()\n", "imports collie.calibrate"),
    ("from collie import calibrate\ncalibrate._x()\n", "uses the private calibrate._x"),
    ("from collie.oracle import receivers\n", "imports receivers from collie.oracle"),
    ("from collie.targets.registry import open_target\n", "imports open_target from collie.targets.registry"),
    ("from collie.storage.campaign import CampaignStore\n", "imports CampaignStore"),
    ("import collie.storage.case as case\ncase._read()\n", "uses the private case._read"),
    ("from collie.cli.render import _cell\n_cell(1)\n", None),
])
def test_the_rules_catch_what_they_forbid(source: str, why: str | None) -> None:
    found = _violations(source, "collie/cli/probe.py")
    assert any(why in v for v in found) if why is not None else found == [], found
