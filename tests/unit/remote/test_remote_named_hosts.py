"""RemoteTarget running workloads that name the inventory's hosts (N-host patterns, a fleet check's rounds), with
agents as local child processes: sim hosts simulate one fleet, the i-th inventory host playing the profile's i-th
host, exactly as the local simulator; only the named hosts take part; every mistake is one ``Unsupported``
sentence; a named host taken out is not stood in for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from collie.model.collective import collective
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind
from collie.model.workload import Workload
from collie.remote.orchestrator import RemoteRunError, RemoteTarget
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget
from tests.unit.remote.test_remote_target import FlakyLauncher, inventory

FLOW = Flow(Endpoint("a"), Endpoint("b"), sizes=(65536,), qps=2)


#: The built-in fleet whose h2 has half its port speed (h6: half its PCIe bandwidth).
FLEET = "sim:fleet8-cx6-faults"


@pytest.fixture
def launcher() -> Iterator[FlakyLauncher]:
    flaky = FlakyLauncher()
    yield flaky
    flaky.close()


def ring(hosts: tuple[str, ...], ranks_per_host: int = 1) -> Workload:
    return Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, hosts, 1 << 26, ranks_per_host, flow=FLOW))


def test_a_ring_over_sim_hosts_named_as_the_profiles_is_exactly_the_local_simulators(
        tmp_path: Path, launcher: FlakyLauncher) -> None:
    names = ["h0", "h1", "h2", "h3", "spare"]
    inv = inventory(tmp_path, [(n, FLEET, []) for n in names])
    w = ring(("h0", "h1", "h2", "h3"), ranks_per_host=2)
    local = SimTarget("fleet8-cx6-faults", seed=4).run(w, 1.0, repetition=0)
    with RemoteTarget(inv, seed=4, launcher=launcher) as t:
        assert t.describe().hosts == tuple(names)
        got = t.run(w, 1.0, repetition=0)
    want = local.to_dict(True)
    assert want.pop("target") == FLEET
    assert got.to_dict(True) | {"target": ""} == want | {"target": ""}
    assert "fault:h2:port_speed" in got.truth
    assert launcher.started == ["h0", "h1", "h2", "h3"]  # the placed two, then the ring's others; never the spare


def test_hosts_named_otherwise_play_the_profiles_hosts_in_inventory_order(tmp_path: Path,
                                                                           launcher: FlakyLauncher) -> None:
    names = ("n0", "n1", "n2", "n3")
    inv = inventory(tmp_path, [(n, FLEET, []) for n in names])
    w = ring(("n1", "n2", "n3", "n0"))  # a ring in another order: the same links, named by inventory hosts
    with RemoteTarget(inv, seed=2, launcher=launcher) as t:
        got = t.run(w, 1.0, repetition=0)
    assert got.workload_key == w.key()
    assert {(f.client, f.server) for f in got.flows} == {(f.client.host, f.server.host) for f in w.flows}
    assert [h.host for h in got.hosts] == sorted(names)
    assert "fault:h2:port_speed" in got.truth  # ground truth names the profile's hosts
    links = {k.name: k.gbs for k in collective(w.pattern, got.flows).links} if w.pattern else {}
    slow = min(links, key=lambda n: links[n])
    assert "n2" in slow.split("->")  # the half-speed port is n2's, as h2's is locally


def test_named_host_mistakes_are_one_sentence_each(tmp_path: Path, launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [("h0", FLEET, []), ("h1", FLEET, []),
                               ("h2", "sim:cx6-200g", []), ("h3", "sim:cx6-200g", []), ("h4", "sim:cx6-200g", [])])
    mixed = Workload(flows=(Flow(Endpoint("a"), Endpoint("h1")),))
    with RemoteTarget(inv, launcher=launcher) as t:
        with pytest.raises(Unsupported, match=r"^the workload names the role 'a' and the host 'h1'; "):
            t.run(mixed, 1.0)
        with pytest.raises(Unsupported, match=r"^workload host 'x' is neither a role \(a, b; r0, r1, \.\.\. in a "
                                              r"pattern\) nor a host of "):
            t.run(ring(("h0", "h1", "x")), 1.0)
        with pytest.raises(Unsupported, match=r"^the workload's hosts run sim:cx6-200g and sim:fleet8-cx6-faults; "):
            t.run(ring(("h0", "h1", "h2")), 1.0)
        with pytest.raises(Unsupported, match=r"^host 'h2' is host 3 of \S+, and sim:cx6-200g simulates 2 hosts; "):
            t.run(ring(("h2", "h3", "h4")), 1.0)
        assert t.run(ring(("h0", "h1")), 1.0).flows  # nothing was counted against the hosts


def test_a_named_host_taken_out_is_not_stood_in_for(tmp_path: Path, launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [(n, FLEET, []) for n in ("h0", "h1", "h2", "h3")])
    w = ring(("h1", "h2", "h3"))
    with RemoteTarget(inv, launcher=launcher, max_failures=2) as t:
        launcher.down.add("h3")
        with pytest.raises(Exception, match="host 'h3'"):
            t.run(w, 1.0)
        with pytest.raises(RemoteRunError, match=r"host 'h3' failed 2 runs in a row and is taken out$"):
            t.run(w, 1.0)
        with pytest.raises(Unsupported, match=r"^host 'h3' of \S+ was taken out after failing 2 runs in a row"):
            t.run(w, 1.0)
        assert {r: h.name for r, h in t.placement.items()} == {"a": "h0", "b": "h1"}
        assert t.run(ring(("h0", "h1", "h2")), 1.0).flows


def test_host_roles_are_played_by_the_inventorys_hosts_in_order_as_the_local_simulator_plays_them(
        tmp_path: Path, launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [(n, FLEET, []) for n in ("n0", "n1", "n2", "n3")])
    w = ring(("r0", "r1", "r2"), ranks_per_host=2)
    local = SimTarget("fleet8-cx6-faults", seed=5).run(w, 1.0, repetition=0)
    with RemoteTarget(inv, seed=5, launcher=launcher, max_failures=1) as t:
        got = t.run(w, 1.0, repetition=0)
        assert got.to_dict(True) | {"target": ""} == local.to_dict(True) | {"target": ""}
        assert launcher.started == ["n0", "n1", "n2"]
        launcher.down.add("n1")
        t._agents["n1"].client.close()  # n1's agent is gone and cannot be started again: taken out
        with pytest.raises(RemoteRunError, match="host 'n1' failed 1 runs in a row and is taken out"):
            t.run(w, 1.0, repetition=0)
        shifted = t.run(w, 1.0, repetition=0)  # r1 is now n2 (profile host h2, the slow port), r2 is n3
        assert {f.client for f in shifted.flows} == {"r0", "r1", "r2"}
        links = {k.name: k.gbs for k in collective(w.pattern, shifted.flows).links} if w.pattern else {}
        slow = min(links, key=lambda n: links[n])
        assert "r1" in slow and "fault:h2:port_speed" in shifted.truth
        with pytest.raises(Unsupported, match=r"^a pattern over the host roles r0 \.\. r3 needs 4 hosts; \S+ has 3 "
                                              r"\(without 'n1', taken out\)"):
            t.run(ring(("r0", "r1", "r2", "r3")), 1.0)


def test_place_ranks_puts_the_host_roles_on_the_hosts_carrying_a_tag(tmp_path: Path,
                                                                     launcher: FlakyLauncher) -> None:
    """r0, r1, r2 on the hosts tagged "gpu" in inventory order (n1, n3, n4: the profile's h1, h3 and h4), so the
    slow port of h2 (inventory host n2) takes no part; too few tagged hosts is one sentence."""
    tags = {"n1": ["gpu"], "n3": ["gpu"], "n4": ["gpu"]}
    inv = inventory(tmp_path, [(n, FLEET, tags.get(n, [])) for n in ("n0", "n1", "n2", "n3", "n4")],
                    extra='[place]\nranks = "tag:gpu"')
    with RemoteTarget(inv, seed=5, launcher=launcher) as t:
        got = t.run(ring(("r0", "r1", "r2")), 1.0, repetition=0)
        assert {f.client for f in got.flows} == {"r0", "r1", "r2"} and got.truth == ()
        assert [h for h in launcher.started if h not in ("n0", "n1")] == ["n3", "n4"]
        with pytest.raises(Unsupported, match=r"needs 4 hosts; \S+ has 3 carrying the tag 'gpu' \(\[place\] ranks\)"):
            t.run(ring(("r0", "r1", "r2", "r3")), 1.0)
    plain = inventory(tmp_path, [(n, FLEET, []) for n in ("n0", "n1", "n2", "n3", "n4")])
    with RemoteTarget(plain, seed=5, launcher=launcher) as t:
        assert "fault:h2:port_speed" in t.run(ring(("r0", "r1", "r2")), 1.0, repetition=0).truth


@pytest.mark.parametrize(("place", "says"), [
    ('ranks = "n1"', r"hosts.toml:2: place: ranks: a pattern's ranks are placed by tag \(\"tag:T\"\), not on one "
                     r"host: got 'n1'"),
    ('ranks = "tag:tpu"', "no host carries the tag 'tpu'"),
])
def test_place_ranks_is_a_tag_some_host_carries(tmp_path: Path, place: str, says: str) -> None:
    from collie.errors import InputError
    from collie.remote.inventory import load_inventory

    path = inventory(tmp_path, [("n0", FLEET, ["gpu"]), ("n1", FLEET, [])], extra=f"[place]\n{place}")
    with pytest.raises(InputError, match=says):
        load_inventory(path)
