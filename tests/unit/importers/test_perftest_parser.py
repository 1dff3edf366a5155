"""perftest text and JSON beyond the real logs: runs cut short, ``--run_infinitely``, several runs, the column
variants of other versions and modes, the standard JSON, vendor-fork lines, and the errors."""

from __future__ import annotations

import json

import pytest

from collie.errors import InputError
from collie.importers.perftest import BandwidthRow, LatencyRow, parse_perftest, parse_perftest_json
from tests.conftest import ROOT

RULE = "-" * 87
HEADER = f"""{RULE}
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 2\t\tTransport type : IB
 Connection type : UC\t\tUsing SRQ      : OFF
 PCIe relax order: ON\t\tLock-free      : OFF
 ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF
 TX depth        : 64
 CQ Moderation   : 16
 CQE Poll Batch  : Dynamic
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 3
 Max inline data : 64[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
{RULE}
 local address: LID 0000 QPN 0x0108 PSN 0x63ad7d RKey 0x17eedf VAddr 0x007f760c947000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:255:255:05
 remote address: LID 0000 QPN 0x0076 PSN 0xf3810c RKey 0x201600 VAddr 0x007fbb4c981000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:255:255:04
{RULE}
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
"""
ROWS = """ 65536      5000             97.12              97.03               0.185072
 131072     5000             97.20              97.19               0.092688
"""


def test_a_uc_run_with_a_tabbed_two_column_header_and_typed_fields() -> None:
    log = parse_perftest(HEADER + ROWS + RULE + "\n", "run.log")
    (run,) = log.runs
    assert log.warnings == ()
    h = run.header
    assert (h.connection, h.qps, h.tx_depth, h.cq_moderation, h.mtu, h.gid_index, h.max_inline) == \
        ("UC", 2, 64, 16, 4096, 3, 64)
    assert h.fields["CQE Poll Batch"] == "Dynamic"
    assert h.fields["Using Enhanced Reorder"] == "OFF"
    assert run.rows == (BandwidthRow(65536, 5000, 97.12, 97.03, 0.185072, line=24),
                        BandwidthRow(131072, 5000, 97.20, 97.19, 0.092688, line=25))
    assert run.complete


def test_a_run_killed_before_its_closing_rule_keeps_its_rows_with_a_warning() -> None:
    log = parse_perftest(HEADER + ROWS, "killed.log")
    (run,) = log.runs
    assert [r.size for r in run.rows] == [65536, 131072]
    assert not run.complete
    assert log.warnings == ("killed.log:25: the run that starts at line 2 ends without perftest's closing rule "
                            "(killed, or cut short); its 2 rows are kept",)


def test_run_infinitely_prints_rows_until_it_is_stopped() -> None:
    rows = "".join(f" 65536      {n}          97.1{n % 10}               97.0{n % 10}               0.18507{n % 10}\n"
                   for n in range(1000, 1006))
    log = parse_perftest(HEADER + rows + "^C\nroot@host:~# \n", "forever.log")
    (run,) = log.runs
    assert [r.iterations for r in run.rows] == list(range(1000, 1006))
    assert not run.complete
    assert len(log.warnings) == 2  # the '^C' line, and the run without its closing rule
    assert "not a result row, skipped: '^C'" in log.warnings[0]


def test_several_runs_in_one_log_are_read_in_order() -> None:
    first = (ROOT / "tests/fixtures/perftest/04-ib_send_bw-a-sweep-mlx4-IB.txt").read_text()
    second = (ROOT / "tests/fixtures/perftest/01-ib_write_lat-a-sweep-mlx4-IB.txt").read_text()
    log = parse_perftest(first + second, "two.log")
    assert [(r.title, r.kind, len(r.rows), r.line) for r in log.runs] == \
        [("Send BW Test", "bw", 23, 4), ("RDMA_Write Latency Test", "lat", 23, 43 + 3)]
    assert log.warnings == ()


def test_a_bidirectional_atomic_and_immediate_titles() -> None:
    for title, verb, bidir, imm, atomic in (
            ("RDMA_Write Bidirectional BW Test", "WRITE", True, False, None),
            ("Send_imm Bidirectional Post List BW Test", "SEND", True, True, None),
            ("Atomic CMP_AND_SWAP BW Test", "ATOMIC", False, False, "CMP_AND_SWAP"),
            ("RDMA_Write_imm BW Test", "WRITE", False, True, None)):
        text = HEADER.replace("RDMA_Write BW Test", title) + ROWS + RULE
        (run,) = parse_perftest(text, "t.log").runs
        assert (run.title, run.verb, run.bidirectional, run.immediate, run.atomic_op) == \
            (title, verb, bidir, imm, atomic)


