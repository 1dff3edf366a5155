from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from collie.errors import ConstraintError, InputError
from collie.model.constraints import violations
from collie.model.dimensions import SizeVector
from collie.model.space import PARAMETERS, PATTERN_PARAMETERS, load_space


@pytest.fixture(scope="module")
def space():  # type: ignore[no-untyped-def]
    return load_space()


def test_default_space_has_the_papers_dimensions(space) -> None:  # type: ignore[no-untyped-def]
    # the traffic class is searched where switches give it a meaning (workloads/collective.toml)
    assert set(space.names) == set(PARAMETERS) - set(PATTERN_PARAMETERS) - {"tclass"}
    assert (space.dimension("qps").lo, space.dimension("qps").hi) == (1, 20000)
    assert space.dimension("mrs").hi == 200000
    assert space.dimension("batch").hi == 128 and space.dimension("sges").hi == 16
    assert space.dimension("wq_depth").hi == 4096
    assert space.dimension("sizes").lo == 1 and space.dimension("sizes").hi == 8 << 20


def test_samples_are_legal_and_cover_every_value(space) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    points = [space.sample(rng) for _ in range(600)]
    for p in points:
        assert space.problems(p) == []
        assert violations(space.build(p).flows) == []
    assert {p["op"] for p in points} == set(space.dimension("op").values)
    assert {p["direction"] for p in points} == set(space.dimension("direction").values)
    qps = np.array([p["qps"] for p in points])
    # log2 scale: about half the samples below sqrt(20000) ~ 141
    assert 0.3 < float(np.mean(qps < 141)) < 0.7
    assert qps.max() > 2000 and qps.min() < 4
    # opcode patterns: about half the points mix opcodes on the same QPs, and the mixes reach READ + WRITE and
    # atomics among other opcodes (each built pattern legal for its transport, checked above)
    flows = [space.build(p).flows[0] for p in points]
    assert 0.3 < sum(f.mixed for f in flows) / len(flows) < 0.6
    assert any(f.mixed and f.atomic for f in flows)
    assert any("READ" in f.opcodes and "WRITE" in f.opcodes for f in flows)
    # the receive side keeps its defaults unless an opcode consumes receives
    assert all(f.consumes_receives or (f.recv_batch, f.recv_delay_us, f.rq_depth) == (1, 0, f.sq_depth)
               for f in flows)
    assert any(f.consumes_receives and f.recv_delay_us > 0 and f.rq_depth != f.sq_depth for f in flows)


def test_mutate_changes_exactly_one_dimension_and_stays_legal(space) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    p = space.sample(rng)
    names = set()
    for _ in range(400):
        q, name = space.mutate(p, rng)
        diff = [k for k in p if p[k] != q[k]]
        assert diff == [name]
        assert space.problems(q) == []
        names.add(name)
        p = q
    assert names == set(space.names)


def test_mutate_a_named_dimension_steps_locally_on_log_scale(space) -> None:  # type: ignore[no-untyped-def]
    # qps spans log2(20000) ~ 14.3 octaves: a local step moves half an octave to a quarter of that (~3.6)
    rng = np.random.default_rng(5)
    p = {**space.simplest(), "qps": 256}
    octaves = []
    for _ in range(300):
        q, name = space.mutate(p, rng, "qps")
        assert name == "qps"
        octaves.append(abs(math.log2(q["qps"] / 256)))
    local = [o for o in octaves if 0.45 <= o <= 3.6]
    assert len(local) > 0.7 * len(octaves)  # mostly local steps
    assert any(o > 1.5 for o in local)  # local steps scale with the range, not a fixed factor of 2
    assert any(o > 4 for o in octaves)  # with occasional jumps


def test_size_pattern_mutation_can_scale_every_size_at_once(space) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    p = {**space.simplest(), "sizes": [1024, 65536, 4096]}
    scaled = set()
    for _ in range(400):
        q, _ = space.mutate(p, rng, "sizes")
        ratios = {b / a for a, b in zip(p["sizes"], q["sizes"], strict=True)} if len(q["sizes"]) == 3 else set()
        if len(ratios) == 1 and ratios != {1.0}:
            scaled |= ratios
    assert scaled & {2.0, 4.0, 8.0} and scaled & {0.5, 0.25, 0.125}


def test_same_seed_same_stream(space) -> None:  # type: ignore[no-untyped-def]
    a = [space.sample(np.random.default_rng(11)) for _ in range(3)]
    b = [space.sample(np.random.default_rng(11)) for _ in range(3)]
    assert a == b


