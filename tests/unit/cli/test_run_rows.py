"""``collie run``'s tables: a workload with control-path churn gets a row per flow and kind of churn with the
rate achieved and the latencies of one operation; one without gets none."""

from __future__ import annotations

from simhelpers import one

from collie.cli.run_cmd import churn_rows
from collie.targets.sim import SimTarget


def test_churn_rows_show_what_each_churning_flow_achieved() -> None:
    w = one(qps=8, batch=16, mr_churn=1000, qp_churn=100)
    w = w.with_flows((w.flows[0], one(qps=2).flows[0]))
    r = SimTarget("cx6-200g").run(w, 1.0)
    rows = churn_rows(w, r)
    assert [(row["flow"], row["churn"], row["asked [/s]"]) for row in rows] == [(0, "MR", 1000), (0, "QP", 100)]
    mr = r.flows[0]
    assert rows[0]["done [/s]"] == round(mr.mr_churn_per_s, 1) and rows[0]["p99 [us]"] == round(mr.mr_churn_p99_us, 1)
    assert rows[1]["p99 [us]"] > rows[1]["mean [us]"] > 0
    assert churn_rows(w.with_flows(w.flows[1:]), SimTarget("cx6-200g").run(w.with_flows(w.flows[1:]), 1.0)) == []
