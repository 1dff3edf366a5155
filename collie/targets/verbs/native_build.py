"""Build the native traffic loop, ``_native.c`` next to this module, into the extension ``_native``.

The module is a plain CPython extension: it needs a C compiler, the running interpreter's ``Python.h`` and
``<infiniband/verbs.h>`` (Debian: ``gcc``, ``python3-dev``, ``libibverbs-dev``) at build time, and does not link
libibverbs (``ibv_post_send``/``ibv_poll_cq`` are ``static inline``). ``pip install`` builds it in place through
the hatchling hook ``hatch_build.py``, which loads this file by path: it must stay stdlib-only and import nothing
from collie. A build never raises: :func:`build` returns a :class:`BuildOutcome` and records it, one line, in
``_native_build.txt`` beside the module, which :func:`last_reason` reads back so that the engine's run-time
warning can say why the native loop is missing. After installing what was missing::

    python -m collie.targets.verbs.native_build

rebuilds it in place and prints one line (exit status 0 when built, 1 when not).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: The folder of this module, where ``_native.c`` is and where an in-place build puts the extension.
HERE: Final = Path(__file__).resolve().parent
#: The C source of the extension.
SOURCE: Final = HERE / "_native.c"
#: The extension's module name (``collie.targets.verbs._native``); ``_native.c`` defines ``PyInit__native``.
MODULE: Final = "_native"
#: The file, beside the extension, that keeps the outcome of the last build: ``built`` or the reason.
RECORD_NAME: Final = "_native_build.txt"
#: The line :data:`RECORD_NAME` holds after a successful build.
BUILT: Final = "built"
#: Extra compiler flags, split like a shell would (for instance ``-nostdinc`` hides every system header).
CFLAGS_ENV: Final = "COLLIE_NATIVE_CFLAGS"
#: The command that rebuilds the extension in place.
REBUILD: Final = "python -m collie.targets.verbs.native_build"

_PROBE_TIMEOUT_S: Final = 60.0
_COMPILE_TIMEOUT_S: Final = 600.0
_FALLBACK_INCLUDE_DIRS: Final = ("/usr/local/include", "/usr/include")


@dataclass(frozen=True)
class BuildOutcome:
    """What one build did.

    Attributes:
        path: the built extension, or None when it was not built.
        reason: why it was not built, one sentence naming what to install (None when built).
    """

    path: Path | None
    reason: str | None

    @property
    def built(self) -> bool:
        """Whether the extension was built."""
        return self.path is not None

    def line(self) -> str:
        """The outcome as one line for a person: what was built, or why not."""
        if self.path is not None:
            return f"built the native traffic loop: {self.path}"
        return f"the native traffic loop was not built: {self.reason}"


def source_digest(source: Path) -> str:
    """The first 16 hex digits of the SHA-256 of ``source``: a build stamps it into the module (``_native.SOURCE``),
    so the engine can tell a module built from another version of its source."""
    return hashlib.sha256(source.read_bytes()).hexdigest()[:16]


def module_filename() -> str:
    """The extension's file name for the running interpreter (``_native.cpython-311-x86_64-linux-gnu.so``)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    return MODULE + (suffix if isinstance(suffix, str) else ".so")


def python_include() -> Path:
    """The running interpreter's C header folder, where ``Python.h`` should be."""
    return Path(sysconfig.get_paths()["include"])


def build(out_dir: Path | None = None, *, cc: str | None = None, cflags: Sequence[str] | None = None,
          include: Path | None = None, source: Path | None = None) -> BuildOutcome:
    """Compile the native traffic loop and record the outcome; never raises for a failed build.

    Checks, in order, for a C compiler, ``Python.h`` and ``<infiniband/verbs.h>``, then compiles with
    ``-O2 -fPIC -shared -Wall`` into :func:`module_filename` (through a temporary file, so a process that has the
    old extension loaded keeps a valid mapping). On failure no extension is left in ``out_dir`` (an older one
    would not match the current source) and the reason is recorded instead.

    Args:
        out_dir: where the extension and :data:`RECORD_NAME` go; default: beside the source (in place).
        cc: the compiler command (split like a shell would); default: ``CC`` from the environment, else ``cc``,
            else ``gcc``.
        cflags: extra compiler flags, placed last; default: :data:`CFLAGS_ENV` from the environment.
        include: the folder holding ``Python.h``; default: the running interpreter's (:func:`python_include`).
        source: the C source; default: :data:`SOURCE`.

    Returns:
        The built path, or None and the reason.
    """
    out = (out_dir or HERE).resolve()
    src = source or SOURCE
    include = include or python_include()
    target = out / module_filename()
    try:
        path, reason = _attempt(src, cc, cflags, include, target)
    except Exception as exc:  # a build must never break what runs it (pip install): keep the reason instead
        path, reason = None, f"the build failed unexpectedly ({type(exc).__name__}: {exc})"
    if path is None:
        with contextlib.suppress(OSError):
            target.unlink(missing_ok=True)
    _record(out, BUILT if reason is None else reason)
    return BuildOutcome(path, reason)


def last_reason(directory: Path | None = None) -> str | None:
    """Why the last build left no extension, as recorded in :data:`RECORD_NAME`; None when it built one.

    Args:
        directory: where the record is; default: this module's folder.

    Returns:
        The recorded reason; a sentence naming :data:`REBUILD` when no build was recorded; None after a
        successful build.
    """
    record = (directory or HERE) / RECORD_NAME
    try:
        line = record.read_text(encoding="utf-8").strip()
    except OSError:
        return f"no build of it was recorded (`{REBUILD}` builds it)"
    if line == BUILT:
        return None
    return line or f"its build record {record} is empty (`{REBUILD}` rebuilds it)"


