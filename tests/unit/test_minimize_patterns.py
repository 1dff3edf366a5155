"""Minimizing collective patterns (``workloads/collective.toml``): each other pattern that kept the anomaly on the
case as found is checked again on the simplified case, and ``[minimize] again`` shrinks the hosts once more when
the rest is simpler, so the minimal case keeps the fewest hosts and the MFS names only the patterns that keep it
there."""

from __future__ import annotations

from typing import Any

import pytest

from collie.errors import InputError
from collie.mfs import Condition
from collie.minimize import Minimizer, MinimizeSettings
from collie.minimize.verbs import superseded
from collie.model.space import load_space
from collie.oracle import Verdict
from tests.conftest import ROOT

COLLECTIVE = load_space(ROOT / "workloads" / "collective.toml")
SLOW = Verdict(True, (), 2.0, "straggler@host")
CLEAN = Verdict(False, (), 0.0, "")
START = {**COLLECTIVE.simplest(), "pattern": "incast", "hosts": 8, "ranks_per_host": 4, "qps": 8}


def _run(probe: Any) -> Any:
    return Minimizer(COLLECTIVE, probe, MinimizeSettings(runs=2, required=2)).run(START, SLOW)


def test_a_pattern_that_kept_only_on_many_hosts_leaves_the_condition() -> None:
    def probe(point: Any) -> Verdict:  # an incast from 3 hosts; a ring only over 6 or more
        hosts = point["hosts"]
        return SLOW if (point["pattern"] == "incast" and hosts >= 3) or \
            (point["pattern"] == "ring_allreduce" and hosts >= 6) else CLEAN

    result = _run(probe)
    assert result.point["hosts"] == 3 and result.point["pattern"] == "incast"
    assert result.mfs.describe().startswith("pattern == incast and hosts >= 3"), result.mfs.describe()
    assert any(s["why"] == "pattern -> ring_allreduce (far side)" and s["kept"] is False for s in result.steps)


def test_a_pattern_that_keeps_on_the_simplified_case_stays_in_the_condition() -> None:
    def probe(point: Any) -> Verdict:
        return SLOW if point["pattern"] in ("incast", "all_to_all") and point["hosts"] >= 3 else CLEAN

    assert _run(probe).mfs.describe().startswith("pattern in {all_to_all, incast} and hosts >= 3")


def test_the_hosts_shrink_again_when_fewer_ranks_per_host_need_fewer() -> None:
    def probe(point: Any) -> Verdict:  # 4 ranks per host need 5 hosts; 1 rank per host needs 3
        need = 5 if point["ranks_per_host"] >= 2 else 3
        return SLOW if point["pattern"] == "incast" and point["hosts"] >= need else CLEAN

    result = _run(probe)
    assert (result.point["hosts"], result.point["ranks_per_host"]) == (3, 1)
    assert "hosts >= 3" in result.mfs.describe() and "hosts >= 5" not in result.mfs.describe()
    assert any(s["why"] == "hosts -> 2 (again)" for s in result.steps)


def test_in_conditions_on_one_feature_are_one_their_intersection() -> None:
    wide = Condition("pattern", "in", ("all_to_all", "incast", "ring_allreduce"))
    assert superseded([wide, Condition("hosts", ">=", 3), Condition("pattern", "in", ("incast", "ring_allreduce"))]) \
        == [Condition("pattern", "in", ("incast", "ring_allreduce")), Condition("hosts", ">=", 3)]
    narrowed = superseded([wide, Condition("pattern", "in", ("incast", "all_to_all")),
                           Condition("pattern", "in", ("incast", "ring_allreduce"))])
    assert narrowed == [Condition("pattern", "==", "incast")]


@pytest.mark.parametrize(("again", "message"), [
    ('["pattern"]', "'pattern' is not a numeric or ordered dimension of this space"),
    ('["hosts", "hosts"]', "names a dimension twice"),
    ('"hosts"', "expected a list of numeric dimensions of the space"),
])
def test_a_bad_again_is_one_sentence(tmp_path: Any, again: str, message: str) -> None:
    text = (ROOT / "workloads" / "collective.toml").read_text(encoding="utf-8")
    path = tmp_path / "space.toml"
    path.write_text(text.replace('again = ["hosts"]', f"again = {again}"), encoding="utf-8")
    with pytest.raises(InputError, match=rf"minimize\.again: .*{message}") as err:
        load_space(path)
    assert "\n" not in str(err.value)
