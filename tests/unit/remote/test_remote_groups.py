"""The disjoint host groups of ``--parallel K``: the split rule, its refusals (one sentence each), and that a chain's
stand-ins come from its own group only."""

from __future__ import annotations

from pathlib import Path

import pytest

from collie.errors import InputError
from collie.remote.groups import open_groups, split
from collie.remote.inventory import load_inventory
from collie.remote.placement import NoStandIn, place, replace
from tests.unit.remote.test_remote_target import inventory

SIM = "sim:cx6-200g"


def _names(groups: list) -> list[list[str]]:  # type: ignore[type-arg]
    return [[h.name for h in g.hosts] for g in groups]


def test_hosts_split_in_inventory_order_into_k_groups_the_first_ones_larger(tmp_path: Path) -> None:
    inv = load_inventory(inventory(tmp_path, [(f"h{i}", SIM, []) for i in range(7)]))
    assert _names(split(inv, 1)) == [[f"h{i}" for i in range(7)]]
    assert _names(split(inv, 2)) == [["h0", "h1", "h2", "h3"], ["h4", "h5", "h6"]]
    assert _names(split(inv, 3)) == [["h0", "h1", "h2"], ["h3", "h4"], ["h5", "h6"]]
    groups = split(inv, 2)
    assert [[h.name for h in place(g).values()] for g in groups] == [["h0", "h1"], ["h4", "h5"]]
    # a host taken out is replaced from its own group, never from another chain's
    assert replace(groups[1], place(groups[1]), "h5", ["h5"])["b"].name == "h6"
    with pytest.raises(NoStandIn):
        replace(groups[1], place(groups[1]), "h5", ["h5", "h6"])


def test_tags_in_place_apply_inside_each_group(tmp_path: Path) -> None:
    hosts = [("x0", SIM, ["rx"]), ("y0", SIM, ["ry"]), ("x1", SIM, ["rx"]), ("y1", SIM, ["ry"])]
    inv = load_inventory(inventory(tmp_path, hosts, extra='[place]\na = "tag:ry"\nb = "tag:rx"'))
    assert [{r: h.name for r, h in place(g).items()} for g in split(inv, 2)] == [
        {"a": "y0", "b": "x0"}, {"a": "y1", "b": "x1"}]


def test_an_inventory_that_cannot_give_k_groups_is_one_sentence(tmp_path: Path) -> None:
    inv = load_inventory(inventory(tmp_path, [(f"h{i}", SIM, []) for i in range(3)]))
    with pytest.raises(InputError, match=r"has 3 hosts, but --parallel 2 needs at least 4: 2 disjoint groups of 2"):
        split(inv, 2)
    named = load_inventory(inventory(tmp_path, [(f"h{i}", SIM, []) for i in range(4)], extra='[place]\na = "h0"'))
    with pytest.raises(InputError, match=r"place.a names host 'h0', which can be in one group only; with "
                                         r"--parallel 2, place roles by tag"):
        split(named, 2)
    tagged = load_inventory(inventory(tmp_path, [("h0", SIM, ["t"]), ("h1", SIM, []), ("h2", SIM, []),
                                                 ("h3", SIM, [])], extra='[place]\na = "tag:t"'))
    with pytest.raises(InputError, match=r"group 1 of .* \(hosts 'h2', 'h3'\) has no host tagged 't' for role 'a' "):
        split(tagged, 2)
    mixed = load_inventory(inventory(tmp_path, [("h0", SIM, []), ("h1", SIM, []), ("h2", "sim:p2100g-100g", []),
                                                ("h3", "sim:p2100g-100g", [])]))
    with pytest.raises(InputError, match=r"group 1 .* runs sim:p2100g-100g and group 0 .* runs sim:cx6-200g; "
                                         r"every group's sim hosts must run the same profile"):
        split(mixed, 2)


def test_open_groups_gives_each_chain_a_target_on_its_group_with_its_seed(tmp_path: Path) -> None:
    path = inventory(tmp_path, [(f"h{i}", SIM, []) for i in range(4)])
    targets = open_groups(str(path), [5, 9])
    assert [[h.name for h in t.placement.values()] for t in targets] == [["h0", "h1"], ["h2", "h3"]]
    assert [t.seed for t in targets] == [5, 9] and {t.spec for t in targets} == {f"remote:{path}"}


def test_hosts_list_shows_each_hosts_chain_and_roles_under_parallel(tmp_path: Path) -> None:
    import json

    from tests.conftest import run_cli

    path = inventory(tmp_path, [(f"h{i}", SIM, []) for i in range(5)])
    r = run_cli("hosts", "list", "--inventory", str(path), "--parallel", "2", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert [(row["host"], row["chain"], row["roles"]) for row in json.loads(r.stdout)] == [
        ("h0", 0, "a"), ("h1", 0, "b"), ("h2", 0, None), ("h3", 1, "a"), ("h4", 1, "b")]
    refused = run_cli("hosts", "list", "--inventory", str(path), "--parallel", "3")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        f"collie: error: {path} has 5 hosts, but --parallel 3 needs at least 6: 3 disjoint groups of 2 (one host "
        "per role a and b)"]
