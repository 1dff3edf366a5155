"""What a report says of one anomaly: the MFS in words, the symptom and its magnitude, the counters that moved."""

from __future__ import annotations

from pathlib import Path

from collie.mfs import MFS, Condition
from collie.model.flow import Endpoint, Flow
from collie.oracle import Symptom
from collie.report.facts import (
    collective_words,
    flow_words,
    headline,
    mfs_words,
    moved_counters,
    point_words,
    replay_command,
    symptom_size,
    symptom_text,
    trial_of,
)
from collie.report.machines import Machine, Machines
from collie.report.perftest import Device
from collie.storage.records import Phase, TrialRecord, TrialState


def test_an_mfs_reads_as_a_sentence() -> None:
    mfs = MFS("pause@receiver", (Condition("transport", "==", "UD"), Condition("batch", ">=", 64),
                                 Condition("mtu", "<=", 1024), Condition("loopback", "==", False),
                                 Condition("opcode", "in", ("SEND", "WRITE"))))
    assert mfs_words(mfs) == ("needs transport UD, work requests per post (batch) at least 64, path MTU at most "
                              "1 KiB, without a flow from a host to itself and opcode one of SEND, WRITE")
    assert mfs_words(None).startswith("not minimized")
    assert mfs_words(MFS("pause@receiver", ())).startswith("shows in every workload")


def test_the_symptom_says_its_magnitude_against_the_threshold() -> None:
    pause = Symptom("pause", "b", "receiver", 0.1962, 0.001, "tx_prio3_pause_duration")
    assert symptom_text(pause) == ("PFC pause on host b (receiver): paused 19.62% of the time, 196x the 0.10% "
                                   "threshold (counter tx_prio3_pause_duration)")
    low = Symptom("low_throughput", "a", "receiver", 0.31, 0.8)
    assert symptom_text(low) == "low throughput on host a (receiver): 31% of the calibrated ceiling, below the " \
                                "80% threshold"
    loss = Symptom("retransmission", "a", "sender", 5000.0, 10.0, "roce_adp_retrans")
    assert "5,000 events/s of roce_adp_retrans, 500.0x the limit of 10/s" in symptom_text(loss)
    assert "upper bound" in symptom_text(Symptom("pause", "b", "receiver", 0.01, 0.001, "x", estimate=True))


def test_moved_counters_are_per_host_largest_first_and_skip_zero_and_missing() -> None:
    hosts = {"b": {"end": "receiver", "counters": {"x": {"delta": 5.0, "source": "hw"},
                                                   "y": {"delta": 0.0, "source": "hw"},
                                                   "z": {"delta": None, "source": "hw"},
                                                   "w": {"delta": -50.0, "source": "ethtool"}}},
             "a": {"end": "sender", "counters": {"x": {"delta": 1.0, "source": "hw"}}}}
    moved = moved_counters(hosts)
    assert [(m.host, m.name, m.delta) for m in moved] == [("a", "x", 1.0), ("b", "w", -50.0), ("b", "x", 5.0)]


def test_the_replay_command_is_quoted_for_a_shell() -> None:
    assert replay_command(Path("/r/my campaign/anomalies/A001-pause"), "verbs:rxe0") == \
        "collie replay '/r/my campaign/anomalies/A001-pause' --target verbs:rxe0"


def test_a_flow_in_words() -> None:
    f = Flow(client=Endpoint("a", "gpu"), server=Endpoint("a"), transport="RC", opcodes=("SEND",), sizes=(4096,),
             qps=2, sges=2)
    assert flow_words(f) == ("a -> a (loopback): RC SEND of 4 KiB, 2 QPs, batch 1, SQ depth 128, RQ depth 128, "
                             "MTU 4096, 2 SGEs, client memory gpu")


def test_a_remote_symptom_names_the_inventory_host_and_its_port() -> None:
    machines = Machines(remote=True, roles={"b": Machine("b", "node-b", device=Device("mlx5_0", 1, 3, "10.0.0.2"))})
    pause = Symptom("pause", "b", "receiver", 0.1962, 0.001, "tx_prio3_pause_duration")
    assert headline(pause, machines) == "PFC pause on node-b (mlx5_0:1, receiver)"
    assert symptom_text(pause, machines).startswith("PFC pause on node-b (mlx5_0:1, receiver): paused 19.62% of")
    assert symptom_size(pause) == "paused 19.62% of the time"
    assert symptom_size(Symptom("loss", "a", "receiver", 5000.0, 10.0, "out_of_sequence")) == \
        "5,000 events/s of out_of_sequence"


def test_the_trial_of_a_find_counts_budgeted_experiments_in_journal_order() -> None:
    def t(n: int, phase: Phase, state: TrialState = TrialState.COMPLETE) -> TrialRecord:
        return TrialRecord(n, phase, "k", {}, state, 0.0, reason="x" if state is TrialState.PRUNED else "")

    trials = (t(1, Phase.CALIBRATE), t(2, Phase.CALIBRATE), t(3, Phase.EXPLORE), t(4, Phase.EXPLORE, TrialState.PRUNED),
              t(5, Phase.EXPLORE), t(6, Phase.CONFIRM))
    assert [trial_of(n, trials) for n in (1, 2, 3)] == [3, 5, 6]
    assert trial_of(4, trials) is None and trial_of(None, trials) is None


