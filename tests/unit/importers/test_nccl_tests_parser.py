"""nccl-tests text beyond the real logs: sections cut short, the per-iteration and timestamp columns, rows with a
blank redop or only in place, names from a command line or inferred, and the errors."""

from __future__ import annotations

import pytest

from collie.errors import InputError
from collie.importers.nccl_tests import NcclResult, parse_nccl_tests

PARAMS = ("# nThread 1 nGpus 4 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
          "validation: 1 graph: 0\n#\n# Using devices\n")
RANKS = "".join(f"#  Rank {r:2d} Group  0 Pid  4242 on      node1 device {r:2d} [0000:{r}a:00] NVIDIA A100\n"
                for r in range(4))
HEAD = ("#\n#                                                              out-of-place                       in-place"
        "\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw"
        "  #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  "
        "(GB/s)  (GB/s)\n")
ROWS = ("           8             2     float     sum      -1    10.21    0.00    0.00       0    10.02    0.00    0.00"
        "       0\n     1048576        262144     float     sum      -1   100.00   10.49   15.73       0    99.00   "
        "10.59   15.89       0\n")
END = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.06 \n#\n"


def test_a_section_killed_before_its_summary_keeps_its_rows_with_a_warning() -> None:
    log = parse_nccl_tests(PARAMS + RANKS + HEAD + ROWS, "killed.log")
    (c,) = log.collectives
    assert [r.size for r in c.rows] == [8, 1048576]
    assert (c.complete, c.avg_bus_bandwidth) == (False, None)
    assert "killed.log:13: the section that starts at line 1 ends without its '# Avg bus bandwidth' summary " \
        "(killed, or cut short); its 2 rows are kept" in log.warnings


def test_the_name_comes_from_the_command_line_before_the_section() -> None:
    text = "$ mpirun -np 4 ./build/all_reduce_perf -b 8 -e 1K -f 2 -g 1\n" + PARAMS + RANKS + HEAD + ROWS + END
    log = parse_nccl_tests(text, "cmd.log")
    (c,) = log.collectives
    assert (c.name, c.name_from, c.line, c.complete) == ("all_reduce_perf", "command", 2, True)
    assert log.warnings == ()


def test_the_name_is_inferred_when_only_one_collective_fits() -> None:
    log = parse_nccl_tests(PARAMS + RANKS + HEAD + ROWS + END, "anon.log")
    (c,) = log.collectives
    # 4 ranks, count x 4 B = size, busbw / algbw = 1.5 = 2(n-1)/n: all_reduce
    assert (c.name, c.name_from) == ("all_reduce_perf", "inferred")
    gather = ROWS.replace("sum", "none").replace("262144", " 65536")
    gather = gather.replace("15.73", " 7.87").replace("15.89", " 7.94")  # busbw / algbw = (n-1)/n
    (c,) = parse_nccl_tests(PARAMS + RANKS + HEAD + gather + END, "anon.log").collectives
    assert c.name is None  # all_gather and alltoall print the same figures


def test_per_iteration_and_timestamp_columns() -> None:
    head = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max"
            "    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%  timestamp\n")
    row = ("        1024           256     float     sum      -1    12.50    0.08    0.12       0    12.01    13.70    "
           "13.50     2.10    12.40    0.08    0.12       0    12.00    13.10    13.00     1.90  2026-01-05 10:00:00\n")
    (c,) = parse_nccl_tests(PARAMS + head + row + END, "iter.log").collectives
    (r,) = c.rows
    assert r.out_of_place == NcclResult(12.50, 0.08, 0.12, 0, {"i_min": 12.01, "i_max": 13.70, "i_p99": 13.50,
                                                              "i_cv%": 2.10})
    assert r.in_place.per_iteration == {"i_min": 12.00, "i_max": 13.10, "i_p99": 13.00, "i_cv%": 1.90}
    assert r.timestamp == "2026-01-05 10:00:00"


def test_blank_redop_in_place_only_rows_large_wrong_counts_and_a_failed_check() -> None:
    rows = ("        1024           256     float              -1    12.50    0.08    0.12   1e+06    12.40    0.08    "
            "0.12       3\n        2048           512     float     sum      -1                                      "
            "  20.00    0.10    0.15     N/A\n")
    text = PARAMS + HEAD + rows + "# Out of bounds values : 7 FAILED\n# Avg bus bandwidth    : 0.135 FAILED\n"
    (c,) = parse_nccl_tests(text, "odd.log").collectives
    blank, in_place_only = c.rows
    assert (blank.redop, blank.root, blank.out_of_place, blank.in_place.wrong) == \
        (None, -1, NcclResult(12.50, 0.08, 0.12, 1000000), 3)
    assert (in_place_only.out_of_place, in_place_only.in_place) == (None, NcclResult(20.00, 0.10, 0.15, None))
    assert (c.out_of_bounds, c.out_of_bounds_ok, c.avg_bus_bandwidth) == (7, False, 0.135)


def test_mpirun_tags_info_lines_and_an_error_line() -> None:
    text = "".join(f"[1,0]<stdout>:{line}\n" for line in (PARAMS + RANKS + HEAD).splitlines())
    text += "[1,1]<stderr>:node1:4242:4242 [1] NCCL INFO Channel 00/02 : 0 1 2 3\n"
    text += "".join(f"[1,0]<stdout>:{line}\n" for line in (ROWS + END).splitlines())
    text += "[1,0]<stdout>:# error: unhandled cuda error\n"
    log = parse_nccl_tests(text, "tagged.log")
    (c,) = log.collectives
    assert len(c.rows) == 2 and len(c.ranks) == 4 and c.complete
    assert "tagged.log:18: nccl-tests reported an error: 'unhandled cuda error'" in log.warnings


@pytest.mark.parametrize(("text", "message"), [
    ("", "e.log:1: not nccl-tests output: no '# nThread ...' line, rank table or '# size count type ...' column "
         "header in its 1 lines"),
    ("RDMA_Write BW Test\n", "e.log:1: not nccl-tests output"),
    (PARAMS + ROWS, "e.log:4: a result row outside a table (no '# size count type ...' column header above it)"),
    (PARAMS + HEAD + ROWS.replace("100.00", "fast"), "e.log:9: expected numbers for time algbw busbw #wrong"),
    (PARAMS + HEAD + ROWS.replace("262144", "26x144"),
     "e.log:9: expected an nccl-tests result row (size count type redop root time algbw busbw #wrong time algbw "
     "busbw #wrong), got '1048576        26x144"),
    (PARAMS + HEAD + "        1024           256     float     sum      -1    12.50    0.08\n",
     "e.log:8: expected an nccl-tests result row"),
    (PARAMS + HEAD.replace("#wrong\n", "#bad\n"), "e.log:6: not an nccl-tests column header"),
    (PARAMS.replace("iters: 20", "iters: many"), "e.log:1: nccl-tests parameter 'iters' should be an integer, got "
                                                 "'many'"),
    (PARAMS.replace("2(factor)", "2(fold)"), "e.log:1: nccl-tests parameter 'step' should be N(factor) or N(bytes)"),
    (PARAMS + RANKS.replace("Pid  4242", "Pid  ?"), "e.log:4: expected '#  Rank N [Group N] Pid N on HOST device N"),
    (PARAMS + HEAD + ROWS + "# Avg bus bandwidth    : lots\n", "e.log:10: expected '# Avg bus bandwidth : NUMBER'"),
])
def test_what_is_refused_is_one_sentence_with_the_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_nccl_tests(text, "e.log")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)
