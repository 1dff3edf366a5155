"""The trials frame: one typed row per trial, whatever state it ended in, and its CSV round trip."""

from __future__ import annotations

import dataclasses
import io

import pandas as pd

from collie.report.frames import TRIAL_COLUMNS, read_trials_csv, trials_frame
from collie.storage.records import Phase, TrialRecord, TrialState, TrialVerdict
from collie.targets.base import FlowResult, HostResult, RunResult

RESULT = RunResult("k1", "sim", 5.0, 0.1,
                   (FlowResult(0, "a", "b", 1e9, 1e5, 1e4, 2.0, 3.0, 4.0),
                    FlowResult(1, "b", "a", 2e9, 2e5, 2e4, 2.5, 7.5, 9.0)),
                   (HostResult("a", 1e9, 2e9, 1e5, 2e5), HostResult("b", 2e9, 1e9, 2e5, 1e5)))
VERDICT = TrialVerdict(anomalous=True, signature="pause@receiver", score=12.5,
                       metrics={"throughput": 0.4, "diag:x": 1.0})


def _records() -> list[TrialRecord]:
    return [
        TrialRecord(1, Phase.CALIBRATE, "k1", {}, TrialState.COMPLETE, 10.0, result=RESULT),
        TrialRecord(2, Phase.EXPLORE, "k2", {"qps": 4, "op": "RC_WRITE"}, TrialState.COMPLETE, 11.0, result=RESULT,
                    verdict=VERDICT),
        TrialRecord(3, Phase.EXPLORE, "k3", {"qps": 99999}, TrialState.PRUNED, 12.0, reason="qps 99999 > max_qp"),
        TrialRecord(4, Phase.MINIMIZE, "k4", {"qps": 2}, TrialState.FAILED, 13.0, reason="the run, broken"),
        TrialRecord(5, Phase.EXPLORE, "k5", {"qps": 1}, TrialState.RUNNING, 14.0),
    ]


def test_one_typed_row_per_trial_in_every_state() -> None:
    frame = trials_frame(_records())
    assert list(frame.columns) == list(TRIAL_COLUMNS)
    assert {c: str(t) for c, t in frame.dtypes.items()} == TRIAL_COLUMNS
    assert frame["status"].tolist() == ["COMPLETE", "COMPLETE", "PRUNED", "FAILED", "RUNNING"]
    judged = frame.iloc[1]
    assert judged["anomalous"] and judged["signature"] == "pause@receiver" and judged["score"] == 12.5
    assert judged["throughput"] == 0.4 and judged["bps"] == 3e9 and judged["msg_rate"] == 3e4
    assert judged["lat_p99_us"] == 7.5 and judged["point"] == '{"op":"RC_WRITE","qps":4}'
    calibration = frame.iloc[0]
    assert pd.isna(calibration["anomalous"]) and calibration["signature"] == "" and calibration["bps"] == 3e9
    pruned = frame.iloc[2]
    assert pruned["reason"] == "qps 99999 > max_qp" and pd.isna(pruned["bps"]) and pd.isna(pruned["duration_s"])


def test_a_trial_with_churn_shows_the_churn_achieved_and_its_p99() -> None:
    churned = FlowResult(1, "b", "a", 2e9, 2e5, 2e4, 2.5, 7.5, 9.0, mr_churn_us=50.0, mr_churn_per_s=990.0,
                         mr_churn_p99_us=80.0)
    result = dataclasses.replace(RESULT, flows=(RESULT.flows[0], churned))
    frame = trials_frame([*_records(), TrialRecord(6, Phase.EXPLORE, "k6", {}, TrialState.COMPLETE, 15.0,
                                                   result=result)])
    row = frame.iloc[5]
    assert row["mr_churn_per_s"] == 990.0 and row["mr_churn_p99_us"] == 80.0
    assert row["qp_churn_per_s"] == row["qp_churn_p99_us"] == 0.0
    assert frame.iloc[1]["mr_churn_per_s"] == 0.0 and pd.isna(frame.iloc[2]["mr_churn_p99_us"])  # none; no result


def test_the_csv_reads_back_equal() -> None:
    frame = trials_frame(_records())
    buf = io.StringIO(frame.to_csv(index=False))
    pd.testing.assert_frame_equal(read_trials_csv(buf), frame)


def test_an_empty_journal_is_an_empty_typed_frame() -> None:
    frame = trials_frame([])
    assert len(frame) == 0 and {c: str(t) for c, t in frame.dtypes.items()} == TRIAL_COLUMNS


def test_a_parallel_campaigns_trials_name_their_chain_and_read_back_equal() -> None:
    records = [dataclasses.replace(r, chain=r.trial % 2) for r in _records()]
    frame = trials_frame(records)
    assert frame["chain"].tolist() == [1, 0, 1, 0, 1]
    assert trials_frame(_records())["chain"].isna().all()  # one chain: no chain
    buf = io.StringIO(frame.to_csv(index=False))
    pd.testing.assert_frame_equal(read_trials_csv(buf), frame)
