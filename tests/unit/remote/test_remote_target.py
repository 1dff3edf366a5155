"""RemoteTarget with agents as local child processes (LocalLauncher): placement, the run's steps and merge (exactly
the local simulator's results), faults (a killed agent, a host that keeps failing), and the [place] table."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from collie.errors import InputError, TargetUnavailable
from collie.model.workload import Workload
from collie.remote.errors import Failure, HostError
from collie.remote.inventory import Host, load_inventory
from collie.remote.kind import RemoteSpec
from collie.remote.launch import AgentChannel, LocalLauncher
from collie.remote.orchestrator import RemoteRunError, RemoteTarget
from collie.remote.placement import NoStandIn, place, replace
from collie.targets.base import Unsupported
from collie.targets.registry import open_target, parse_target
from collie.targets.sim import SimTarget
from tests.conftest import EXAMPLES, ROOT
from tests.sshd_fixture import wait_gone

WORKLOADS = [Workload.load(p) for p in sorted(EXAMPLES.glob("*.toml"))]


def inventory(tmp_path: Path, hosts: list[tuple[str, str, list[str]]], extra: str = "") -> Path:
    lines = [extra, ""]
    for name, target, tags in hosts:
        lines += ["[[host]]", f"name = {name!r}", 'address = "127.0.0.1"', f"target = {target!r}",
                  f"tags = {tags!r}", ""]
    path = tmp_path / "hosts.toml"
    path.write_text("\n".join(lines))
    return path


class FlakyLauncher:
    """The LocalLauncher, except that hosts named in ``down`` cannot be reached."""

    def __init__(self) -> None:
        self.local = LocalLauncher(env={"PYTHONPATH": str(ROOT)})
        self.down: set[str] = set()
        self.started: list[str] = []

    def start(self, host: Host, timeout: float | None = None) -> AgentChannel:
        if host.name in self.down:
            raise HostError(host.name, Failure.UNREACHABLE, "127.0.0.1:22 refused the connection")
        self.started.append(host.name)
        return self.local.start(host, timeout)

    def close(self) -> None:
        self.local.close()


@pytest.fixture
def launcher() -> Iterator[FlakyLauncher]:
    flaky = FlakyLauncher()
    yield flaky
    flaky.close()


def _pids(t: RemoteTarget) -> dict[str, int]:
    return {n: a.client.welcome.pid for n, a in t._agents.items() if a.client.welcome}


def test_remote_sim_hosts_return_exactly_the_local_simulators_results(tmp_path: Path,
                                                                      launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [("h0", "sim:cx6-200g", []), ("h1", "sim:cx6-200g", [])])
    local = SimTarget("cx6-200g", seed=11)
    with RemoteTarget(inv, seed=11, launcher=launcher) as t:
        info = t.describe()
        assert (info.kind, info.hosts, info.name) == ("remote", ("h0", "h1"), f"remote:{inv}")
        assert info.nic_model == local.describe().nic_model and info.line_rate_bps == local.describe().line_rate_bps
        assert (info.details["a.host"], info.details["b.host"], info.details["a.profile"]) == ("h0", "h1", "cx6-200g")
        assert info.details["simulated"] == "yes" and float(info.details["b.clock_skew_ms"]) == pytest.approx(0, abs=50)
        for i, w in enumerate(WORKLOADS * 2):
            rep = None if i % 2 else i
            got, want = t.run(w, 1.0, repetition=rep).to_dict(True), local.run(w, 1.0, repetition=rep).to_dict(True)
            assert got.pop("target") == f"remote:{inv}" and want.pop("target") == "sim:cx6-200g"
            assert got == want
    assert launcher.started == ["h0", "h1"]  # one agent per host for the whole session


def test_one_host_plays_both_roles_in_loopback(tmp_path: Path, launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [("solo", "sim:cx6-200g", [])])
    with RemoteTarget(inv, seed=1, launcher=launcher) as t:
        assert {r: h.name for r, h in t.placement.items()} == {"a": "solo", "b": "solo"}
        w = WORKLOADS[0]
        got = t.run(w, 1.0, repetition=0)
        assert got.flows == SimTarget(seed=1).run(w, 1.0, repetition=0).flows
    assert launcher.started == ["solo"]


def test_only_the_hosts_of_the_roles_a_workload_uses_take_part_in_its_run(tmp_path: Path,
                                                                          launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [("h0", "sim:cx6-200g", []), ("h1", "sim:cx6-200g", [])], extra="request_timeout = 3")
    w = WORKLOADS[0]
    raw = w.to_dict()
    loopback = Workload.from_dict({**raw, "flows": [{**raw["flows"][0], "client": "a", "server": "a"}]}, "loopback")
    assert loopback.hosts == ("a",)
    with RemoteTarget(inv, seed=3, launcher=launcher) as t:
        pid = _pids(t)["h1"]
        os.kill(pid, signal.SIGSTOP)  # h1 would time out any request: it must get none
        try:
            got = t.run(loopback, 1.0, repetition=0)
            assert [h.host for h in got.hosts] == ["a"]
            assert got.to_dict(True)["flows"] == SimTarget("cx6-200g", seed=3).run(loopback, 1.0,
                                                                                   repetition=0).to_dict(True)["flows"]
            with pytest.raises(HostError, match="h1"):  # a workload using role b needs h1
                t.run(w, 1.0, repetition=0)
        finally:
            os.kill(pid, signal.SIGCONT)


def test_a_killed_agent_fails_the_run_with_its_host_named_and_is_started_again(tmp_path: Path,
                                                                             launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [("h0", "sim:cx6-200g", []), ("h1", "sim:cx6-200g", [])])
    w = WORKLOADS[0]
    with RemoteTarget(inv, seed=2, launcher=launcher) as t:
        t.run(w, 1.0)
        victim = _pids(t)["h1"]
        os.kill(victim, signal.SIGKILL)
        assert wait_gone(victim)
        with pytest.raises(HostError) as err:
            t.run(w, 1.0)
        assert err.value.host == "h1" and str(err.value).startswith("host 'h1': its agent was killed")
        again = t.run(w, 1.0, repetition=0)
        assert again.flows == SimTarget(seed=2).run(w, 1.0, repetition=0).flows
        assert _pids(t)["h1"] != victim and launcher.started == ["h0", "h1", "h1"]
        survivors = list(_pids(t).values())
    assert all(wait_gone(p) for p in survivors)


def test_a_host_failing_three_runs_in_a_row_is_replaced_by_a_spare_then_the_target_gives_up(
        tmp_path: Path, launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [("h0", "sim:cx6-200g", []), ("h1", "sim:cx6-200g", []),
                               ("spare", "sim:cx6-200g", [])])
    w = WORKLOADS[0]
    with RemoteTarget(inv, seed=2, launcher=launcher) as t:
        launcher.down.add("h1")
        os.kill(_pids(t)["h1"], signal.SIGKILL)
        reasons = []
        for _ in range(3):
            with pytest.raises((HostError, RemoteRunError)) as err:
                t.run(w, 1.0)
            reasons.append(str(err.value))
        assert reasons[1] == "host 'h1': 127.0.0.1:22 refused the connection"
        assert reasons[2].endswith("; host 'h1' failed 3 runs in a row and is taken out: role b now on host 'spare'")
        assert t.run(w, 1.0).flows and t.placement["b"].name == "spare" and t.out == ["h1"]
        launcher.down.add("spare")
        os.kill(_pids(t)["spare"], signal.SIGKILL)
        for _ in range(2):
            with pytest.raises(HostError):
                t.run(w, 1.0)
        with pytest.raises(TargetUnavailable, match=r"^host 'spare' failed 3 runs in a row and is taken out, and no "
                                                    r"unused host of .* runs sim:cx6-200g to stand in for 'spare'"):
            t.run(w, 1.0)


def test_unreachable_hosts_at_open_are_one_sentence(tmp_path: Path, launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [("h0", "sim:cx6-200g", []), ("h1", "sim:cx6-200g", [])])
    launcher.down |= {"h0", "h1"}
    with pytest.raises(TargetUnavailable, match=r"^2 hosts cannot be used: host 'h0': 127.0.0.1:22 refused the "
                                                r"connection; host 'h1': .*; see: collie hosts check"):
        RemoteTarget(inv, launcher=launcher).__enter__()


def test_unsupported_on_any_host_is_unsupported_and_strangers_are_refused(tmp_path: Path,
                                                                         launcher: FlakyLauncher) -> None:
    inv = inventory(tmp_path, [("h0", "sim:cx6-200g", []), ("h1", "sim:cx6-200g", [])])
    huge = Workload.from_dict({"flows": [{"client": "a", "server": "b", "transport": "RC", "opcode": "WRITE",
                                          "sges": 32}]})
    stranger = Workload.from_dict({"flows": [{"client": "a", "server": "c", "transport": "RC", "opcode": "WRITE"}]})
    with RemoteTarget(inv, launcher=launcher) as t:
        with pytest.raises(Unsupported):
            t.run(huge, 1.0)
        with pytest.raises(Unsupported, match="names the role 'a' and the host 'c'"):
            t.run(stranger, 1.0)
        assert t.run(WORKLOADS[0], 1.0).flows  # nothing was counted against the hosts


def test_placement_by_name_and_tag_and_replacement_rules(tmp_path: Path) -> None:
    path = inventory(tmp_path, [("x", "sim:cx6-200g", ["r1"]), ("y", "sim:cx6-200g", ["r2"]),
                                ("z", "sim:cx6-200g", ["r2"]), ("w", "sim:cx6-200g", [])],
                     extra='[place]\na = "w"\nb = "tag:r2"')
    inv = load_inventory(path)
    p = place(inv)
    assert (p["a"].name, p["b"].name) == ("w", "y")
    assert replace(inv, p, "y", ["y"])["b"].name == "z"
    with pytest.raises(NoStandIn, match=r"no unused host of .* runs sim:cx6-200g with tag 'r2' to stand in for 'z'"):
        replace(inv, {"a": p["a"], "b": inv.host("z")}, "z", ["y", "z"])
    with pytest.raises(NoStandIn):  # a host placed by name has no stand-in
        replace(inv, p, "w", ["w"])
    default = load_inventory(inventory(tmp_path, [("x", "sim:cx6-200g", []), ("y", "sim:cx6-200g", [])]))
    assert [h.name for h in place(default).values()] == ["x", "y"]
    assert [h.name for h in place(default, ["x"]).values()] == ["y", "y"]


@pytest.mark.parametrize(("extra", "hosts", "message"), [
    ('[place]\nc = "x"', None, r"hosts.toml:2: place: unknown field 'c'; allowed fields are a, b, ranks$"),
    ('[place]\na = "nope"', None, r"hosts.toml:2: place: a: no host named 'nope'; hosts are 'x', 'y'"),
    ('[place]\na = "tag:gpu"', None, r"hosts.toml:2: place: a: no host carries the tag 'gpu'"),
    ('[place]\na = 3', None, r"hosts.toml:2: place: a: expected a host name or \"tag:TAG\", got 3$"),
    ('place = 3', None, r"place: expected a table of role = \"HOST\" or \"tag:TAG\", got 3$"),
    ("", [("x", "sim:cx6-200g", []), ("y", "sim:p2100g-100g", [])],
     r"role 'a' is on host 'x' running sim:cx6-200g and role 'b' on host 'y' running sim:p2100g-100g; every sim host "
     r"of a remote target must run the same profile"),
])
def test_placement_mistakes_are_one_sentence(tmp_path: Path, extra: str, hosts: list[tuple[str, str, list[str]]] | None,
                                             message: str) -> None:
    path = inventory(tmp_path, hosts or [("x", "sim:cx6-200g", []), ("y", "sim:cx6-200g", [])], extra=extra)
    with pytest.raises(InputError, match=message):
        open_target(parse_target(f"remote:{path}"))


def test_open_target_names_the_inventory(tmp_path: Path) -> None:
    assert parse_target(f"remote:{tmp_path / 'nope.toml'}") == RemoteSpec(str(tmp_path / "nope.toml"))
    with pytest.raises(InputError, match=r"nope\.toml"):
        open_target(parse_target(f"remote:{tmp_path / 'nope.toml'}"))
    with pytest.raises(Exception, match="remote needs an inventory file"):
        open_target(parse_target("remote:"))


def test_verbs_parts_merge_with_each_roles_rates_recomputed_from_every_flow(tmp_path: Path) -> None:
    from collie.targets.base import FlowResult, HostResult
    from collie.targets.session import HostPart

    inv = inventory(tmp_path, [("n0", "verbs:rxe0:1:1", []), ("n1", "verbs:rxe0:1:1", [])])
    t = RemoteTarget(inv)  # not entered: merging needs no agent
    w = Workload.from_dict({"flows": [
        {"client": "a", "server": "b", "transport": "RC", "opcode": "WRITE"},
        {"client": "b", "server": "a", "transport": "RC", "opcode": "READ"},
        {"client": "a", "server": "b", "transport": "RC", "opcode": "SEND"}]})

    def flow(i: int, client: str, server: str, bps: float) -> FlowResult:
        return FlowResult(i, client, server, bps, bps / 8000, bps / 80000, 1.0, 2.0, 3.0)

    def host_result(name: str) -> HostResult:  # what one host can tell alone: its own flows only
        return HostResult(name, 1.0, 1.0, 1.0, 1.0, counters={"port_xmit_data": 5.0},
                          sources={"port_xmit_data": "port"})

    parts = {"n0": HostPart(hosts=(host_result("a"),), flows=(flow(0, "a", "b", 8e9), flow(2, "a", "b", 2e9)),
                            setup_s=0.3, errors=("flow 0: 1 completions with RETRY_EXC_ERR",), interval=(1, 2)),
             "n1": HostPart(hosts=(host_result("b"),), flows=(flow(1, "b", "a", 4e9),), setup_s=0.5,
                            engine_bound=True, interval=(1, 2))}
    r = t._merge(w, 1.0, parts, t._roles())
    assert [f.flow for f in r.flows] == [0, 1, 2] and r.setup_s == 0.5 and r.engine_bound
    a, b = r.host("a"), r.host("b")
    # a writes and sends to b, and the READ that b (its client) issues brings its payload from a: all from a to b
    assert (a.tx_bps, a.rx_bps, a.tx_pps) == (14e9, 0.0, 14e9 / 8000)
    assert (b.tx_bps, b.rx_bps, b.rx_pps) == (0.0, 14e9, 14e9 / 8000)
    assert a.counters == {"port_xmit_data": 5.0} and a.sources == {"port_xmit_data": "port"}
    assert r.errors == ("host 'n0': flow 0: 1 completions with RETRY_EXC_ERR",)
    assert r.target == f"remote:{inv}" and r.workload_key == w.key()
    with pytest.raises(Exception, match="no host reported flow 1 of the workload"):
        t._merge(w, 1.0, {"n0": parts["n0"]}, t._roles())


def test_a_flow_its_servers_host_reports_too_takes_rates_from_there_and_latencies_from_the_client(
        tmp_path: Path) -> None:
    """A verbs UD flow may drop: the server's host counts what arrived, the client's what it sent."""
    from collie.targets.base import FlowResult, HostResult
    from collie.targets.session import HostPart

    inv = inventory(tmp_path, [("n0", "verbs:rxe0:1:1", []), ("n1", "verbs:rxe0:1:1", [])])
    t = RemoteTarget(inv)
    w = Workload.from_dict({"flows": [{"client": "a", "server": "b", "transport": "UD", "opcode": "SEND",
                                       "sizes": [1000], "mtu": 1024}]})
    host = HostResult("a", 0.0, 0.0, 0.0, 0.0)
    sent = FlowResult(0, "a", "b", 8e6, 1000.0, 1000.0, 5.0, 9.0, 12.0)
    arrived = FlowResult(0, "a", "b", 6e6, 750.0, 750.0, 0.0, 0.0, 0.0)
    parts = {"n0": HostPart(hosts=(host,), flows=(sent,), setup_s=0.1),
             "n1": HostPart(hosts=(HostResult("b", 0.0, 0.0, 0.0, 0.0),), flows=(arrived,), setup_s=0.1)}
    (f,) = t._merge(w, 1.0, parts, t._roles()).flows
    assert (f.bps, f.pps, f.msg_rate) == (6e6, 750.0, 750.0)
    assert (f.lat_p50_us, f.lat_p99_us, f.lat_p999_us) == (5.0, 9.0, 12.0)


def test_a_flows_churn_is_made_of_both_hosts_reports_of_their_ends(tmp_path: Path) -> None:
    """Each host churns the ends on its roles and reports them apart; the flow's figures are of both."""
    from collie.targets.base import ChurnStats, EndChurn, FlowResult, HostResult
    from collie.targets.session import HostPart

    inv = inventory(tmp_path, [("n0", "verbs:rxe0:1:1", []), ("n1", "verbs:rxe0:1:1", [])])
    t = RemoteTarget(inv)
    w = Workload.from_dict({"flows": [{"client": "a", "server": "b", "transport": "RC", "opcode": "WRITE",
                                       "mr_churn": 100, "qp_churn": 10}]})
    none = ChurnStats(0, 0, 0.0, 0.0, 0.0)
    client = EndChurn(0, "client", ChurnStats(100, 98, 98.0, 400.0, 900.0), ChurnStats(10, 10, 10.0, 2000.0, 5000.0))
    server = EndChurn(0, "server", ChurnStats(100, 90, 90.0, 600.0, 1500.0), none)
    flow = FlowResult(0, "a", "b", 8e9, 1e6, 1e5, 5.0, 9.0, 12.0)
    parts = {"n0": HostPart(hosts=(HostResult("a", 0.0, 0.0, 0.0, 0.0),), flows=(flow,), setup_s=0.1,
                            churn=(client,)),
             "n1": HostPart(hosts=(HostResult("b", 0.0, 0.0, 0.0, 0.0),), flows=(), setup_s=0.1, churn=(server,))}
    (f,) = t._merge(w, 1.0, parts, t._roles()).flows
    assert (f.mr_churn_per_s, f.mr_churn_us, f.mr_churn_p99_us) == (94.0, 500.0, 1500.0)
    assert (f.qp_churn_per_s, f.qp_churn_us, f.qp_churn_p99_us) == (10.0, 2000.0, 5000.0)
    assert f.bps == 8e9
