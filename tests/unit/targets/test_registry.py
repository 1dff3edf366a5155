"""The target-kind registry: a spec string parsed once into a typed record that prints back canonically, opened,
and given a host session; the remote kind registered from above."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from collie.errors import TargetError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.remote.kind import REMOTE, RemoteSpec  # importing it registers remote:, as the CLI does
from collie.targets.kind import TargetKind
from collie.targets.registry import (
    UnknownTargetKind,
    kinds,
    open_session,
    open_target,
    parse_target,
    register_kind,
)
from collie.targets.session import RunPlan
from collie.targets.sim import SimTarget
from collie.targets.sim.kind import SIM, SimSpec
from collie.targets.sim.session import SimSession
from collie.targets.verbs import VerbsTarget
from collie.targets.verbs.spec import VerbsSpec
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"


@pytest.mark.parametrize(("text", "want"), [
    ("sim", SimSpec()),
    ("sim:", SimSpec()),
    ("sim:p2100g-100g", SimSpec("p2100g-100g")),
    ("sim:missing.toml", SimSpec("missing.toml")),
    ("verbs:rxe0", VerbsSpec("rxe0", 1, 1)),
    ("verbs:mlx5_0:2", VerbsSpec("mlx5_0", 2, 1)),
    ("verbs:mlx5_0:1:3", VerbsSpec("mlx5_0", 1, 3)),
    ("remote:lab.toml", RemoteSpec("lab.toml")),
])
def test_a_spec_parses_into_its_kinds_record(text: str, want: object) -> None:
    assert parse_target(text) == want


@pytest.mark.parametrize("text", ["sim", "sim:cx6-200g-amd", "sim:missing.toml", "verbs:rxe0", "verbs:rxe0:1",
                                  "verbs:mlx5_0:1:3", "remote:missing.toml"])
def test_a_spec_prints_back_as_given_and_reads_back_equal(text: str) -> None:
    spec = parse_target(text)
    assert str(spec) == text and parse_target(str(spec)) == spec
    assert spec.kind == text.partition(":")[0]


def test_a_file_a_spec_names_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.toml").write_text("")
    (tmp_path / "hosts.toml").write_text("")
    assert str(parse_target("sim:my.toml")) == f"sim:{tmp_path / 'my.toml'}"
    assert str(parse_target("remote:hosts.toml")) == f"remote:{tmp_path / 'hosts.toml'}"
    assert str(parse_target("sim:./nope.toml")) == "sim:./nope.toml"  # opening says it is missing


def test_unknown_kinds_and_bad_specs_are_one_sentence() -> None:
    with pytest.raises(UnknownTargetKind) as exc:
        parse_target("nic9")
    assert str(exc.value) == ("unknown target 'nic9'; use one of: sim, sim:PROFILE, sim:PATH.toml, "
                              "verbs:DEVICE[:PORT[:GID]], remote:INVENTORY.toml")
    assert isinstance(exc.value, TargetError)
    with pytest.raises(TargetError, match="needs a device name"):
        parse_target("verbs")
    with pytest.raises(TargetError, match="remote needs an inventory file"):
        parse_target("remote:")


def test_the_kinds_are_registered_once_each() -> None:
    assert kinds()[:2] == ("sim", "verbs") and "remote" in kinds()
    register_kind(SIM)  # the same record again: nothing changes
    register_kind(REMOTE)
    with pytest.raises(ValueError, match="already registered"):
        register_kind(TargetKind("sim", "sim", SIM.parse, SIM.open))


def test_open_target_opens_the_kinds_target() -> None:
    sim = open_target(parse_target("sim:p2100g-100g"), seed=3, pace=0.0)
    assert isinstance(sim, SimTarget) and sim.seed == 3 and sim.profile.name == "p2100g-100g"
    verbs = open_target(parse_target("verbs:rxe0:1"))
    assert isinstance(verbs, VerbsTarget) and verbs.spec == VerbsSpec("rxe0", 1, 1)


def test_a_sim_host_session_runs_on_the_hosts_own_simulator() -> None:
    target = SimTarget("cx6-200g", seed=5)
    session = open_session(parse_target("sim:cx6-200g"), target=lambda: target, seed=5, netdev=None)
    assert isinstance(session, SimSession)
    w = Workload((Flow(Endpoint("a"), Endpoint("b")),))
    session.prepare(RunPlan(run=1, workload=w, roles=("a",), warmup=0.0, duration=1.0, repetition=0))
    session.start(0.0)
    part = session.finish()
    assert [h.host for h in part.hosts] == ["a"] and [f.client for f in part.flows] == ["a"]


def test_a_remote_target_cannot_be_a_host() -> None:
    with pytest.raises(TargetError, match="cannot be a remote host"):
        open_session(parse_target("remote:lab.toml"), target=lambda: SimTarget(), seed=0, netdev=None)


def test_the_recorded_targets_of_old_fixtures_parse_and_print_back() -> None:
    recorded = []
    for path in sorted(FIXTURES.rglob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        target = data.get("target")
        spec = target.get("spec") if isinstance(target, dict) else target
        if isinstance(spec, str):
            recorded.append(spec)
            assert str(parse_target(spec)) == spec, path
    assert {"sim", "sim:cx6-200g-amd"} <= set(recorded)
