"""Deployment pieces without SSH: the fixed command lines, the bundle, reading a missing module, start_agent with a
launcher that cannot deploy. The SFTP upload itself is tested on real sshd servers
(tests/integration/remote/test_deploy_sshd.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from collie import __version__
from collie.data import data_dir
from collie.remote.deploy import _deps_error, bundle, start_agent
from collie.remote.deps import missing_from
from collie.remote.errors import Failure, HostError
from collie.remote.inventory import Host, parse_host_target
from collie.remote.launch import AGENT_COMMAND_LINE, LocalLauncher, deployed_command_line, plain_version
from collie.remote.protocol import PROTOCOL_VERSION
from tests.conftest import ROOT
from tests.integration.remote.test_deploy_sshd import fake_collie


def host() -> Host:
    return Host(name="n", address="127.0.0.1", port=22, user="u", target=parse_host_target("sim:cx6-200g", "t"))


@pytest.mark.parametrize("version", ["0.1.0", "1.2rc1", "0.3.dev4+g1a2b", "2024.1-1"])
def test_plain_versions_name_the_deployed_command(version: str) -> None:
    assert plain_version(version) == version
    assert deployed_command_line(version) == f"cd .cache/collie/agent-{version} && exec {AGENT_COMMAND_LINE}"


@pytest.mark.parametrize("version", ["", "0.1; rm -rf ~", "$(touch x)", "`id`", "-1", "../../etc", "1 2", "1\n2",
                                     ".1", "0" * 65, "1'2", "1\"2", "1|2", "1&2"])
def test_anything_else_never_reaches_a_command_line(version: str) -> None:
    with pytest.raises(ValueError, match="is not a plain version string"):
        deployed_command_line(version)


def test_the_bundle_is_the_package_and_its_data_folders_in_the_wheels_layout() -> None:
    b = bundle()
    paths = dict(b.files)
    assert b.version == __version__ and len(b.digest) == 64
    assert paths["collie/agent.py"] == (ROOT / "collie" / "agent.py").read_bytes()
    assert paths["collie/remote/deploy.py"] == (ROOT / "collie" / "remote" / "deploy.py").read_bytes()
    assert "collie/targets/sim/profiles/cx6-200g.toml" in paths
    for name in ("counters", "workloads", "search", "hosts"):
        on_disk = {p.relative_to(data_dir(name)).as_posix() for p in data_dir(name).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")}
        assert on_disk and {r.split("/", 3)[3] for r in paths if r.startswith(f"collie/_data/{name}/")} == on_disk
    assert not [r for r in paths if "__pycache__" in r or r.endswith(".pyc") or not r.startswith("collie/")]
    folders = b.folders()
    assert folders[0] == "collie" and "collie/_data/counters" in folders
    assert all(f.rsplit("/", 1)[0] in folders for f in folders if "/" in f)  # parents come first
    assert folders.index("collie/_data") < folders.index("collie/_data/counters")
    assert b.size == sum(len(d) for d in paths.values())


@pytest.mark.parametrize(("stderr", "missing"), [
    ("/usr/bin/python3: Error while finding module specification for 'collie.agent' (ModuleNotFoundError: No "
     "module named 'collie')", "collie"),
    ("ModuleNotFoundError: No module named 'numpy'", "numpy"),
    ("collie's agent needs Python 3.11 or newer; this python3 is 3.9.2", "python"),
    ("sh: 1: python3: not found", None),
])
def test_what_an_agent_s_stderr_says_is_missing(stderr: str, missing: str | None) -> None:
    assert missing_from(stderr) == missing


def test_a_missing_module_is_one_sentence_naming_it_and_how_to_install_it() -> None:
    reason = ("python3 -m collie.agent --stdio did not start there: it exited with status 1 (ModuleNotFoundError: "
              "No module named 'tomli_w'); install collie 0.1.0 on the host")
    err = _deps_error(host(), reason)
    assert err is not None and err.failure is Failure.AGENT_DEPS
    assert str(err) == ("host 'n': its python3 lacks the module 'tomli_w' that collie's agent needs; install it "
                        "there (pip install tomli-w, or Debian's python3-tomli-w)")
    old = _deps_error(host(), "it exited with status 1 (collie's agent needs Python 3.11 or newer; this python3 is "
                              "3.9.2); install collie")
    assert old is not None and str(old) == ("host 'n': its python3 is too old: collie's agent needs Python 3.11 or "
                                            "newer; this python3 is 3.9.2; install Python 3.11 or newer as python3")
    assert _deps_error(host(), "No module named 'collie'") is None


def test_the_agent_checks_its_modules_before_importing_anything_of_collie() -> None:
    out = subprocess.run([sys.executable, "-S", "-m", "collie.agent", "--stdio"], input=b"", capture_output=True,
                         env={"PYTHONPATH": str(ROOT)}, cwd="/")
    assert out.returncode == 1 and out.stdout == b""
    assert out.stderr.decode().strip() == "ModuleNotFoundError: No module named 'numpy'"


def test_a_host_with_this_collie_is_used_as_it_is() -> None:
    launcher = LocalLauncher(env={"PYTHONPATH": str(ROOT)})
    try:
        started = start_agent(launcher, host(), 30, pings=1)
        assert started.deployment is None and started.welcome.collie_version == __version__
        started.client.close()
    finally:
        launcher.close()


def test_another_version_through_a_launcher_that_cannot_deploy_is_a_version_failure(tmp_path: Path) -> None:
    old = fake_collie(tmp_path / "site", {"v": PROTOCOL_VERSION, "type": "welcome", "collie_version": "0.0.1",
                                          "protocol": PROTOCOL_VERSION,
                                          "capabilities": [], "time": 0.0, "python": "3", "hostname": "h"})
    launcher = LocalLauncher(env={"PYTHONPATH": str(old)}, cwd=str(tmp_path))
    try:
        with pytest.raises(HostError) as err:
            start_agent(launcher, host(), 30, pings=0)
        assert err.value.failure is Failure.VERSION
        assert str(err.value) == (f"host 'n': its agent runs collie 0.0.1 and this controller runs {__version__}; "
                                  f"install collie {__version__} on the host")
    finally:
        launcher.close()


def test_a_collie_whose_version_cannot_name_a_folder_is_one_sentence_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import collie.remote.deploy as deploy_module

    bundle.cache_clear()
    monkeypatch.setattr(deploy_module, "__version__", "1.0; rm -rf ~")
    try:
        with pytest.raises(HostError) as err:
            deploy_module.deploy(SimpleNamespace(host=host()), 5)  # type: ignore[arg-type]
    finally:
        bundle.cache_clear()
    assert err.value.failure is Failure.DEPLOY
    assert str(err.value) == ("host 'n': this collie cannot be deployed: collie version '1.0; rm -rf ~' is not a "
                              "plain version string (digits, letters, '.', '+', '-'); it cannot name a deployment "
                              "folder")
