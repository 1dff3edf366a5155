"""The verdict view: magnitudes in words, symptom rows, the counters that moved; and calibrating only the
direction kinds a workload needs."""

from __future__ import annotations

from collie import calibrate
from collie.cli.verdict_view import magnitude, moved_counters, sentence, symptom_rows
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.oracle import Ceilings, Oracle, Symptom, Verdict


def _verdict() -> Verdict:
    symptoms = (Symptom("pause", "b", "receiver", 0.05, 0.001, "tx_prio3_pause_duration", False, "ethtool"),
                Symptom("loss", "b", "receiver", 500.0, 30.0, "out_of_sequence", False, "hw"))
    evidence = {"hosts": {"b": {"end": "receiver", "counters": {
        "tx_prio3_pause_duration": {"delta": 50000.0, "source": "ethtool"},
        "out_of_sequence": {"delta": 1000.0, "source": "hw"},
        "rx_discards_phy": {"delta": 0.0, "source": "ethtool"}}}}}
    return Verdict(True, symptoms, 50.0, "pause@receiver+loss@receiver", {}, evidence)


def test_magnitudes_name_the_threshold_and_the_baseline() -> None:
    v = _verdict()
    oracle = Oracle(calibrate.catalog_of(_info()), Ceilings({}, {}), baseline={"b:out_of_sequence": 10.0})
    pause, loss = (magnitude(s, oracle) for s in v.symptoms)
    assert "5.000%" in pause and "50x" in pause
    assert "clean baseline 10/s" in loss and "limit 30/s" in loss
    assert Symptom("low_throughput", "b", "receiver", 0.4, 0.8).strength == 2.0
    assert Symptom("straggler", "h3", "host", 0.5, 0.8).strength == 1.6
    assert sentence(v) == "ANOMALOUS: pause@receiver+loss@receiver (score 50)"
    assert [r["symptom"] for r in symptom_rows(v, oracle)] == ["pause", "loss"]


def test_moved_counters_leave_out_what_did_not_move() -> None:
    rows = moved_counters(_verdict(), duration_s=2.0)
    assert {r["counter"] for r in rows} == {"tx_prio3_pause_duration", "out_of_sequence"}
    assert next(r for r in rows if r["counter"] == "out_of_sequence")["per_s"] == 500.0


def test_a_clean_or_unjudged_run_says_so() -> None:
    assert sentence(Verdict(False, (), 0.0, "")) == "not anomalous"
    assert sentence(Verdict(False, (), 0.0, "", evidence={"not_judged": "run had errors"})).startswith("not judged")


def test_kinds_of_a_workload() -> None:
    one = Workload((Flow(Endpoint("a"), Endpoint("b")),))
    bi = Workload((Flow(Endpoint("a"), Endpoint("b")), Flow(Endpoint("b"), Endpoint("a"))))
    loop = Workload((Flow(Endpoint("a"), Endpoint("a")),))
    assert calibrate.kinds_of(one) == ("oneway",)
    assert calibrate.kinds_of(bi) == ("bidirectional",)
    assert calibrate.kinds_of(loop) == ("loopback",)
    assert [k for k, _, _ in calibrate.calibration_workloads(("oneway",))] == ["oneway"] * 6
    assert len(calibrate.calibration_workloads()) == 12 and len(calibrate.calibration_workloads(atomics=False)) == 11


def _info():  # type: ignore[no-untyped-def]
    from collie.targets.sim import SimTarget

    return SimTarget("cx6-200g").describe()


def test_an_rnr_symptom_reads_in_rnr_naks_against_the_baseline_of_the_host_that_counted_them() -> None:
    rnr = Symptom("rnr", "b", "receiver", 12_000.0, 210.0, "rcvd_rnr_err", False, "hw", read_on="a")
    oracle = Oracle(calibrate.catalog_of(_info()), Ceilings({}, {}), baseline={"a:rcvd_rnr_err": 100.0})
    assert magnitude(rnr, oracle) == "12,000 RNR NAKs/s counted on a (limit 210/s, clean baseline 100/s, 57.1x)"
    v = Verdict(True, (rnr,), 57.1, "rnr@receiver")
    assert sentence(v) == "ANOMALOUS: rnr@receiver (score 57.1)"
    (row,) = symptom_rows(v, oracle)
    assert (row["symptom"], row["host"], row["end"], row["counter"]) == ("rnr", "b", "receiver", "rcvd_rnr_err")


def test_an_isolation_symptom_reads_as_the_victims_slowdown() -> None:
    slowed = Symptom("isolation", "b", "victim", 3.55, 1.5)
    assert magnitude(slowed) == ("victim slowed 3.55x against its fair share or its p99 alone (threshold 1.5x, "
                                 "2.37x)")
