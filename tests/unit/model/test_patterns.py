"""Collective patterns: placement of ranks, connections and steps of each kind, busbw factors, the file form and
its errors, and the workload that runs a pattern (its key, its round trip, plain workloads unchanged)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from collie.errors import ConstraintError, InputError
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind, derangement
from collie.model.workload import Workload

HOSTS4 = ("h0", "h1", "h2", "h3")
TEMPLATE = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20, qps=2)


def pattern(kind: PatternKind, hosts: tuple[str, ...] = HOSTS4, size: int = 64 << 20, **kw: object) -> Pattern:
    flow = replace(TEMPLATE, opcodes=("WRITE_IMM",)) if kind is PatternKind.KV_SCATTER else TEMPLATE
    return Pattern(kind, hosts, size, flow=flow, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kind", "pairs", "steps", "factor"), [
    (PatternKind.RING_ALLREDUCE, [(0, 1), (1, 2), (2, 3), (3, 0)], 6, 1.5),
    (PatternKind.ALL_TO_ALL, [(s, d) for s in range(4) for d in range(4) if s != d], 1, 0.75),
    (PatternKind.INCAST, [(1, 0), (2, 0), (3, 0)], 1, 3.0),
    (PatternKind.OUTCAST, [(0, 1), (0, 2), (0, 3)], 1, 3.0),
    (PatternKind.KV_SCATTER, [(0, 1), (0, 2), (0, 3)], 1, 3.0),
    (PatternKind.PAIRWISE, [(0, 1), (1, 0), (2, 3), (3, 2)], 1, 1.0),
])
def test_each_kind_expands_into_its_connections_and_steps(kind: PatternKind, pairs: list[tuple[int, int]],
                                                          steps: int, factor: float) -> None:
    p = pattern(kind)
    assert list(p.pairs()) == pairs
    assert p.step_count == steps and len(p.steps()) == steps and p.busbw_factor == pytest.approx(factor)
    flows = p.connections()
    assert [(f.client.host, f.server.host) for f in flows] == [(HOSTS4[s], HOSTS4[d]) for s, d in pairs]
    # every step moves the same bytes on every connection: S/N for ring and all-to-all, S for the others
    per = (64 << 20) // 4 if kind in (PatternKind.RING_ALLREDUCE, PatternKind.ALL_TO_ALL) else 64 << 20
    assert {(t.connection, t.bytes) for step in p.steps() for t in step} == {(i, per) for i in range(len(pairs))}
    assert all(f.qps == 2 and f.sizes == (1 << 20,) for f in flows)


def test_a_permutation_is_a_seeded_derangement() -> None:
    for n in (2, 3, 8, 101):
        for seed in range(5):
            d = derangement(n, seed)
            assert sorted(d) == list(range(n)) and all(d[i] != i for i in range(n))
    p = pattern(PatternKind.PERMUTATION, seed=7)
    assert p.pairs() == pattern(PatternKind.PERMUTATION, seed=7).pairs()
    assert {s for s, _ in p.pairs()} == {d for _, d in p.pairs()} == set(range(4))


def test_ranks_per_host_places_ranks_in_order_and_same_host_ranks_talk_over_loopback() -> None:
    p = pattern(PatternKind.RING_ALLREDUCE, hosts=("x", "y"), ranks_per_host=2)
    assert p.ranks == 4 and [p.host_of(r) for r in range(4)] == ["x", "x", "y", "y"]
    assert [(f.client.host, f.server.host, f.loopback) for f in p.connections()] == [
        ("x", "x", True), ("x", "y", False), ("y", "y", True), ("y", "x", False)]


def test_wr_sizes_are_cut_to_a_transfer() -> None:
    p = pattern(PatternKind.ALL_TO_ALL, size=4096)  # 1 KiB per transfer, WRs of 1 MiB asked
    assert p.transfer_bytes == 1024 and {f.sizes for f in p.connections()} == {(1024,)}


FILE = """
name = "ring of four"
[pattern]
kind = "ring_allreduce"
hosts = ["h0", "h1", "h2", "h3"]
size = "64MiB"
[pattern.flow]
qps = 2
sizes = ["1MiB"]
"""


def test_a_pattern_workload_round_trips_and_its_key_is_the_patterns() -> None:
    w = Workload.from_toml(FILE)
    assert w.pattern is not None and w.pattern.kind is PatternKind.RING_ALLREDUCE and w.name == "ring of four"
    assert w.flows == w.pattern.connections() and w.hosts == HOSTS4
    assert w.pattern.flow.mr_size == 1 << 20  # room for the largest WR when the file does not say
    again = Workload.from_toml(w.to_toml())
    assert again == w and again.key() == w.key()
    assert Workload.from_json(w.to_json()) == w
    # the same flows without the pattern are another experiment (no steps); changing flows drops the pattern
    plain = Workload(flows=w.flows)
    assert plain.key() != w.key() and plain.pattern is None
    assert w.with_flows(w.flows).pattern is None
    other = Workload.of_pattern(replace(w.pattern, size=32 << 20))
    assert other.key() != w.key()


def test_a_victim_beside_a_pattern_runs_after_its_connections_and_round_trips() -> None:
    text = FILE + '\n[pattern.victim]\nclient = "h1"\nserver = "h2"\nvictim = "bulk"\nsizes = ["64KiB"]\n'
    w = Workload.from_toml(text)
    assert w.pattern is not None and w.pattern.victim is not None
    assert w.flows == (*w.pattern.connections(), w.pattern.victim) and w.isolation
    assert (w.flows[-1].client.host, w.flows[-1].server.host, w.flows[-1].victim) == ("h1", "h2", "bulk")
    assert Workload.from_toml(w.to_toml()) == w and Workload.from_json(w.to_json()) == w
    alone = Workload.from_toml(FILE)
    assert w.key() != alone.key() and w.solo().flows == (replace(w.pattern.victim, victim=""),)
    default = Workload.from_toml(FILE + '\n[pattern.victim]\nclient = "h1"\nserver = "h2"\n')
    assert default.flows[-1].victim == "victim"


def test_a_plain_workload_keeps_its_file_form_and_key() -> None:
    w = Workload(flows=(Flow(Endpoint("a"), Endpoint("b")),))
    assert "pattern" not in w.to_dict() and w.key() == Workload.from_toml(w.to_toml()).key()
    assert w.key() == "2f1f421b3e84d9df"  # as before patterns existed


@pytest.mark.parametrize(("text", "says"), [
    ('[pattern]\nkind = "ring"\nhosts = ["a", "b"]\nsize = 1', "pattern: kind: 'ring' is not a pattern kind"),
    ('[pattern]\nkind = "incast"\nhosts = ["a"]\nsize = 1', "needs at least 2 ranks, got 1"),
    ('[pattern]\nkind = "pairwise"\nhosts = ["a", "b", "c"]\nsize = 1', "needs an even number of ranks, got 3"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "a"]\nsize = 1', "names a host twice"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b c"]\nsize = 1', "hosts[1]: 'b c' is not a host name"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = "lots"', "pattern.size:"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\nranks_per_host = 0', "ranks_per_host: 0 is out"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\n[pattern.flow]\nopcode = "READ"',
     "READ cannot be used"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\n[pattern.flow]\nclient = "a"',
     "flow.client: a pattern places its ranks itself"),
    ('[pattern]\nkind = "kv_scatter"\nhosts = ["a", "b"]\nsize = 1\n[pattern.flow]\nopcode = "WRITE"',
     "kv_scatter moves a KV cache with WRITE_IMM only"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\n[pattern.flow]\nvictim = "lat"',
     "flow.victim: a pattern's connections are its own tenants"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\nextra = 2', "unknown field 'extra'"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\n[pattern.victim]\nclient = "a"',
     "pattern.victim: server: missing (a required field)"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\n[pattern.victim]\nclient = "a"\nserver = "c"',
     "victim 'victim' runs a -> c, but its aggressors use only a, b"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\nvictim = 3', "pattern.victim: expected a table"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\n[pattern.victim]\nclient = "a"\nserver = "b"\n'
     'victim = "none"', "pattern.victim.victim"),
    ('[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = 1\n[[flows]]\nclient = "a"\nserver = "b"',
     "either [[flows]] tables or one [pattern] table, not both"),
    ('name = "x"', "either [[flows]] tables or one [pattern] table"),
])
def test_a_bad_pattern_is_one_sentence_naming_the_field(text: str, says: str) -> None:
    with pytest.raises(InputError) as exc:
        Workload.from_toml(text, "w.toml")
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_an_all_to_all_too_large_for_one_experiment_is_refused() -> None:
    hosts = ", ".join(f'"h{i}"' for i in range(200))
    with pytest.raises(InputError, match="all_to_all over 200 ranks has 39800 connections"):
        Workload.from_toml(f'[pattern]\nkind = "all_to_all"\nhosts = [{hosts}]\nsize = 1')


def test_the_connections_meet_the_flow_constraints() -> None:
    text = '[pattern]\nkind = "incast"\nhosts = ["a", "b"]\nsize = "1MiB"\n[pattern.flow]\ntransport = "UD"\n' \
           'opcode = "SEND"\nsizes = [8192]\nmtu = 4096'
    with pytest.raises(ConstraintError, match="pattern: UD messages must fit in one MTU"):
        Workload.from_toml(text)
