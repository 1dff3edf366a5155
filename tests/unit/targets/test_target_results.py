"""Results of a run round-trip through their JSON form; the optional churn latencies of a flow are left out at 0,
so results without churn (and the journals written before them) read and write as before."""

from __future__ import annotations

import json

from collie.codec import Reader
from collie.targets.base import FlowResult, RunResult

PLAIN = FlowResult(0, "a", "b", 1e9, 1e5, 1e4, 2.0, 3.0, 4.0)
CHURNED = FlowResult(0, "a", "b", 1e9, 1e5, 1e4, 2.0, 3.0, 4.0, mr_churn_us=48.5, mr_churn_per_s=998.0,
                     mr_churn_p99_us=90.0, qp_churn_us=152.0, qp_churn_per_s=99.5, qp_churn_p99_us=300.0)


def _run(flow: FlowResult) -> RunResult:
    return RunResult("k", "sim:cx6-200g", 10.0, 0.1, (flow,), ())


def test_churn_latencies_round_trip_through_json() -> None:
    for flow in (PLAIN, CHURNED):
        data = json.loads(json.dumps(_run(flow).to_dict()))
        assert RunResult.from_dict(data, Reader("r.json")) == _run(flow)


def test_a_flow_without_churn_writes_what_it_wrote_before() -> None:
    assert set(PLAIN.to_dict()) == {"flow", "client", "server", "bps", "pps", "msg_rate", "lat_p50_us",
                                    "lat_p99_us", "lat_p999_us"}
    assert CHURNED.to_dict()["mr_churn_us"] == 48.5 and CHURNED.to_dict()["qp_churn_us"] == 152.0
    assert {k: v for k, v in CHURNED.to_dict().items() if k.endswith(("per_s", "p99_us")) and "churn" in k} == {
        "mr_churn_per_s": 998.0, "mr_churn_p99_us": 90.0, "qp_churn_per_s": 99.5, "qp_churn_p99_us": 300.0}
    only_mr = FlowResult(0, "a", "b", 1e9, 1e5, 1e4, 2.0, 3.0, 4.0, mr_churn_us=48.5, mr_churn_per_s=998.0,
                         mr_churn_p99_us=90.0)
    assert not any(k.startswith("qp_churn") for k in only_mr.to_dict())
