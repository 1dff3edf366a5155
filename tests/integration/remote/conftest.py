"""Fixtures of the remote tests: real sshd servers on 127.0.0.1 (see tests/sshd_fixture.py)."""

from tests.sshd_fixture import ssh_home, sshd_farm, sshd_one

__all__ = ["ssh_home", "sshd_farm", "sshd_one"]