def test_a_search_point_in_words() -> None:
    point = {"op": "RC_WRITE", "direction": "incast", "sizes": [2048, 32, 524288], "qps": 1, "batch": 55,
             "mtu": 1024, "memory": "gpu", "burst": True}
    assert point_words(point) == "RC WRITE incast of 32 B to 512 KiB (3 sizes), 1 QP, batch 55, MTU 1024, " \
        "gpu memory, bursts"
    assert point_words({}) == ""


def test_an_rnr_symptom_names_the_starved_receiver_and_the_host_that_counted_the_naks() -> None:
    rnr = Symptom("rnr", "b", "receiver", 12_000.0, 210.0, "send_rnr_err", False, "hw")
    assert headline(rnr) == "receiver not ready on host b (receiver)"
    assert symptom_size(rnr) == "12,000 RNR NAKs/s of send_rnr_err"
    assert symptom_text(rnr) == ("receiver not ready on host b (receiver): 12,000 RNR NAKs/s of send_rnr_err, "
                                 "57.1x the limit of 210/s")
    machines = Machines(remote=True, roles={"a": Machine("a", "node-a", device=Device("mlx5_0", 1, 3, "10.0.0.1")),
                                            "b": Machine("b", "node-b", device=Device("mlx5_1", 1, 3, "10.0.0.2"))})
    naks = Symptom("rnr", "b", "receiver", 12_000.0, 210.0, "rnr_nak_retry_err", False, "hw", read_on="a")
    assert symptom_text(naks, machines) == ("receiver not ready on node-b (mlx5_1:1, receiver): 12,000 RNR NAKs/s "
                                            "of rnr_nak_retry_err counted on node-a (mlx5_0:1), 57.1x the limit of "
                                            "210/s")


def test_an_isolation_symptom_reads_as_a_slowdown_of_the_victim() -> None:
    slowed = Symptom("isolation", "b", "victim", 3.55, 1.5)
    assert headline(slowed) == "victim slowed by its aggressor on host b (victim)"
    assert symptom_size(slowed) == "slowed 3.55x against its share alone"
    assert symptom_text(slowed) == ("victim slowed by its aggressor on host b (victim): slowed 3.55x against its "
                                    "share alone, 2.4x the threshold of 1.5x")


def test_a_collectives_slowest_link_is_told_against_its_own_groups_reference() -> None:
    figures = {"busbw_gbs": 11.46, "algbw_gbs": 7.64, "reference_gbs": 22.9, "spread": 0.5,
               "slowest_link": "r1->r2", "links": {"r1->r2": 5.0, "r0->r1": 22.9},
               "slow_references": {"r1->r2": 11.0}}
    assert collective_words(figures) == ("busbw 11.46 GB/s, algbw 7.64 GB/s; links at 22.90 GB/s (the reference), "
                                         "the slowest r1->r2 at 5.00 GB/s (its group's reference 11.00 GB/s); "
                                         "spread 50%")
    same = {**figures, "slow_references": {"r1->r2": 22.9}}
    assert "group" not in collective_words(same) and "group" not in collective_words({**figures, "slow_references": {}})


def test_a_pause_from_the_fabric_is_told_from_the_port_it_is_attributed_to() -> None:
    s = Symptom("pause", "r0", "fabric", 0.49, 0.001, "rx_prio3_pause_duration", read_on="r2", link="switch->r0")
    assert symptom_text(s) == ("PFC pause from the switch port into host r0: host r2 paused 49.00% of the time, 490x "
                               "the 0.10% threshold (counter rx_prio3_pause_duration)")
    between = Symptom("pause", "r2", "fabric", 0.3, 0.001, "rx_prio3_pause_duration", read_on="r2", link="fabric")
    assert headline(between) == "PFC pause from a link between switches"


def test_a_pattern_case_is_told_in_two_lines_and_its_victim_in_a_third() -> None:
    from collie.model.patterns import Pattern, PatternKind
    from collie.model.workload import Workload
    from collie.report.facts import workload_lines

    victim = Flow(Endpoint("r1"), Endpoint("r2"), sizes=(65536,), victim="bulk")
    w = Workload.of_pattern(Pattern(PatternKind.INCAST, ("r0", "r1", "r2"), 1 << 20, victim=victim))
    lines = workload_lines(w)
    assert len(lines) == 3 and lines[0].endswith(": 2 connections")  # the victim is no connection of the incast
    assert lines[1].startswith("each connection: RC WRITE") and lines[2].startswith("victim bulk: r1 -> r2: RC WRITE")


def test_a_pattern_over_several_nics_of_each_host_says_so() -> None:
    from collie.model.patterns import Pattern, PatternKind
    from collie.model.workload import Workload
    from collie.report.facts import workload_lines

    w = Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, ("r0", "r1"), 1 << 26, ranks_per_host=2, nics=2))
    assert workload_lines(w)[0] == ("ring_allreduce of 64 MiB per rank over r0, r1 (2 hosts, 2 ranks each on 2 "
                                    "NICs): 4 connections")
    point = {"pattern": "ring_allreduce", "hosts": 2, "ranks_per_host": 2, "nics": 2, "op": "RC_WRITE"}
    assert point_words(point).startswith("ring_allreduce over 2 hosts x 2 ranks on 2 NICs: RC WRITE")
