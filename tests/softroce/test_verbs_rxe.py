"""The verbs target end to end on a real rxe device (inside the soft-RoCE guest).

Every run verifies its data (pattern written by the sender, checked byte for byte at the receiver), and must
finish without errors; its counters are the rxe hw_counters deltas over the measured interval.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from collie.calibrate import calibrate_target, catalog_of
from collie.experiment import run_and_judge
from collie.model.flow import Endpoint, Flow
from collie.model.space import load_space
from collie.model.workload import Workload
from collie.oracle import DIRECTION_KINDS, Ceilings, Oracle, Thresholds
from collie.targets.base import Unsupported
from tests.softroce.conftest import rdma_resources

ROOT = Path(__file__).resolve().parents[2]
COLLECTIVE = load_space(ROOT / "workloads" / "collective.toml")
A, B = Endpoint("a"), Endpoint("b")
DURATION = 0.5


def one(**kw: Any) -> Workload:
    return Workload(flows=(Flow(A, B, **kw),))


MATRIX = {
    "rc-write-64k": one(sizes=(65536,)),
    "rc-write-64b-post-list": one(sizes=(64,), batch=32, sq_depth=128, signal_every=32),
    "rc-read-sges": one(opcodes=("READ",), sizes=(4096,), sges=4, qps=2),
    "rc-send-size-mix": one(opcodes=("SEND",), sizes=(512, 4096, 9000), batch=4, signal_every=4, qps=2),
    "rc-send-imm": one(opcodes=("SEND_IMM",), sizes=(1024,), rq_depth=64),
    "rc-write-imm-odd-signalling": one(opcodes=("WRITE_IMM",), sizes=(2048,), batch=3, signal_every=2, sq_depth=3),
    "uc-write": one(transport="UC", sizes=(8192,), qps=2),
    "ud-send": one(transport="UD", opcodes=("SEND",), sizes=(1024,), mtu=1024, qps=2, batch=8, signal_every=8),
    "rc-atomic-fa": one(opcodes=("ATOMIC_FA",), sizes=(8,), batch=4, signal_every=4),
    "rc-atomic-cs": one(opcodes=("ATOMIC_CS",), sizes=(8,)),
    "rc-many-qps": one(sizes=(4096,), qps=32, mrs=8, mr_size=4096, sq_depth=16, batch=4, signal_every=4),
    "rc-inline": one(sizes=(64,), inline=64, batch=8, signal_every=8),
    "bidirectional": Workload(flows=(Flow(A, B, sizes=(16384,), qps=2), Flow(B, A, sizes=(16384,), qps=2))),
    "loopback": Workload(flows=(Flow(A, A, opcodes=("SEND",), sizes=(4096,)),)),
    "two-processes": one(sizes=(64,), qps=4, batch=16, signal_every=16, processes=2),
    # issue #31: each request its own opcode, within one post list too; every opcode's data verified
    "rc-read-write-mix": one(opcodes=("READ", "WRITE"), sizes=(4096, 65536), batch=4, signal_every=4, qps=2),
    "rc-both-atomics": one(opcodes=("ATOMIC_FA", "ATOMIC_CS"), sizes=(8,), batch=4, signal_every=4),
    "rc-atomics-2-qps": one(opcodes=("ATOMIC_FA", "ATOMIC_CS", "ATOMIC_FA"), sizes=(8,), batch=3, signal_every=3,
                            qps=2),
    "rc-write-imm-read-fa-mix": one(opcodes=("WRITE_IMM", "READ", "ATOMIC_FA", "SEND"), sizes=(129, 4097),
                                    batch=4, signal_every=4, mr_size=8192),
    "rc-off-power-of-two-sizes": one(sizes=(1, 129, 4097), sges=1, batch=3, signal_every=3, mr_size=4097),
    "rc-read-off-sizes": one(opcodes=("READ",), sizes=(1, 129, 4097), mr_size=4097),
    "rc-send-recv-batch-sges": one(opcodes=("SEND",), sizes=(129, 4097), rq_depth=12, sq_depth=64, recv_batch=3,
                                   recv_sges=4, batch=2, signal_every=2),
    "uc-write-send-imm-mix": one(transport="UC", opcodes=("WRITE", "SEND_IMM"), sizes=(257,), batch=2,
                                 signal_every=2),
    "ud-send-off-size": one(transport="UD", opcodes=("SEND", "SEND_IMM"), sizes=(1, 1023), mtu=1024, batch=2,
                            signal_every=2),
    # issue #35: patterns of the search space over host roles, every connection looping through the one device
    "ring-over-host-roles": COLLECTIVE.build({"pattern": "ring_allreduce", "hosts": 3, "op": "RC_SEND",
                                              "sizes": [4096], "pattern_size": 1 << 20, "mtu": 1024,
                                              "mr_size": 65536}),
    "all-to-all-write-imm": COLLECTIVE.build({"pattern": "all_to_all", "hosts": 3, "ranks_per_host": 2,
                                              "op": "RC_WRITE_IMM", "sizes": [8192], "pattern_size": 1 << 20,
                                              "mtu": 1024, "mr_size": 65536}),
}


@pytest.mark.parametrize("name", list(MATRIX))
def test_matrix_runs_clean_with_verified_data(target: Any, name: str) -> None:
    w = MATRIX[name]
    r = target.run(w, DURATION)
    assert r.errors == (), r.errors
    details = target.last_details
    assert all(s.verified for s in details.summaries), details.summaries
    assert len(r.flows) == len(w.flows)
    for f in r.flows:
        assert f.msg_rate > 0 and f.bps > 0 and f.pps > 0
        assert 0 < f.lat_p50_us <= f.lat_p99_us <= f.lat_p999_us
    assert r.setup_s > 0
    assert details.workers == max(fl.processes for fl in w.flows)
    # rxe's hw_counters saw the traffic of the measured interval
    counters = r.hosts[0].counters
    assert counters["sent_pkts"] > 0 and counters["rcvd_pkts"] > 0
    assert "lifespan" not in counters


def test_counter_deltas_match_the_traffic(target: Any) -> None:
    r = target.run(one(sizes=(65536,), mtu=4096), 1.0)
    packets = r.flows[0].pps * r.duration_s
    sent = r.hosts[0].counters["sent_pkts"]
    # the same interval, read by the engine at its edges: data packets plus ACKs, within a factor of 2
    assert 0.5 * packets <= sent <= 4 * packets + 100, (sent, packets)
    # both hosts are the one device: their counters are the same readings
    assert r.hosts[0].counters == r.hosts[1].counters


def test_counters_come_from_every_source_each_with_its_source(target: Any) -> None:
    r = target.run(one(sizes=(65536,), mtu=4096), DURATION)
    host = r.hosts[0]
    assert set(host.sources) == set(host.counters)
    by_source: dict[str, set[str]] = {}
    for name, source in host.sources.items():
        by_source.setdefault(source, set()).add(name)
    assert "sent_pkts" in by_source["hw"]  # sysfs hw_counters
    assert "rdma-stat:sent_pkts" in by_source["rdma-stat"]  # the same counter read over netlink
    # both readings are deltas; under emulation the rdma process runs late (its window lags the interval), so
    # the two are not compared here
    assert host.counters["sent_pkts"] > 0 and host.counters["rdma-stat:sent_pkts"] >= 0
    # rxe0 sits on a dummy netdev, whose driver has no ethtool statistics: said, never counted as 0
    assert "ethtool" in by_source or "ethtool" in host.unreadable, host.unreadable
    journaled = json.loads(json.dumps(r.to_dict()))["hosts"][0]
    assert journaled["sources"]["sent_pkts"] == "hw"
    # the verdict's evidence names the counters it rests on with their sources, and says what it cannot see
    info = target.describe()
    ceilings = Ceilings(dict.fromkeys(DIRECTION_KINDS, 1e9), dict.fromkeys(DIRECTION_KINDS, 1e6))
    verdict = Oracle(catalog_of(info), ceilings).judge(r, one(sizes=(65536,), mtu=4096))
    counters = verdict.evidence["hosts"]["b"]["counters"]
    assert counters["rcvd_pkts"]["source"] == "hw" and counters["rcvd_pkts"]["delta"] > 0
    assert any("rxe driver has no pause counters" in n for n in verdict.evidence["notes"])


def test_rates_scale_with_message_size(target: Any) -> None:
    small = target.run(one(sizes=(64,), batch=16, signal_every=16), DURATION).flows[0]
    large = target.run(one(sizes=(65536,)), DURATION).flows[0]
    assert small.msg_rate > large.msg_rate
    assert large.bps > small.bps


def test_device_limits_raise_unsupported(target: Any) -> None:
    with pytest.raises(Unsupported, match="sges 33 > device max_sge 32"):
        target.check(one(sizes=(4096,), sges=33))
    with pytest.raises(Unsupported, match=r"qps 600000 x 2 sides = 1200000 > device max_qp"):
        target.run(one(qps=600_000), DURATION)


def test_a_slow_receiver_draws_rnr_naks_and_still_completes(target: Any) -> None:
    """A receiver that reposts one post list of 2 receives every 20 ms starves its sender: rxe answers with RNR
    NAKs (its send_rnr_err, the responder's, and rcvd_rnr_err, the requester's; one device holds both ends), the
    sender retries, and the run completes clean and verified."""
    fast = one(opcodes=("SEND",), sizes=(64,), batch=4, signal_every=4, sq_depth=16, rq_depth=4, recv_batch=2)
    slow = Workload(flows=(replace(fast.flows[0], recv_delay_us=20_000),))
    r = target.run(slow, 1.0)
    assert r.errors == (), r.errors
    assert all(s.verified for s in target.last_details.summaries)
    counters = r.hosts[0].counters
    print(f"\nslow receiver: send_rnr_err {counters.get('send_rnr_err')} rcvd_rnr_err "
          f"{counters.get('rcvd_rnr_err')} msg/s {r.flows[0].msg_rate:.0f}")
    assert counters["send_rnr_err"] > 0 and counters["rcvd_rnr_err"] > 0, counters
    # the oracle, against a clean baseline of zero receiver starvation, names the starved receiver
    ceilings = Ceilings(dict.fromkeys(DIRECTION_KINDS, 1e9), dict.fromkeys(DIRECTION_KINDS, 1e6))
    verdict = Oracle(catalog_of(target.describe()), ceilings).judge(r, slow)
    rnr = [s for s in verdict.symptoms if s.kind == "rnr"]
    print(f"verdict {verdict.signature}: " + ", ".join(f"{s.counter} {s.value:.1f}/s > {s.threshold:.1f}/s"
                                                       for s in rnr))
    assert rnr and all(s.host == "b" and s.end == "receiver" for s in rnr), verdict.symptoms
    # paced: about one post list of 2 per 20 ms, 100 receives a second, well under the unpaced rate
    assert r.flows[0].msg_rate < 0.5 * target.run(fast, 1.0).flows[0].msg_rate


def test_churn_beside_the_data_path_is_measured(device: str, target: Any) -> None:
    """The example workload (8 QPs of 64 KiB WRITEs; each side churns 1,000 MRs and 100 QPs a second): a churn
    worker per side registers/deregisters and creates/destroys on rxe at what it manages, the data is verified,
    and every churned object is gone afterwards."""
    w = Workload.load(ROOT / "workloads/examples/rc-write-mr-churn.toml")
    base = rdma_resources(device)
    plain = target.run(Workload(flows=(replace(w.flows[0], mr_churn=0, qp_churn=0),)), 1.0).flows[0]
    r = target.run(w, 1.0)
    assert r.errors == (), r.errors
    details = target.last_details
    assert all(s.verified for s in details.summaries)
    (f,) = r.flows
    print(f"\nchurn: data {f.msg_rate:.0f} msg/s (without churn {plain.msg_rate:.0f}), "
          f"MR {f.mr_churn_per_s:.0f}/s mean {f.mr_churn_us:.0f} us p99 {f.mr_churn_p99_us:.0f} us, "
          f"QP {f.qp_churn_per_s:.0f}/s mean {f.qp_churn_us:.0f} us p99 {f.qp_churn_p99_us:.0f} us")
    for c in details.churn:
        print(c.line())
    assert f.mr_churn_us > 0 and f.qp_churn_us > 0 and f.msg_rate > 0
    assert f.mr_churn_per_s == sum(c.mr.rate for c in details.churn) / 2
    assert f.qp_churn_p99_us == max(c.qp.p99_us for c in details.churn) >= f.qp_churn_us
    assert [c.side for c in details.churn] == ["client", "server"]
    for c in details.churn:
        assert c.errors == () and c.mr.ops > 0 and c.qp.ops > 0
        assert 0 < c.mr.rate <= 1.05 * 1000 and 0 < c.qp.rate <= 1.05 * 100
        assert c.mr.p99_us >= c.mr.mean_us > 0 and c.qp.p99_us >= c.qp.mean_us > 0
    after = rdma_resources(device)
    assert {k: after.get(k) for k in ("qp", "cq", "mr", "pd")} == {k: base.get(k) for k in ("qp", "cq", "mr", "pd")}


def test_an_aggressor_and_its_victim_run_together_and_the_victim_gets_an_isolation_figure(target: Any) -> None:
    """workloads/examples/aggressor-victim.toml's victim (64 B SENDs, one outstanding) beside 4 QPs of 64 KiB
    WRITEs (rxe under emulation cannot take the example's 16 MiB MRs churned 10,000 times a second): both flows
    run at once on the real device, verified; the victim is run alone first (its solo baseline), and the oracle
    reports its slowdown against it, anomalous on rxe or not."""
    example = Workload.load(ROOT / "workloads/examples/aggressor-victim.toml")
    victim = example.flows[1]
    w = Workload(flows=(Flow(A, B, sizes=(65536,), qps=4, sq_depth=16), victim))
    calibration = calibrate_target(target, Thresholds(), ("oneway",), seconds=DURATION)
    e = run_and_judge(target, w, 1.0, calibration.oracle)
    assert e.result is not None and e.verdict is not None, e.reason
    assert e.result.errors == (), e.result.errors
    assert all(s.verified for s in target.last_details.summaries)
    aggressor, victim_run = e.result.flows
    solo = calibration.oracle.solos[w.solo().key()].flows[0]
    assert aggressor.msg_rate > 0 and victim_run.msg_rate > 0 and victim_run.lat_p99_us >= victim_run.lat_p50_us > 0
    reading = e.verdict.evidence["isolation"]["latency"]
    print(f"\nvictim alone {solo.msg_rate:.0f} msg/s p99 {solo.lat_p99_us:.0f} us; beside the aggressor "
          f"{victim_run.msg_rate:.0f} msg/s p99 {victim_run.lat_p99_us:.0f} us (aggressor {aggressor.bps / 1e6:.1f} "
          f"Mb/s); isolation: slowdown {reading['slowdown_bps']:.2f}x of its fair share, p99 "
          f"{reading['slowdown_p99']:.2f}x; verdict {e.verdict.signature or 'clean'}")
    assert reading["slowdown_bps"] > 0 and reading["slowdown_p99"] > 0 and reading["tenants"] == 2


def test_inline_is_probed_and_a_flow_asking_more_is_refused(target: Any) -> None:
    probed = int(target.describe().details["max_inline_data"])
    print(f"\nprobed max_inline_data {probed}")
    assert probed > 0
    r = target.run(one(sizes=(min(probed, 64),), inline=probed, batch=8, signal_every=8), DURATION)
    assert r.errors == () and all(s.verified for s in target.last_details.summaries)
    if probed < 1024:  # the most a workload may ask
        with pytest.raises(Unsupported, match=f"inline {probed + 1} > device max_inline_data {probed}"):
            target.check(one(sizes=(64,), inline=probed + 1))


def test_describe_fingerprints_rxe(target: Any, device: str) -> None:
    info = target.describe()
    assert info.kind == "verbs" and info.driver == "rxe" and info.counter_dialect == "rxe"
    assert info.details["device"] == device
    assert int(info.details["max_qp"]) > 1000


def test_teardown_leaves_no_verbs_objects(device: str, target: Any) -> None:
    base = rdma_resources(device)
    target.run(one(sizes=(4096,), qps=8, mrs=4, mr_size=4096), 0.3)
    target.run(one(sizes=(4096,), qps=4, processes=2), 0.3)
    after = rdma_resources(device)
    assert {k: after.get(k) for k in ("qp", "cq", "mr", "pd")} == {k: base.get(k) for k in ("qp", "cq", "mr", "pd")}


@pytest.mark.parametrize("processes", [1, 2])
def test_ctrl_c_mid_run_tears_down(device: str, target: Any, processes: int) -> None:
    base = rdma_resources(device)

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            target.run(one(sizes=(4096,), qps=4, processes=processes), 30.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    after = rdma_resources(device)
    assert {k: after.get(k) for k in ("qp", "cq", "mr", "pd")} == {k: base.get(k) for k in ("qp", "cq", "mr", "pd")}
    # and the device still works
    assert target.run(one(sizes=(4096,)), 0.3).errors == ()


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "collie", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def test_cli_run_on_rxe(device: str) -> None:
    p = _cli("run", "--target", f"verbs:{device}", "--workload", "workloads/examples/rc-write-64k.toml",
             "--duration", "0.5", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert "flow" in p.stdout and "bps" in p.stdout.lower()


def test_cli_unknown_device_is_one_sentence() -> None:
    p = _cli("run", "--target", "verbs:nosuchdev0", "--workload", "workloads/examples/rc-write-64k.toml",
             "--duration", "0.5")
    assert p.returncode == 2
    assert "RDMA device 'nosuchdev0' not found; devices here:" in p.stderr
    assert "Traceback" not in p.stderr


def test_short_campaign_completes(device: str, tmp_path: Path) -> None:
    preset = tmp_path / "tiny.toml"
    preset.write_text('name = "tiny"\ndescription = "softroce smoke"\nstrategy = "random"\nbudget = 3\n'
                      'duration = 0.3\n[minimize]\nenabled = false\n')
    out = tmp_path / "campaign"
    # the space docs/ci.md recommends for soft-RoCE (the paper's reaches workloads an emulated rxe runs for minutes)
    p = _cli("campaign", "--target", f"verbs:{device}", "--preset", str(preset), "--budget", "3",
             "--space", "workloads/softroce.toml", "--out", str(out), "--no-live", "--format", "json", timeout=600)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    trials = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines() if line.strip()]
    assert len(trials) >= 3