def test_simplest_is_legal_and_builds_perftest_like_write(space) -> None:  # type: ignore[no-untyped-def]
    w = space.build(space.simplest())
    assert violations(w.flows) == []
    f = w.flows[0]
    assert (f.transport, f.opcode, f.qps, f.batch, f.sges, f.sizes) == ("RC", "WRITE", 1, 1, 1, (65536,))


def test_build_projects_inapplicable_parameters(space) -> None:  # type: ignore[no-untyped-def]
    p = {**space.simplest(), "op": "UD_SEND", "sizes": [8192, 256], "mtu": 2048, "batch": 64, "wq_depth": 16,
         "signal_every": 128, "sges": 16, "inline": 64}
    f = space.build(p).flows[0]
    # a SEND consumes receives: the receive queue keeps its own depth (the point's rq_depth)
    assert f.sizes == (2048, 256) and (f.batch, f.sq_depth) == (16, 16) and f.rq_depth == 128 and f.signal_every == 16
    assert f.sges == 16 and f.inline == 64 and violations(space.build(p).flows) == []
    read = space.build({**p, "op": "RC_READ", "sizes": [64], "sges": 16, "mr_size": 4096}).flows[0]
    assert read.inline == 0 and read.sges == 16 and read.sizes == (64,)
    big = space.build({**p, "op": "RC_WRITE", "sizes": [1 << 23], "sges": 2, "mr_size": 4096}).flows[0]
    assert big.mr_size == 1 << 23


def test_sampled_ops_are_uniform(space) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(9)
    ops = [space.sample(rng)["op"] for _ in range(1200)]
    share = 1 / len(space.dimension("op").values)
    for op in space.dimension("op").values:
        assert 0.5 * share < ops.count(op) / len(ops) < 1.6 * share


def test_directions_build_the_right_flows(space) -> None:  # type: ignore[no-untyped-def]
    def pairs(d: str) -> list[tuple[str, str]]:
        return [(f.client.host, f.server.host) for f in space.build({"direction": d}).flows]

    assert pairs("oneway") == [("a", "b")]
    assert pairs("bidirectional") == [("a", "b"), ("b", "a")]
    assert pairs("loopback") == [("a", "a")]
    assert pairs("incast") == [("a", "b"), ("b", "b")]


def test_one_direction_table_serves_build_point_of_and_calibration(space) -> None:  # type: ignore[no-untyped-def]
    from collie.calibrate import calibration_workloads
    from collie.model.space import DIRECTION_PAIRS, DIRECTIONS

    assert tuple(DIRECTION_PAIRS) == DIRECTIONS
    for direction, pairs in DIRECTION_PAIRS.items():
        w = space.build({"direction": direction})
        assert tuple((f.client.host, f.server.host) for f in w.flows) == pairs
        assert space.point_of(w)["direction"] == direction
    for kind, _, w in calibration_workloads():
        assert tuple((f.client.host, f.server.host) for f in w.flows) == DIRECTION_PAIRS[kind]


def test_validate_messages_are_actionable(space) -> None:  # type: ignore[no-untyped-def]
    p = space.simplest()
    with pytest.raises(ConstraintError) as err:
        space.validate({**p, "mrs": 200000, "mr_size": 1 << 20})
    assert err.value.constraint == "pinned_memory" and "at most 64 GiB" in str(err.value)
    with pytest.raises(ConstraintError) as err:
        space.validate({**p, "qps": 0})
    assert err.value.constraint == "qps" and "from 1 to 20000" in str(err.value)
    with pytest.raises(ConstraintError) as err:
        space.validate({**p, "colour": "red"})
    assert err.value.constraint == "unknown_parameter"