def test_vendor_fork_lines_around_and_after_the_run_are_ignored() -> None:
    text = ("[user@h1 ~]$ ./ib_write_bw -d rocep1s0 -x 1 -q 2 -F -n 5000 --report_gbits -p 10000 10.0.0.2\n"
            "Using sampled CPU speed 3000 MHz over reported speed 4000 MHz\nConnected: Mon Jan  5 10:00:00 2026\n\n"
            "Using ROCm Device with ID: 0, Name: some GPU, PCI Bus ID: 0x15, GCN Arch: gfx0:xnack-\n"
            "allocated 1048576 bytes of GPU buffer at 0x7f0000000000\n"
            + HEADER.replace(" Data ex. method", " CPU freq        : 3000[MHz]\n Use ROCm memory : ON\n"
                                                 " Data ex. method")
            + ROWS + RULE + "\nCompleted: Mon Jan  5 10:00:10 2026\n\nTotal run time: 10.010s\n"
            "deallocating GPU buffer 0x7f0000000000\n[1]+  Done  ./ib_write_bw -d rocep1s0 -q 2 -n 5000 -p 10000\n")
    log = parse_perftest(text, "fork.log")
    (run,) = log.runs
    assert log.warnings == ()
    assert run.header.fields["Use ROCm memory"] == "ON"
    assert run.header.fields["CPU freq"] == "3000[MHz]"
    assert "Total run time" not in run.header.fields
    assert len(run.rows) == 2 and run.complete


def test_old_latency_columns_and_duration_latency_columns() -> None:
    old = (f"{RULE}\n                    Send Latency Test\n Number of qps   : 1\n{RULE}\n"
           " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
           " 2       1000          0.98           5.35         1.01\n" + RULE)
    (run,) = parse_perftest(old, "old.log").runs
    assert run.rows == (LatencyRow(2, 1000, t_min=0.98, t_max=5.35, t_typical=1.01, line=6),)
    duration = (f"{RULE}\n                    RDMA_Read Latency Test\n{RULE}\n"
                " #bytes        #iterations       t_avg[usec]    tps average\n"
                " 8             2719870           1.84           543978.12\n" + RULE)
    (run,) = parse_perftest(duration, "dur.log").runs
    assert run.rows == (LatencyRow(8, 2719870, t_avg=1.84, tps_average=543978.12, line=5),)
    assert (run.verb, run.kind, run.unit) == ("READ", "lat", "usec")


def test_per_port_qos_and_cpu_util_columns_land_in_extra() -> None:
    text = (f"{RULE}\n                    Send BW Test\n{RULE}\n #bytes    #sl      #iterations    BW peak[MiB/sec]    "
            "BW average[MiB/sec]   MsgRate[Mpps]    CPU_Util[%]\n 65536    3           1000           11000.00"
            "            10999.50                  0.175992     12.50\n" + RULE)
    (run,) = parse_perftest(text, "qos.log").runs
    assert run.rows == (BandwidthRow(65536, 1000, 11000.00, 10999.50, 0.175992,
                                     extra={"#sl": 3, "CPU_Util[%]": 12.50}, line=5),)


def test_warning_lines_in_the_header_and_conflicting_repeats() -> None:
    text = HEADER.replace(" TX depth        : 64\n", " TX depth        : 64\n WARNING: CPU is not PCIe relaxed "
                          "ordering compliant.\n TX depth        : 128\n") + ROWS + RULE
    log = parse_perftest(text, "w.log")
    assert log.runs[0].header.tx_depth == 64
    assert log.warnings == ("w.log:10: 'TX depth' is '128' here but '64' at line 8; the first is kept",)


