"""Architecture: nothing but ``collie/codec.py`` defines a checked reader (an AST scan of the package).

A checked reader is recognised by what it does, not only by its name:

* a module-level function named like a reader's helper (``expect_type``, ``check_fields``, ``_expect``, ``_mapping_of``,
  ``_shown``, ``_opt_str``, ...), or named after a value kind (``_str``, ``_int``, ``_number``, ``_table``, ...)
  and testing a value's type with ``isinstance`` (a formatter named ``_number`` does not);
* a class with two or more typed getters (``text``, ``number``, ``flag``, ``items``, ``table``, ...): a copy of
  :class:`collie.codec.Table`;
* in the modules whose records are read through the codec, any function that tests a type with ``isinstance``
  and raises ``InputError`` or ``ProtocolError`` itself.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import collie

PACKAGE = Path(collie.__file__).resolve().parent
CODEC = PACKAGE / "codec.py"
#: Helper names only a checked reader has.
READER_NAMES = re.compile(r"_?(expect(_\w+)?|check_fields|mapping_of|shown|str_list|opt_\w+|objects|is_number)")
#: Names of a value kind: a reader's helper when the function also checks a type.
KIND_NAMES = re.compile(r"_(str|string|int|integer|float|number|numbers|bool|flag|table|text|items|list|date|count)")
GETTERS = frozenset({"text", "string", "number", "integer", "flag", "items", "table", "numbers", "strings", "count"})
#: The modules whose records the codec reads: they raise no reading error of their own.
ON_THE_CODEC = ("targets/base.py", "storage/records.py", "storage/case.py", "gate/waivers.py", "mfs.py",
                "remote/protocol.py", "tomlio.py", "campaign/runlog.py", "collectors/snapshot.py", "collectors/port.py",
                "oracle.py")
ERRORS = frozenset({"InputError", "ProtocolError"})


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _checks_a_type(fn: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "isinstance"
               for n in ast.walk(fn))


def _raises_a_reading_error(fn: ast.AST) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Raise) and n.exc is not None:
            raised = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
            if (raised.id if isinstance(raised, ast.Name) else getattr(raised, "attr", "")) in ERRORS:
                return True
    return False


def checked_readers(source: str, on_the_codec: bool = False) -> list[str]:
    """What in ``source`` is a checked reader, by the module docstring's rules (one phrase each)."""
    tree = ast.parse(source)
    found: list[str] = []
    top = {id(n) for n in tree.body}
    for fn in _functions(tree):
        named = READER_NAMES.fullmatch(fn.name) or (KIND_NAMES.fullmatch(fn.name) and _checks_a_type(fn))
        if id(fn) in top and named:
            found.append(f"function {fn.name} (line {fn.lineno})")
        elif on_the_codec and _checks_a_type(fn) and _raises_a_reading_error(fn):
            found.append(f"function {fn.name} checks types and raises (line {fn.lineno})")
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        getters = {m.name for m in cls.body if isinstance(m, ast.FunctionDef)} & GETTERS
        if len(getters) >= 2:
            found.append(f"class {cls.name} with getters {', '.join(sorted(getters))} (line {cls.lineno})")
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p != CODEC)


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_but_the_codec_defines_a_checked_reader(module: Path) -> None:
    name = str(module.relative_to(PACKAGE))
    assert checked_readers(module.read_text(encoding="utf-8"), name in ON_THE_CODEC) == [], name


def test_the_modules_on_the_codec_exist() -> None:
    assert all((PACKAGE / name).is_file() for name in ON_THE_CODEC)


def test_the_rules_recognise_the_readers_the_codec_replaced() -> None:
    old = '''
def _expect(value, kinds, where, what):
    if not isinstance(value, kinds):
        raise InputError(f"{where}: expected {what}, got {value!r}")
    return value

def _str(d, key):
    v = d[key]
    if not isinstance(v, str):
        raise ProtocolError(f"field {key!r} is not a string: {v!r}")
    return v

def _number(value):
    return f"{value:.4g}"

def read_row(row, where):
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected an object")

class _Table:
    def text(self, key): ...
    def number(self, key): ...
'''
    found = checked_readers(old, on_the_codec=True)
    assert [f.split(" (")[0] for f in found] == [
        "function _expect", "function _str", "function read_row checks types and raises",
        "class _Table with getters number, text"]
    assert checked_readers(old) == [f for f in found if "read_row" not in f]
    assert checked_readers(CODEC.read_text(encoding="utf-8"))  # the codec is where they live
