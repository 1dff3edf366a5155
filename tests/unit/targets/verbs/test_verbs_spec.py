"""Parsing of ``verbs:DEVICE[:PORT[:GID_INDEX]]`` and its wiring into ``open_target``."""

from __future__ import annotations

import sys

import pytest

from collie.errors import TargetError
from collie.targets.registry import open_target, parse_target
from collie.targets.verbs import VerbsTarget, parse_spec
from collie.targets.verbs.spec import VerbsSpec


@pytest.mark.parametrize(("rest", "want"), [
    ("rxe0", VerbsSpec("rxe0", 1, 1)),
    ("mlx5_0:2", VerbsSpec("mlx5_0", 2, 1)),
    ("mlx5_0:1:3", VerbsSpec("mlx5_0", 1, 3)),
    ("bnxt_re0:1:0", VerbsSpec("bnxt_re0", 1, 0)),
])
def test_parse_spec_accepts(rest: str, want: VerbsSpec) -> None:
    assert parse_spec(rest) == want
    assert parse_spec(rest).name == f"verbs:{want.device}:{want.port}:{want.gid_index}"


@pytest.mark.parametrize(("rest", "fragment"), [
    ("", "needs a device name"),
    (":1", "needs a device name"),
    ("rxe0:0", "port '0'"),
    ("rxe0:x", "port 'x'"),
    ("rxe0:1:-1", "GID index '-1'"),
    ("rxe0:1:2:3", "too many parts"),
    ("rx e0", "not an RDMA device name"),
    ("../etc", "not an RDMA device name"),
])
def test_parse_spec_rejects_with_one_sentence(rest: str, fragment: str) -> None:
    with pytest.raises(TargetError) as exc:
        parse_spec(rest)
    msg = str(exc.value)
    assert fragment in msg
    assert "verbs:DEVICE[:PORT[:GID_INDEX]]" in msg
    assert "\n" not in msg


def test_open_target_builds_a_verbs_target_without_importing_pyverbs() -> None:
    before = {m for m in sys.modules if m.startswith("pyverbs")}
    t = open_target(parse_target("verbs:rxe0:1:1"))
    assert isinstance(t, VerbsTarget)
    assert t.spec == VerbsSpec("rxe0", 1, 1)
    assert {m for m in sys.modules if m.startswith("pyverbs")} == before


def test_open_target_rejects_bad_verbs_spec() -> None:
    with pytest.raises(TargetError, match="needs a device name"):
        open_target(parse_target("verbs:"))
