"""What the comparison says of the rows it shows and of an anomaly found by both campaigns."""

from __future__ import annotations

from collie.report.compare import SHOWN_WORKLOADS, shown_words


def test_the_throughput_table_says_when_it_leaves_workloads_out() -> None:
    assert shown_words(SHOWN_WORKLOADS + 27) == (f"{SHOWN_WORKLOADS} of {SHOWN_WORKLOADS + 27} workloads shown, "
                                                 "largest change first; the JSON comparison (--format json) lists "
                                                 "them all.")
    assert shown_words(3) == "All 3 workloads, largest change first."
