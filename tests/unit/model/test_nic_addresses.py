"""NIC addresses: ``h3`` is NIC 0 of host ``h3`` and ``h3/1`` its NIC 1, in workload files, flows, patterns and
features; a pattern's ``nics`` spreads each host's ranks over its NICs; the file forms of one-NIC workloads do
not change."""

from __future__ import annotations

import re

import pytest

from collie.errors import InputError
from collie.model.features import features
from collie.model.flow import (
    Endpoint,
    Flow,
    address_name,
    flow_from_dict,
    flow_to_dict,
    nic_address,
    nic_problem,
    split_address,
)
from collie.model.patterns import Pattern, PatternKind, pattern_from_dict, pattern_to_dict
from collie.model.space import load_space
from collie.model.workload import Workload
from tests.conftest import ROOT


@pytest.mark.parametrize(("address", "host", "nic"), [("h3", "h3", 0), ("h3/1", "h3", 1),
                                                      ("node-1.lab/15", "node-1.lab", 15)])
def test_an_address_is_a_host_and_its_nic(address: str, host: str, nic: int) -> None:
    assert split_address(address) == (host, nic) and nic_address(host, nic) == address
    assert address_name(address, "w") == address


@pytest.mark.parametrize("bad", ["h3/0", "h3/16", "h3/01", "a/b/1", "h3/", "/1", "h 3/1"])
def test_a_bad_address_is_one_sentence_naming_the_field(bad: str) -> None:
    with pytest.raises(InputError, match=r"^flows\[0\]\.client: ") as err:
        flow_from_dict({"client": bad, "server": "b"}, "flows[0]")
    assert "\n" not in str(err.value)


def test_a_flow_between_two_nics_of_one_host_is_no_loopback_and_reads_back() -> None:
    f = flow_from_dict({"client": "h3", "server": "h3/1"}, "flow")
    assert not f.loopback and f.server.host == "h3/1"
    assert flow_from_dict(flow_to_dict(f), "flow") == f
    moved = f.moved({"h3": "h7"})
    assert (moved.client.host, moved.server.host) == ("h7", "h7/1")
    feats = features(Workload(flows=(f,)))
    assert (feats.hosts, feats.nics, feats.loopback) == (1, 2, False)


def test_one_nic_workloads_keep_their_file_form_and_key() -> None:
    f = Flow(Endpoint("a"), Endpoint("b"))
    assert flow_to_dict(f)["client"] == {"host": "a", "memory": "local"}
    assert features(Workload(flows=(f,))).nics == 1


def test_a_pattern_spreads_each_hosts_ranks_over_its_nics() -> None:
    p = Pattern(PatternKind.RING_ALLREDUCE, ("r0", "r1"), 1 << 24, ranks_per_host=4, nics=2)
    assert [p.host_of(r) for r in range(8)] == ["r0", "r0/1", "r0", "r0/1", "r1", "r1/1", "r1", "r1/1"]
    ends = {(c.client.host, c.server.host) for c in p.connections()}
    assert ("r0", "r0/1") in ends and ("r1/1", "r0") in ends  # the ring closes from the last rank to the first
    feats = features(Workload.of_pattern(p))
    assert (feats.hosts, feats.nics, feats.ranks_per_host) == (2, 2, 4)
    assert pattern_from_dict(pattern_to_dict(p), "pattern") == p
    one = Pattern(PatternKind.RING_ALLREDUCE, ("r0", "r1"), 1 << 24, ranks_per_host=4)
    assert "nics" not in pattern_to_dict(one)  # the key of a one-NIC pattern does not change


@pytest.mark.parametrize(("nics", "message"), [(3, "3 NICs per host for 2 rank(s) per host"),
                                               (0, "expected an integer from 1 to 16"),
                                               (True, "expected an integer from 1 to 16")])
def test_a_pattern_uses_at_most_a_nic_per_rank(nics: object, message: str) -> None:
    raw = {"kind": "ring_allreduce", "hosts": ["a", "b"], "size": "1MiB", "ranks_per_host": 2, "nics": nics}
    with pytest.raises(InputError, match=rf"^pattern\.nics: .*{re.escape(message)}"):
        pattern_from_dict(raw, "pattern")


def test_the_space_cuts_nics_to_the_ranks_of_a_host_and_moves_it_only_where_it_applies() -> None:
    space = load_space(ROOT / "workloads" / "collective.toml")
    point = {**space.simplest(), "pattern": "ring_allreduce", "hosts": 3, "ranks_per_host": 1, "nics": 2}
    assert space.build(point).pattern.nics == 1 and not space.applies("nics", point)  # type: ignore[union-attr]
    point["ranks_per_host"] = 2
    built = space.build(point)
    assert built.pattern is not None and built.pattern.nics == 2 and space.applies("nics", point)
    assert space.point_of(built)["nics"] == 2


def test_a_target_of_one_nic_per_host_says_which_address_it_cannot_run() -> None:
    assert nic_problem(("r0", "r1")) is None and nic_problem(("r0", "r1/1"), 2) is None
    assert nic_problem(("r0", "r1/1")) == ("r1/1 is NIC 1 of host r1, and this target's hosts have 1 NIC each: "
                                           "use the hosts' NIC 0 (a pattern's nics = 1)")
    assert nic_problem(("r1/3",), 2) == ("r1/3 is NIC 3 of host r1, and this target's hosts have 2 NICs each: "
                                         "use NICs 0 to 1 (a pattern's nics <= 2)")


def test_a_pattern_may_run_on_one_nic_of_each_host() -> None:
    rail = {"kind": "ring_allreduce", "hosts": ["h0/1", "h1/1", "h2/1"], "size": "1MiB"}
    p = pattern_from_dict(rail, "pattern")
    assert [c.client.host for c in p.connections()] == ["h0/1", "h1/1", "h2/1"]
    assert pattern_from_dict(pattern_to_dict(p), "pattern") == p
    with pytest.raises(InputError, match=r"^pattern\.nics: hosts names a host's NIC \(h0/1\), and nics spreads"):
        pattern_from_dict({**rail, "ranks_per_host": 2, "nics": 2}, "pattern")
