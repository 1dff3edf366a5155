"""One rule for the system components some tests need (a browser, OpenSSH's server, perftest, root, ...).

A test calls :func:`require` with the component's name before it uses it. When the component is missing the test
skips, with one sentence naming what is missing and the command that installs it; under CI (``CI`` set, as
``.ci/run`` does) it fails with that same sentence, since CI installs everything (``.ci/system-packages``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

#: The one command that installs every Debian package the tests use (only what is missing).
INSTALL_ALL: Final = "bash .ci/system-packages"
#: Debian's own interpreter, which plays a host without collie (tests/integration/remote/test_deploy_sshd.py).
DEBIAN_PYTHON: Final = "/usr/bin/python3"


def _commands(*names: str) -> Callable[[], bool]:
    return lambda: all(shutil.which(n) is not None for n in names)


def _files(*paths: str) -> Callable[[], bool]:
    return lambda: all(Path(p).exists() for p in paths)


def _native_loop() -> bool:
    try:
        import collie.targets.verbs._native  # noqa: F401
    except ImportError:
        return False
    return True


def _c_compiler() -> bool:
    return (shutil.which("cc") or shutil.which("gcc")) is not None and Path("/usr/include/stdio.h").exists()


def _python_headers() -> bool:
    return Path(sysconfig.get_paths()["include"], "Python.h").exists()


def _debian_python() -> bool:
    if not Path(DEBIAN_PYTHON).exists():
        return False
    probe = subprocess.run([DEBIAN_PYTHON, "-c", "import numpy, tomli_w, click, rich"], capture_output=True,
                           cwd="/", stdin=subprocess.DEVNULL, check=False)
    return probe.returncode == 0


@dataclass(frozen=True)
class Component:
    """A system component: what it is, how to tell that it is there, and the Debian packages that install it.

    Attributes:
        what: the component as the sentence names it.
        present: whether it is there now.
        packages: the Debian packages that install it (empty for something no package gives, such as root).
        otherwise: what to do instead when no package gives it.
    """

    what: str
    present: Callable[[], bool]
    packages: tuple[str, ...] = ()
    otherwise: str = ""

    def sentence(self) -> str:
        """Why a test that needs it cannot run, and how to make it run."""
        if not self.packages:
            return f"this test needs {self.what}: {self.otherwise}"
        return (f"this test needs {self.what}, which is not installed: `apt-get install -y --no-install-recommends "
                f"{' '.join(self.packages)}` installs it (`{INSTALL_ALL}` installs everything the tests use)")


COMPONENTS: Final[Mapping[str, Component]] = {
    "chromium": Component("chromium", _commands("chromium"), ("chromium",)),
    "chromedriver": Component("chromedriver", _commands("chromedriver"), ("chromium-driver",)),
    "sshd": Component("OpenSSH's server and client (sshd, sftp-server, ssh-keygen, ssh-agent, ssh-add)",
                      lambda: _files("/usr/sbin/sshd", "/usr/lib/openssh/sftp-server")()
                      and _commands("ssh-keygen", "ssh-agent", "ssh-add")(),
                      ("openssh-server", "openssh-client")),
    "perftest": Component("perftest (ib_write_bw, ib_read_bw, ib_send_bw)",
                          _commands("ib_write_bw", "ib_read_bw", "ib_send_bw"), ("perftest",)),
    "script": Component("script", _commands("script"), ("bsdutils",)),
    "unshare": Component("unshare and mount", _commands("unshare", "mount"), ("util-linux", "mount")),
    "debian-python": Component(f"Debian's {DEBIAN_PYTHON} with numpy, tomli-w, click and rich", _debian_python,
                               ("python3", "python3-numpy", "python3-tomli-w", "python3-click", "python3-rich")),
    "native-loop": Component("the native traffic loop (collie/targets/verbs/_native.c, compiled)", _native_loop,
                             otherwise="install gcc and libibverbs-dev (`bash .ci/system-packages`) and build it: "
                             "`python -m collie.targets.verbs.native_build`"),


    "cc": Component("a C compiler (cc or gcc) and the C library's headers", _c_compiler, ("gcc", "libc6-dev")),
    "python-headers": Component(f"the C headers of this Python (Python.h in {sysconfig.get_paths()['include']})",
                                _python_headers, ("python3-dev",)),
    "verbs-header": Component("libibverbs' C header <infiniband/verbs.h>",
                              _files("/usr/include/infiniband/verbs.h"), ("libibverbs-dev",)),
    "root": Component("root (it mounts a tmpfs in a private mount namespace)", lambda: os.geteuid() == 0,
                      otherwise="run the tests as root"),
}


def require(name: str) -> None:
    """Skip the calling test when component ``name`` (a key of :data:`COMPONENTS`) is missing; under CI, fail it.

    Raises:
        KeyError: for a name that is not a component.
    """
    component = COMPONENTS[name]
    if component.present():
        return
    if os.environ.get("CI"):
        pytest.fail(component.sentence())
    pytest.skip(component.sentence())