def _space_file(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(body)
    return p


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('[[dimension]]\nname = "qps"\nkind = "float"\n', "not a dimension kind"),
        ('[[dimension]]\nname = "speed"\nkind = "int"\nmin = 1\nmax = 2\n', "'speed' is not a parameter"),
        ('[[dimension]]\nname = "qps"\nkind = "int"\nmin = 10\nmax = 2\n', "must satisfy"),
        ('[[dimension]]\nname = "mtu"\nkind = "choice"\nvalues = [1500]\n', "1500 is not a legal mtu"),
        ('[[dimension]]\nname = "qps"\nkind = "int"\nmin = 1\nmax = 2\nstep = 1\n', "unknown field 'step'"),
        ('[[dimension]]\nname = "qps"\nkind = "int"\nmin = 1\nmax = 4\n[fixed]\nqps = 2\n', "also a searched"),
        ('[[dimension]]\nname = "mrs"\nkind = "int"\nmin = 100000\nmax = 200000\n[fixed]\nmr_size = 1073741824\n',
         "simplest point is illegal"),
        ('dimension = 3\n', "expected a list"),
        ('[[dimension]]\nname = "sizes"\nkind = "sizes"\nmin = 1\nmax = 65536\nboundaries = [0]\n',
         "boundaries: expected a non-empty list of integers >= 1"),
        ('[[dimension]]\nname = "mix"\nkind = "opcodes"\nvalues = ["FETCH"]\n', "'FETCH' is not an opcode"),
        ('[[dimension]]\nname = "qps"\nkind = "opcodes"\n', "only for the parameter 'mix'"),
        ('[[dimension]]\nname = "mtu"\nkind = "choice"\nvalues = [1024, 4096]\nweights = [1]\n',
         "weights: expected one number >= 0 per value (2)"),
    ],
)
def test_bad_space_files(tmp_path: Path, body: str, fragment: str) -> None:
    with pytest.raises(InputError) as err:
        load_space(_space_file(tmp_path, body))
    assert fragment in str(err.value)


def test_fixed_values_pin_parameters(tmp_path: Path) -> None:
    s = load_space(_space_file(tmp_path, '[[dimension]]\nname = "qps"\nkind = "int"\nmin = 1\nmax = 64\n'
                               '[fixed]\nop = "RC_READ"\nmtu = 1024\n'))
    w = s.build(s.sample(np.random.default_rng(0)))
    assert w.flows[0].opcode == "READ" and w.flows[0].mtu == 1024


def test_a_space_file_adds_size_boundaries_and_narrows_the_mix(tmp_path: Path) -> None:
    s = load_space(_space_file(tmp_path, '[[dimension]]\nname = "sizes"\nkind = "sizes"\nmin = 1\nmax = 65536\n'
                               'boundaries = [3000]\n[[dimension]]\nname = "mix"\nkind = "opcodes"\n'
                               'values = ["READ"]\nmax_len = 1\n'))
    sizes = s.dimension("sizes")
    assert isinstance(sizes, SizeVector) and sizes.boundaries == (3000,)
    rng = np.random.default_rng(0)
    points = [s.sample(rng) for _ in range(300)]
    assert {tuple(p["mix"]) for p in points} == {(), ("READ",)}
    assert any(abs(v - round(v / 3000) * 3000) <= 64 and v % 3000 for p in points for v in p["sizes"])


def test_weights_make_a_choice_likelier_to_be_sampled(tmp_path: Path) -> None:
    s = load_space(_space_file(tmp_path, '[[dimension]]\nname = "mr_churn"\nkind = "choice"\n'
                               'values = [0, 1000]\nweights = [9, 1]\n'))
    rng = np.random.default_rng(0)
    share = sum(s.sample(rng)["mr_churn"] == 0 for _ in range(2000)) / 2000
    assert 0.85 < share < 0.95
    assert s.mutate({"mr_churn": 0}, rng)[0] == {"mr_churn": 1000}  # a mutation still moves


def test_point_of_inverts_build(space) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(21)
    for _ in range(50):
        p = space.sample(rng)
        w = space.build(p)
        assert space.build(space.point_of(w)) == w


def test_point_of_rejects_workloads_outside_the_space(space) -> None:  # type: ignore[no-untyped-def]
    from collie.model.flow import Endpoint, Flow
    from collie.model.workload import Workload

    odd = Workload((Flow(Endpoint("a"), Endpoint("b"), qps=2), Flow(Endpoint("b"), Endpoint("a"), qps=3)))
    with pytest.raises(InputError, match="not a point of the search space"):
        space.point_of(odd)


def test_repair_crosses_a_constraint_that_couples_dimensions(space) -> None:  # type: ignore[no-untyped-def]
    # UD clamps its messages to the MTU and pins 200 000 MRs of 128 KiB; as RC the same sizes would need MRs of
    # 512 KiB, past the pinning limit, so no single-dimension move reaches RC from here
    p = {**space.simplest(), "op": "UD_SEND", "direction": "loopback", "mrs": 200000, "mr_size": 131072,
         "mtu": 512, "sizes": [131072, 512, 524288]}
    assert space.problems(p) == []
    rc = {**p, "op": "RC_WRITE"}
    assert [name for name, _ in space.problems(rc)] == ["pinned_memory"]
    rng = np.random.default_rng(0)
    repaired = [space.repair(rc, "op", rng) for _ in range(30)]
    assert all(r is not None and space.problems(r) == [] and r["op"] == "RC_WRITE" for r in repaired)
    for r in repaired:
        assert r is not None
        assert 1 <= sum(r[k] != rc[k] for k in rc) <= 2  # the kept move plus at most two repairs
    # one repair keeps the MRs and shrinks the messages to the smallest of the pattern
    assert any(r is not None and r["mrs"] == 200000 and r["sizes"] == [512] for r in repaired)


