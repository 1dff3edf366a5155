"""Build _native_loop next to this file with the running Python's headers and gcc; on failure print ONE warning
line and exit 0 (what a pip-time build hook would do: the pure-Python loop stays the fallback).

    python3 build.py            # or: python3 build.py --strict (exit 1 on failure)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(strict: bool = False) -> Path | None:
    out = HERE / ("_native_loop" + sysconfig.get_config_var("EXT_SUFFIX"))
    cc = shutil.which("cc") or shutil.which("gcc")
    include = sysconfig.get_paths()["include"]
    why = None
    if cc is None:
        why = "no C compiler (apt-get install gcc)"
    elif not Path(include, "Python.h").exists():
        why = f"no Python.h in {include} (apt-get install python3-dev)"
    elif not Path("/usr/include/infiniband/verbs.h").exists():
        why = "no <infiniband/verbs.h> (apt-get install libibverbs-dev)"
    else:
        cmd = [cc, "-O2", "-fPIC", "-shared", "-Wall", "-I", include, str(HERE / "native_loop.c"), "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            return out
        why = f"{cc} failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    print(f"warning: native verbs loop not built ({why}); the pure-Python loop will be used", file=sys.stderr)
    if strict:
        sys.exit(1)
    return None


if __name__ == "__main__":
    path = build("--strict" in sys.argv)
    if path:
        print(path)
