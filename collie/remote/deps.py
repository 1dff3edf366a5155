"""What the agent needs from the host's python3, checked before anything else of collie is imported.

``python3 -m collie.agent`` calls :func:`require` first, so a host whose python3 is too old or lacks a module the
agent imports (now or later, when a request needs it) ends at once with one line on stderr that the controller
reads (:func:`missing_from`): ``ModuleNotFoundError: No module named 'numpy'`` (Python's own words, which an agent
of another collie version that lacks this check also prints when its import fails), or ``collie's agent needs
Python 3.11 or newer ...``.

Invariants:
    * this module imports nothing but the standard library and uses only syntax an old python3 can parse, so its
      sentence, not a SyntaxError, is what an old interpreter prints;
    * :data:`AGENT_MODULES` lists every third-party module the agent imports (paramiko, click and rich are the
      controller's, never the agent's).
"""

from __future__ import annotations

import importlib.util
import re
import sys

#: Third-party modules the agent imports, and the package that provides each (pip name, Debian name).
AGENT_MODULES = {"numpy": ("numpy", "python3-numpy"), "tomli_w": ("tomli-w", "python3-tomli-w")}
MIN_PYTHON = (3, 11)
_NO_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")
_OLD_PYTHON = "collie's agent needs Python"


def missing() -> str | None:
    """The line to print when this interpreter cannot run the agent, else None."""
    if sys.version_info[:2] < MIN_PYTHON:
        return (f"{_OLD_PYTHON} {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer; this python3 is "
                f"{sys.version.split()[0]}")
    for module in AGENT_MODULES:
        if importlib.util.find_spec(module) is None:
            return f"ModuleNotFoundError: No module named '{module}'"
    return None


def require() -> None:
    """Exit with status 1 and :func:`missing`'s line on stderr when this interpreter cannot run the agent."""
    line = missing()
    if line is not None:
        sys.stderr.write(line + "\n")
        sys.exit(1)


def missing_from(stderr: str) -> str | None:
    """What an agent's stderr says is missing: a module name (``numpy``, ``collie``), ``python`` for a too-old
    interpreter, or None when it says neither."""
    if _OLD_PYTHON in stderr:
        return "python"
    found = _NO_MODULE.findall(stderr)
    return found[-1] if found else None


def advice(module: str) -> str:
    """How to install ``module`` on the host, in a few words."""
    if module == "python":
        return f"install Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer as python3"
    top = module.split(".")[0]
    pip_name, deb_name = AGENT_MODULES.get(top, (top, f"python3-{top.replace('_', '-')}"))
    return f"install it there (pip install {pip_name}, or Debian's {deb_name})"