def test_mutate_with_repair_reaches_points_plain_mutation_cannot(space) -> None:  # type: ignore[no-untyped-def]
    p = {**space.simplest(), "op": "UD_SEND", "direction": "loopback", "mrs": 200000, "mr_size": 131072,
         "mtu": 512, "sizes": [131072, 512, 524288]}
    rng = np.random.default_rng(1)
    plain = {space.mutate(p, rng, "op")[0]["op"] for _ in range(100)}
    # every other op breaks the pinning limit (atomics carry 8 B, so their MRs stay small): the move falls back
    # to no change
    assert plain - {"UD_SEND"} == {"UD_SEND_IMM", "RC_ATOMIC_FA", "RC_ATOMIC_CS"}
    repaired = [space.mutate(p, rng, "op", repair=1.0)[0] for _ in range(100)]
    assert {q["op"] for q in repaired} > {"RC_WRITE"}
    assert all(space.problems(q) == [] for q in repaired)


def test_repair_gives_up_when_no_change_helps(tmp_path: Path) -> None:
    # MRs of 64 MiB are pinned, so only the MR count (the kept dimension) could bring a point under the limit
    small = load_space(_space_file(tmp_path, """
name = "mrs-only"
[[dimension]]
name = "mrs"
kind = "int"
min = 1
max = 200000
[[dimension]]
name = "mtu"
kind = "choice"
values = [1024, 4096]
simplest = 4096
[fixed]
mr_size = 67108864
"""))
    point = {"mrs": 4096, "mtu": 1024}
    assert {name for name, _ in small.problems(point)} == {"pinned_memory"}  # on both hosts
    assert small.repair(point, "mrs", np.random.default_rng(0)) is None


def test_repair_steps_around_a_region_the_caller_rules_out(space) -> None:  # type: ignore[no-untyped-def]
    # RC WRITE with many MRs is "already explained" (refused); the move to RC WRITE stays possible by also
    # cutting the MRs, which is how a search finds an anomaly next to a known one
    p = {**space.simplest(), "op": "UC_WRITE", "mrs": 200000, "mr_size": 16384, "qps": 5000}

    def refused(q) -> int:  # type: ignore[no-untyped-def]
        return int(q["op"] == "RC_WRITE" and q["mrs"] >= 12000)

    rng = np.random.default_rng(2)
    moves = [space.mutate(p, rng, "op", repair=1.0, refused=refused)[0] for _ in range(200)]
    assert all(not refused(q) and space.problems(q) == [] for q in moves)
    rc = [q for q in moves if q["op"] == "RC_WRITE"]
    assert rc and all(q["mrs"] < 12000 for q in rc)
    plain = [space.mutate(p, rng, "op", refused=refused)[0] for _ in range(200)]
    assert all(q["op"] != "RC_WRITE" for q in plain)


def test_repair_steps_out_of_two_overlapping_regions_one_at_a_time(space) -> None:  # type: ignore[no-untyped-def]
    # going bidirectional from here enters two known regions at once (bidirectional with remote memory, and
    # bidirectional with many SGEs and a size mix): no single repair leaves both, two in turn do
    p = {**space.simplest(), "op": "RC_READ", "direction": "incast", "memory": "remote", "sges": 8,
         "sizes": [256, 65536]}

    def refused(q) -> int:  # type: ignore[no-untyped-def]
        bi = q["direction"] == "bidirectional"
        return int(bi and q["memory"] == "remote") + int(bi and q["sges"] >= 3 and len(set(q["sizes"])) > 1)

    rng = np.random.default_rng(3)
    moves = [space.mutate(p, rng, "direction", repair=1.0, refused=refused)[0] for _ in range(100)]
    assert all(not refused(q) and space.problems(q) == [] for q in moves)
    bi = [q for q in moves if q["direction"] == "bidirectional"]
    assert bi and all(q["memory"] != "remote" for q in bi)


