"""Building the native traffic loop (collie/targets/verbs/native_build.py) and the hatchling hook that runs it.

A build that can succeed needs a C compiler, this Python's headers and <infiniband/verbs.h>: without them those
tests skip, except under CI, where they fail (tests/system_components.py). Every build here goes to a temporary
folder, never into the checkout.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from collie.targets.verbs import native_build
from collie.targets.verbs.native_build import BUILT, CFLAGS_ENV, RECORD_NAME, BuildOutcome, build, last_reason
from tests.conftest import ROOT
from tests.system_components import require

SO_NAME = native_build.module_filename()


@pytest.fixture(autouse=True)
def _no_flags_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CFLAGS_ENV, raising=False)


def _require_build_tools() -> None:
    for component in ("cc", "python-headers", "verbs-header"):
        require(component)


def _imports(folder: Path) -> subprocess.CompletedProcess[str]:
    """Import ``_native`` from ``folder`` in a fresh interpreter (not this one, which must not load it twice)."""
    code = f"import sys; sys.path.insert(0, {str(folder)!r}); import _native; print(_native.__name__)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL, cwd=folder)


def _hook() -> ModuleType:
    """hatch_build.py at the root, loaded by path as hatchling does (no hatchling needed for build_native)."""
    spec = importlib.util.spec_from_file_location("collie_hatch_build_under_test", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_native_loop_builds_into_a_folder_and_imports_from_it(tmp_path: Path) -> None:
    _require_build_tools()
    outcome = build(tmp_path)
    assert outcome == BuildOutcome(tmp_path.resolve() / SO_NAME, None), outcome
    assert outcome.built and outcome.line() == f"built the native traffic loop: {outcome.path}"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([SO_NAME, RECORD_NAME])  # no temporary file left
    run = _imports(tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "_native", run.stderr
    assert (tmp_path / RECORD_NAME).read_text() == f"{BUILT}\n"
    assert last_reason(tmp_path) is None


def test_a_missing_verbs_header_names_libibverbs_dev_and_leaves_no_stale_module(tmp_path: Path) -> None:
    require("cc")
    require("python-headers")
    (tmp_path / SO_NAME).write_bytes(b"an older build")
    outcome = build(tmp_path, cflags=["-nostdinc"])  # hides every system header, <infiniband/verbs.h> too
    assert outcome.path is None and outcome.reason is not None
    assert outcome.reason.startswith("no <infiniband/verbs.h> on the include path of ")
    assert outcome.reason.endswith(": apt-get install libibverbs-dev")
    assert "\n" not in outcome.reason
    assert outcome.line() == f"the native traffic loop was not built: {outcome.reason}"
    assert not (tmp_path / SO_NAME).exists()
    assert last_reason(tmp_path) == outcome.reason


def test_the_flags_come_from_the_environment_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require("cc")
    require("python-headers")
    monkeypatch.setenv(CFLAGS_ENV, "-nostdinc")
    assert "libibverbs-dev" in str(build(tmp_path).reason)
    monkeypatch.setenv(CFLAGS_ENV, '-DX="')
    assert build(tmp_path).reason == f"{CFLAGS_ENV} '-DX=\"' cannot be split into words (No closing quotation)"


def test_missing_python_headers_name_python3_dev(tmp_path: Path) -> None:
    require("cc")
    outcome = build(tmp_path / "out", include=tmp_path)
    assert outcome.reason == (f"no Python.h in {tmp_path}, the C headers of the Python that builds it "
                              f"(for Debian's python3: apt-get install python3-dev)")


def test_a_compiler_that_fails_is_named_in_one_sentence(tmp_path: Path) -> None:
    outcome = build(tmp_path, cc="false")
    assert outcome == BuildOutcome(None, "the C compiler false failed to preprocess an empty file (exit status 1)")
    assert last_reason(tmp_path) == outcome.reason


def test_no_compiler_names_gcc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no cc, no gcc
    monkeypatch.delenv("CC", raising=False)
    assert build(tmp_path).reason == (
        "no C compiler (CC is unset and neither cc nor gcc is on PATH): apt-get install gcc")
    monkeypatch.setenv("CC", "clang-99")
    assert build(tmp_path).reason == (
        "the C compiler clang-99 (from CC) is not on PATH: set CC to one, or apt-get install gcc")


def test_a_source_that_does_not_compile_gives_the_compilers_first_error(tmp_path: Path) -> None:
    _require_build_tools()
    source = tmp_path / "_native.c"
    source.write_text("#include <Python.h>\nint broken(void) { return missing_symbol; }\n")
    outcome = build(tmp_path, source=source)
    assert outcome.path is None and outcome.reason is not None
    assert "failed to compile _native.c (exit status 1: " in outcome.reason
    assert "missing_symbol" in outcome.reason and "\n" not in outcome.reason
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["_native.c", RECORD_NAME])


def test_a_missing_source_or_an_unwritable_folder_is_a_reason_not_an_exception(tmp_path: Path) -> None:
    assert build(tmp_path, source=tmp_path / "nope.c").reason == f"its C source {tmp_path / 'nope.c'} is missing"
    _require_build_tools()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    reason = build(blocker / "sub").reason
    assert reason is not None and reason.startswith(f"cannot write into {blocker / 'sub'} (")


def test_the_record_reads_back_and_says_how_to_build_when_there_is_none(tmp_path: Path) -> None:
    assert last_reason(tmp_path) == (
        "no build of it was recorded (`python -m collie.targets.verbs.native_build` builds it)")
    (tmp_path / RECORD_NAME).write_text("built\n")
    assert last_reason(tmp_path) is None
    (tmp_path / RECORD_NAME).write_text("no <infiniband/verbs.h> on the include path of cc: apt-get install x\n")
    assert last_reason(tmp_path) == "no <infiniband/verbs.h> on the include path of cc: apt-get install x"


def test_the_command_prints_one_line_and_exits_0_only_when_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CC", "false")
    assert native_build.main(["--out-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == "the native traffic loop was not built: the C compiler false failed to preprocess an " \
                                "empty file (exit status 1)\n"
    monkeypatch.delenv("CC")
    _require_build_tools()
    assert native_build.main(["--out-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == f"built the native traffic loop: {tmp_path.resolve() / SO_NAME}\n" and err == ""


def test_the_hook_puts_the_module_in_a_standard_wheel_and_makes_it_platform_specific(tmp_path: Path) -> None:
    _require_build_tools()
    build_data: dict[str, object] = {"force_include": {}, "pure_python": True, "infer_tag": False}
    built, line = _hook().build_native(ROOT, "standard", build_data, tmp_path)
    so = tmp_path.resolve() / SO_NAME
    assert (built, line) == (True, f"built the native traffic loop: {so}")
    assert build_data == {
        "force_include": {str(so): f"collie/targets/verbs/{SO_NAME}",
                          str(tmp_path.resolve() / RECORD_NAME): "collie/targets/verbs/_native_build.txt"},
        "pure_python": False,
        "infer_tag": True,
    }


def test_an_editable_build_leaves_the_build_data_alone(tmp_path: Path) -> None:
    _require_build_tools()
    build_data: dict[str, object] = {}
    assert _hook().build_native(ROOT, "editable", build_data, tmp_path)[0] is True
    assert build_data == {} and (tmp_path / SO_NAME).exists()


def test_when_the_build_fails_the_wheel_stays_pure_and_carries_the_reason(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "false")
    build_data: dict[str, object] = {"force_include": {}, "pure_python": True, "infer_tag": False}
    hook = _hook()
    built, line = hook.build_native(ROOT, "standard", build_data, tmp_path)
    assert (built, line) == (False, "the native traffic loop was not built: the C compiler false failed to "
                                    "preprocess an empty file (exit status 1)")
    record = {str(tmp_path.resolve() / RECORD_NAME): "collie/targets/verbs/_native_build.txt"}
    assert build_data == {"force_include": record, "pure_python": True, "infer_tag": False}
    # even a checkout without native_build.py (or one that fails to load) does not fail the build
    build_data = {"force_include": {}, "pure_python": True, "infer_tag": False}
    assert hook.build_native(tmp_path, "standard", build_data) == (
        False, f"the native traffic loop was not built: its build hook failed (ImportError: cannot load "
               f"{tmp_path / 'collie/targets/verbs/native_build.py'})")
    assert build_data == {"force_include": {}, "pure_python": True, "infer_tag": False}


def test_the_packaging_wires_the_hook_and_ships_its_sources() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["hooks"]["custom"] == {"path": "hatch_build.py"}
    assert {"collie", "hatch_build.py"} <= set(project["tool"]["hatch"]["build"]["targets"]["sdist"]["include"])
    assert native_build.SOURCE == ROOT / "collie" / "targets" / "verbs" / "_native.c"
    assert native_build.SOURCE.is_file()
    ignored = subprocess.run(["git", "check-ignore", f"collie/targets/verbs/{SO_NAME}",
                              f"collie/targets/verbs/{RECORD_NAME}"], cwd=ROOT, capture_output=True, text=True,
                             check=False)
    if ignored.returncode != 128:  # 128: not a git checkout (an unpacked sdist)
        assert ignored.stdout.split() == [f"collie/targets/verbs/{SO_NAME}", f"collie/targets/verbs/{RECORD_NAME}"]