def _attempt(source: Path, cc: str | None, cflags: Sequence[str] | None, include: Path,
             target: Path) -> tuple[Path | None, str | None]:
    """Check what the build needs, then compile: (path, None) or (None, reason)."""
    flags = list(cflags) if cflags is not None else _split(os.environ.get(CFLAGS_ENV, ""), CFLAGS_ENV)
    if isinstance(flags, str):
        return None, flags
    compiler = _check(source, cc, flags, include)
    if isinstance(compiler, str):
        return None, compiler
    return _compile(compiler, source, flags, include, target)


def _check(source: Path, cc: str | None, flags: list[str], include: Path) -> list[str] | str:
    """The compiler command when everything the build needs is there, else the reason it is not."""
    if not source.is_file():
        return f"its C source {source} is missing"
    compiler = _compiler(cc)
    if isinstance(compiler, str):
        return compiler
    if not (include / "Python.h").is_file():
        return (f"no Python.h in {include}, the C headers of the Python that builds it "
                f"(for Debian's python3: apt-get install python3-dev)")
    dirs = _include_dirs(compiler, [*flags, "-I", str(include)])
    if isinstance(dirs, str):
        return dirs
    if not any((d / "infiniband" / "verbs.h").is_file() for d in dirs):
        return f"no <infiniband/verbs.h> on the include path of {shlex.join(compiler)}: apt-get install libibverbs-dev"
    return compiler


def _compiler(cc: str | None) -> list[str] | str:
    """The compiler command (argument, then ``CC``, then cc, gcc), or the reason there is none."""
    origin = "" if cc is not None else " (from CC)"
    cc = cc if cc is not None else os.environ.get("CC")
    if cc is None or not cc.strip():
        found = shutil.which("cc") or shutil.which("gcc")
        if found is None:
            return "no C compiler (CC is unset and neither cc nor gcc is on PATH): apt-get install gcc"
        return [found]
    command = _split(cc, "CC" if origin else "the C compiler command")
    if isinstance(command, str):
        return command
    if shutil.which(command[0]) is None:
        return f"the C compiler {command[0]}{origin} is not on PATH: set CC to one, or apt-get install gcc"
    return command


def _split(text: str, what: str) -> list[str] | str:
    """``text`` split like a shell would, or the reason it cannot be."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        return f"{what} {text!r} cannot be split into words ({exc})"


def _include_dirs(compiler: list[str], flags: list[str]) -> list[Path] | str:
    """The folders ``#include <...>`` searches, as the compiler reports them, or why it did not run."""
    probe = [*compiler, *flags, "-E", "-v", "-x", "c", os.devnull, "-o", os.devnull]
    try:
        run = subprocess.run(probe, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the C compiler {shlex.join(compiler)} did not run ({exc})"
    if run.returncode != 0:
        return (f"the C compiler {shlex.join(compiler)} failed to preprocess an empty file "
                f"({_detail(run.stderr, run.returncode)})")
    lines = run.stderr.splitlines()
    start = next((i for i, s in enumerate(lines) if s.startswith("#include <...> search starts here")), None)
    if start is None:  # a compiler that does not say: the -I folders and the usual system ones
        given = [flags[i + 1] for i, f in enumerate(flags[:-1]) if f == "-I"]
        given += [f[2:] for f in flags if f.startswith("-I") and len(f) > 2]
        return [Path(d) for d in (*given, *_FALLBACK_INCLUDE_DIRS)]
    dirs: list[Path] = []
    for s in lines[start + 1:]:
        if not s.startswith(" "):
            break
        dirs.append(Path(s.strip().removesuffix(" (framework directory)")))
    return dirs


def _compile(compiler: list[str], source: Path, flags: list[str], include: Path,
             target: Path) -> tuple[Path | None, str | None]:
    """Compile into a temporary file beside ``target``, then move it there; (path, None) or (None, reason)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f"{MODULE}.building-", suffix=".so", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        return None, f"cannot write into {target.parent} ({exc})"
    tmp = Path(tmp_name)
    stamp = f'-DCOLLIE_NATIVE_SOURCE="{source_digest(source)}"'
    command = [*compiler, "-O2", "-fPIC", "-shared", "-Wall", stamp, "-I", str(include), *flags, str(source), "-o",
               str(tmp)]
    try:
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S, check=False,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{shlex.join(compiler)} did not compile {source.name} ({exc})"
        if run.returncode != 0:
            detail = _detail(run.stderr, run.returncode)
            return None, f"{shlex.join(compiler)} failed to compile {source.name} ({detail})"
        tmp.chmod(0o755)
        tmp.replace(target)
        return target, None
    except OSError as exc:
        return None, f"cannot write {target} ({exc})"
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _detail(stderr: str, returncode: int) -> str:
    """The compiler's first error line (else its last line) and the exit status, on one line."""
    lines = [s.strip() for s in stderr.splitlines() if s.strip()]
    first = next((s for s in lines if "error" in s.lower()), lines[-1] if lines else "")
    return f"exit status {returncode}" + (f": {first}" if first else "")


def _record(directory: Path, line: str) -> None:
    """Write the one-line outcome beside the extension; a folder that cannot be written keeps no record."""
    with contextlib.suppress(OSError):
        (directory / RECORD_NAME).write_text(" ".join(line.split()) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Rebuild the extension (in place by default), print one line, return 0 when built, 1 when not.

    Args:
        argv: the command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(prog=REBUILD, description="Build collie's native traffic loop in place.")
    parser.add_argument("--out-dir", type=Path, default=None, help="build there instead of in place")
    args = parser.parse_args(argv)
    outcome = build(args.out_dir)
    print(outcome.line(), file=sys.stdout if outcome.built else sys.stderr)
    return 0 if outcome.built else 1


if __name__ == "__main__":
    raise SystemExit(main())