@pytest.mark.parametrize(("text", "message"), [
    ("", "e.log:1: empty; expected perftest output"),
    ("hello\nworld\n", "e.log:1: not perftest output: no test title such as 'RDMA_Write BW Test', header or result "
                       "table in its 3 lines (it starts 'hello')"),
    (HEADER + " 65536 5000 abc 97.03 0.185072\n",
     "e.log:24: expected 5 numbers in a result row (#bytes #iterations BW peak BW average MsgRate), got "
     "'65536 5000 abc 97.03 0.185072'"),
    (HEADER + " 65536 5000 97.12 97.03\n",
     "e.log:24: expected 5 numbers in a result row (#bytes #iterations BW peak BW average MsgRate), got "
     "'65536 5000 97.12 97.03'"),
    (HEADER + " 65536.5 5000 97.12 97.03 0.1\n", "e.log:24: expected 5 numbers in a result row"),
    (HEADER + " 65536 5000 1e999 97.03 0.1\n", "e.log:24: expected 5 numbers in a result row"),
    (HEADER.replace("TX depth        : 64", "TX depth        : lots"),
     "e.log:8: perftest header field 'TX depth' should be an integer, got 'lots'"),
    (HEADER.replace("MsgRate[Mpps]", "MsgRate[Mpps]  Pkts[#]"), "e.log:23: unknown column 'Pkts[#]'"),
    (HEADER.replace("RDMA_Write BW Test", "RDMA_Write Latency Test"),
     "e.log:23: the 'RDMA_Write Latency Test' run of line 2 prints a bandwidth table"),
    (HEADER.replace(" local address: LID 0000 QPN", " local address: LID 0000 QPX"),
     "e.log:18: expected 'local address: LID <hex> QPN <hex> PSN <hex>' (then OUT, RKey, VAddr or SRQn)"),
    (HEADER.replace(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n", "") + ROWS,
     "e.log:23: a result row before the '#bytes #iterations ...' column header of the run that starts at line 2"),
])
def test_what_is_refused_is_one_sentence_with_the_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_perftest(text, "e.log")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


STANDARD = {
    "test_info": {"test": "RDMA_Write_Bidirectional_BW_Test", "Dual_port": "OFF", "Device": "mlx5_0",
                  "Number_of_qps": 4, "Transport_type": "IB", "Connection_type": "RC", "Using_SRQ": "OFF",
                  "PCIe_relax_order": "ON", "ibv_wr_API": "ON", "TX_depth": 128, "RX_depth": 512, "CQ_Moderation": 100,
                  "Mtu": 4096, "Link_type": "Ethernet", "GID_index": 3, "Max_inline_data": 0, "rdma_cm_QPs": "OFF",
                  "Use_ROCm_memory": "OFF", "Use_MUSA_memory": "OFF", "Data_ex_method": "Ethernet"},
    "results": {"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 194.1, "BW_average": 193.95, "MsgRate": 0.369915}}


def test_the_standard_json_of_perftest_24_01_and_later_needs_no_repair() -> None:
    text = json.dumps(STANDARD, indent=0)
    log = parse_perftest(text, "bw.json")
    assert log.warnings == ()
    (run,) = log.runs
    assert (run.title, run.verb, run.kind, run.bidirectional, run.unit, run.form) == \
        ("RDMA_Write Bidirectional BW Test", "WRITE", "bw", True, None, "json")
    h = run.header
    assert (h.device, h.qps, h.tx_depth, h.rx_depth, h.cq_moderation, h.mtu, h.gid_index, h.max_inline) == \
        ("mlx5_0", 4, 128, 512, 100, 4096, 3, 0)
    assert run.rows == (BandwidthRow(65536, 5000, 194.1, 193.95, 0.369915, line=run.rows[0].line),)
    assert text.split("\n")[run.rows[0].line - 1].startswith('"MsgSize"')


def test_json_objects_one_after_another_are_several_runs() -> None:
    text = json.dumps(STANDARD) + "\n" + json.dumps(STANDARD)
    assert len(parse_perftest_json(text, "two.json").runs) == 2


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["results"].pop("MsgSize"), "x.json:1: results: has no MsgSize and n_iterations"),
    (lambda d: d["results"].update(BW_peak="fast"), "x.json:1: results: BW_peak: expected a number, got 'fast'"),
    (lambda d: d["results"].update(MsgSize=-8), "x.json:1: results: MsgSize: must be 0 or more, got -8"),
    (lambda d: d["test_info"].update(test="Ping_Test"), "x.json:1: test_info: test: expected a perftest test name"),
    (lambda d: d.pop("test_info"), "x.json:1: test_info: missing (a required field)"),
    (lambda d: d["test_info"].update(Device=None), "x.json:1: test_info: Device: expected a string or a number"),
])
def test_json_that_is_not_a_perftest_report_is_refused(change: object, message: str) -> None:
    data = json.loads(json.dumps(STANDARD))
    change(data)  # type: ignore[operator]
    with pytest.raises(InputError) as caught:
        parse_perftest(json.dumps(data), "x.json")
    assert str(caught.value).startswith(message)


def test_json_that_cannot_be_repaired_names_its_line() -> None:
    with pytest.raises(InputError) as caught:
        parse_perftest("{\ntest_info: {\ntest: RDMA_Write_BW_Test,\n}\nresults: {{\n}\n", "bad.json")
    assert str(caught.value).startswith("bad.json:5: not perftest JSON, even read as perftest's pre-24.01 form")
