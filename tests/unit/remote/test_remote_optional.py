"""paramiko is needed by ``collie hosts check`` only: every other command runs where it is missing (the
soft-RoCE guest's bare python3), and ``hosts check`` then says what to install."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

NO_PARAMIKO = "import sys; sys.modules['paramiko'] = None; sys.argv = ['collie', *sys.argv[1:]]; " \
              "from collie.cli import main; main()"


def _collie(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_PARAMIKO, *args], capture_output=True, text=True,
                          cwd=ROOT, check=False)


def test_other_commands_run_without_paramiko() -> None:
    p = _collie("sim", "profiles", "--format", "json")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


def test_hosts_check_without_paramiko_says_what_to_install() -> None:
    p = _collie("hosts", "check", "--inventory", str(ROOT / "hosts" / "lab.toml"))
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip() == ("collie: error: collie hosts check needs paramiko; install it with "
                                "'pip install paramiko' (or Debian's python3-paramiko)")
