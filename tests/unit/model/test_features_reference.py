"""``features()`` against a plain reference implementation (the one-pass code must give the very same values)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from collie.model.features import CACHE_LINE, LARGE_MSG, SMALL_MSG, Features, _flows, _one_flow, features
from collie.model.flow import RECV_CONSUMING, Endpoint, Flow, hosts_of, split_address
from collie.model.space import load_space
from collie.model.workload import Workload

ROOT = Path(__file__).resolve().parents[3]


def _common(values: list[str]) -> str:
    return values[0] if len(set(values)) == 1 else "MIXED"


def _recv_gap_ns(f: Flow) -> int:
    consuming = sum(o in RECV_CONSUMING for o in f.opcodes)
    if not consuming or f.recv_delay_us <= 0:
        return 0
    return max(1, round(f.recv_delay_us * 1000 * consuming / len(f.opcodes) / (f.qps * f.recv_batch)))


def reference(workload: Workload) -> Features:
    """The features as the module docstring words them, one ``max``/``min``/``any`` per feature."""
    flows = tuple(f for f in workload.flows if not f.victim) or workload.flows
    qps_host: dict[str, int] = defaultdict(int)
    mrs_host: dict[str, int] = defaultdict(int)
    bytes_host: dict[str, int] = defaultdict(int)
    remote_pairs: set[tuple[str, str]] = set()
    loop_rx: set[str] = set()
    remote_rx: set[str] = set()
    all_sizes: list[int] = []
    for f in flows:
        for host in (f.client.host, f.server.host):
            qps_host[host] += f.qps
            mrs_host[host] += f.mrs
            bytes_host[host] += f.mrs * f.mr_size
        all_sizes.extend(f.sizes)
        if f.loopback:
            loop_rx.add(f.payload_receiver.host)
        else:
            remote_pairs.add((f.client.host, f.server.host))
            remote_rx.add(f.payload_receiver.host)
    max_msg, min_msg = max(all_sizes), min(all_sizes)
    tails = [s - (s - 1) // f.mtu * f.mtu for f in flows if f.transport != "UD" for s in f.sizes if s > f.mtu]
    return Features(
        transport=_common([f.transport for f in flows]), opcode=_common([f.opcode for f in flows]),
        flows=len(flows), hosts=len({split_address(h)[0] for h in hosts_of(flows)}),
        qps_total=sum(f.qps for f in flows),
        qps_flow=max(f.qps for f in flows), qps_host=max(qps_host.values()), batch=max(f.batch for f in flows),
        sges=max(f.sges for f in flows), sge_bytes=max(-(-f.max_size // f.sges) for f in flows),
        wq_depth=max(f.sq_depth for f in flows), rq_depth=max(f.rq_depth for f in flows),
        mtu=min(f.mtu for f in flows), max_msg=max_msg, min_msg=min_msg, sizes=max(len(f.sizes) for f in flows),
        size_mix=min_msg <= SMALL_MSG and max_msg >= LARGE_MSG,
        bidirectional=any((b, a) in remote_pairs for a, b in remote_pairs), loopback=bool(loop_rx),
        incast=bool(loop_rx & remote_rx),
        remote_numa=any(e.memory == "remote" for f in flows for e in (f.client, f.server)),
        gpu=any(e.memory == "gpu" for f in flows for e in (f.client, f.server)),
        mrs_host=max(mrs_host.values()), mr_size=max(f.mr_size for f in flows),
        mr_footprint=max(bytes_host.values()), processes=max(f.processes for f in flows),
        inline=max(f.inline for f in flows), signal_every=max(f.signal_every for f in flows),
        burst=any(f.burst for f in flows),
        read_write_mix=any("READ" in f.opcodes and {"WRITE", "WRITE_IMM"}.intersection(f.opcodes) for f in flows),
        atomics=any(f.atomic for f in flows),
        line_tail=min((s % CACHE_LINE for s in all_sizes if s % CACHE_LINE), default=0),
        tail_packet=min(tails, default=0), recv_batch=max(f.recv_batch for f in flows),
        recv_sges=max(f.recv_sges for f in flows), recv_delay_us=max(f.recv_delay_us for f in flows),
        mr_churn=max(f.mr_churn for f in flows), qp_churn=max(f.qp_churn for f in flows),
        victim="+".join(sorted({f.victim for f in workload.flows if f.victim})) or "none",
        recv_gap_ns=max(_recv_gap_ns(f) for f in flows),
        pattern=workload.pattern.kind.value if workload.pattern else "none",
        ranks_per_host=workload.pattern.ranks_per_host if workload.pattern else 1,
        nics=max(Counter(split_address(h)[0] for h in hosts_of(flows)).values()),
        tclass=_common(["default" if f.tclass is None else str(f.tclass) for f in flows]),
    )


def _same(w: Workload) -> None:
    got, want = features(w), reference(w)
    assert got == want, w
    assert [type(v) for v in vars(got).values()] == [type(v) for v in vars(want).values()], w


@pytest.mark.parametrize("space_file", [None, *(ROOT / "workloads" / f"{n}.toml" for n in ("paper", "collective"))])
def test_sampled_workloads_have_the_reference_features(space_file: Path | None) -> None:
    space = load_space(space_file)
    rng = np.random.default_rng(7)
    done = 0
    while done < 1500:
        point = space.sample(rng)
        if space.is_valid(point):
            _same(space.build(point))
            done += 1


def test_example_workloads_have_the_reference_features() -> None:
    for path in sorted((ROOT / "workloads" / "examples").glob("*.toml")):
        _same(Workload.load(path))


def test_edge_workloads_have_the_reference_features() -> None:
    a, b = Endpoint("a"), Endpoint("b", "remote")
    for w in (
        Workload((Flow(a, b, victim="lat"), Flow(b, a, victim="bulk"))),  # all victims
        Workload((Flow(a, b, transport="UD", opcodes=("SEND",), sizes=(1, 4097)),
                  Flow(a, b, mtu=1024, sizes=(1025, 2049, 64, 3)))),
        Workload((Flow(a, a, opcodes=("READ", "WRITE"), sizes=(4096, 4097)),
                  Flow(b, a, opcodes=("ATOMIC_FA",), recv_delay_us=5),
                  Flow(a, b, opcodes=("SEND", "WRITE"), recv_delay_us=7, recv_batch=3, qps=5))),
        Workload((Flow(a, b, opcodes=("READ",)), Flow(b, a, opcodes=("READ",)), Flow(a, a, victim="v"))),
        Workload((Flow(a, b, victim="lat"),)),  # one flow, a victim
        Workload((Flow(a, a, opcodes=("READ",), sizes=(70000, 3), mrs=3, recv_delay_us=2),)),
        Workload((Flow(b, b, opcodes=("SEND",), victim="lat"), Flow(a, b, transport="UD", opcodes=("SEND",)))),
        Workload((Flow(a, b, tclass=0), Flow(b, a, tclass=0), Flow(a, a, victim="v", tclass=106))),
        Workload((Flow(a, b, tclass=0), Flow(b, a))),  # one sets one, the other its host's: MIXED
    ):
        _same(w)


def test_one_flow_is_the_general_rules_over_one_flow() -> None:
    """The one-flow fast path (``_one_flow``) agrees with the general one (``_flows``) given that flow alone."""
    space = load_space(None)
    rng = np.random.default_rng(11)
    done = 0
    while done < 1000:
        point = space.sample(rng)
        if space.is_valid(point):
            every = space.build(point).flows
            for f in every:
                fast, general = _one_flow(f, every), _flows([f], every)
                assert fast == general, f
                assert [type(v) for v in vars(fast).values()] == [type(v) for v in vars(general).values()], f
            done += 1


def test_a_workloads_features_are_computed_once() -> None:
    w = Workload((Flow(Endpoint("a"), Endpoint("b")),))
    assert features(w) is features(w)
    assert features(w.with_flows((Flow(Endpoint("a"), Endpoint("b"), qps=2),))).qps_total == 2