def test_the_legal_point_is_the_point_that_runs_on_the_points_own_keys(space) -> None:  # type: ignore[no-untyped-def]
    asked = {**space.simplest(), "op": "RC_READ", "inline": 256, "sizes": [65536], "sges": 1, "mr_size": 4096}
    legal = space.legal_point(asked, space.build(asked))
    assert legal == {**asked, "inline": 0, "mr_size": 65536}
    assert space.build(legal) == space.build(asked)
    read = {"op": "RC_READ", "inline": 64}
    assert space.legal_point(read, space.build(read)) == {"op": "RC_READ", "inline": 0}


def test_a_victim_runs_beside_the_first_flow_and_point_of_finds_it(space) -> None:  # type: ignore[no-untyped-def]
    assert set(space.victims) == {"latency", "bandwidth"} and space.dimension("victim").simplest() == "none"
    w = space.build({"op": "RC_READ", "direction": "bidirectional", "qps": 8, "victim": "latency"})
    *aggressors, victim = w.flows
    assert len(aggressors) == 2 and all(not f.victim for f in aggressors)
    assert (victim.client.host, victim.server.host) == ("a", "b") and victim.victim == "latency"
    assert victim.opcodes == ("SEND",) and victim.sizes == (64,) and victim.sq_depth == 1 and victim.qps == 1
    assert space.point_of(w)["victim"] == "latency" and space.build(space.point_of(w)) == w
    assert not space.build({"victim": "none"}).isolation
    loop = space.build({"direction": "loopback", "victim": "bandwidth"}).flows[-1]
    assert loop.loopback and loop.victim == "bandwidth"


def test_most_points_have_no_victim_and_the_constraints_are_shown(space) -> None:  # type: ignore[no-untyped-def]
    from collie.model.space import constraint_rows

    rng = np.random.default_rng(5)
    victims = [space.sample(rng)["victim"] for _ in range(1000)]
    assert 0.7 < victims.count("none") / 1000 < 0.9 and {"latency", "bandwidth"} <= set(victims)
    names = {r["constraint"] for r in constraint_rows()}
    assert {"victim_needs_aggressor", "victim_shares_hosts"} <= names
    (row,) = [r for r in space.rows() if r["parameter"] == "victim"]
    assert row["meaning"].endswith("latency: RC SEND of 64 B, 1 QP, depth 1; bandwidth: RC WRITE of 64 KiB, 1 QP, "
                                   "depth 128")


def test_point_of_rejects_a_victim_the_space_does_not_declare(space) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    w = space.build({"victim": "latency"})
    odd = w.with_flows((w.flows[0], replace(w.flows[1], qps=2)))
    with pytest.raises(InputError, match="one of the space's \\[victims\\]"):
        space.point_of(odd)


@pytest.mark.parametrize(("body", "fragment"), [
    ('[[dimension]]\nname = "victim"\nkind = "choice"\nvalues = ["none", "noisy"]\n',
     "victim 'noisy' is not declared; declare a [victims.noisy] table"),
    ('[[dimension]]\nname = "qps"\nkind = "int"\nmin = 1\nmax = 2\n[victims.x]\nclient = "a"\n',
     "victims.x.client: a victim's hosts and name come from the point"),
    ('[[dimension]]\nname = "qps"\nkind = "int"\nmin = 1\nmax = 2\n[victims.x]\ntransport = "UD"\nopcode = "READ"\n',
     "victims.x: UD does not support READ"),
    ('[[dimension]]\nname = "qps"\nkind = "int"\nmin = 1\nmax = 2\n[victims.none]\nqps = 1\n',
     "not a victim's name"),
])
def test_bad_victim_tables(tmp_path: Path, body: str, fragment: str) -> None:
    with pytest.raises(InputError) as err:
        load_space(_space_file(tmp_path, body))
    assert fragment in str(err.value)


def test_post_list_is_cut_to_the_send_queue(space) -> None:  # type: ignore[no-untyped-def]
    # only wq_depth drives the send queue's depth: shrinking the post list never shrinks the queue, so a
    # minimizer cannot read an anomaly of deep queues as one of long post lists
    p = {**space.simplest(), "op": "UD_SEND", "sizes": [256], "batch": 74, "wq_depth": 16}
    f = space.build(p).flows[0]
    assert (f.batch, f.sq_depth) == (16, 16)
    assert space.build({**p, "batch": 1}).flows[0].sq_depth == space.build({**p, "batch": 128}).flows[0].sq_depth
    assert space.point_of(space.build(p))["batch"] == 16
