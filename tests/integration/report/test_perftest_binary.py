"""The perftest lines of real minimal cases, parsed by perftest itself (Debian's ``perftest`` package).

perftest parses its whole command line before it looks for a device: a line it accepts ends in "no such device"
on a machine with no RDMA device (or with ``-d`` naming one that does not exist), while an option it does not
know or a combination it refuses ends in its parser's error. Both the server and the client line of every case
of a campaign written by the current collie, and of the corpus's expressible cases, must get past the parser.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from collie.report import build_report
from collie.report.perftest import perftest_lines
from collie.storage.corpus import load_corpus
from tests.conftest import ROOT
from tests.system_components import require

ACCEPTED = re.compile(r"Did not detect devices|Unable to find the Infiniband/RoCE device|IB device .* not found")


@pytest.fixture(autouse=True)
def _perftest() -> None:
    require("perftest")


def _run(line: str) -> str:
    """Run a perftest line against a device that does not exist; its output."""
    words = shlex.split(line)
    assert "-d" not in words  # the simulator names no device
    r = subprocess.run([words[0], "-d", "collie-no-such-device", *words[1:]], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL, check=False)
    return r.stdout + r.stderr


def _lines(campaign: Path) -> list[str]:
    report = build_report(campaign)
    out = [line for a in report.anomalies if a.perftest.expressible
           for line in (a.perftest.server, a.perftest.client)]
    for case in load_corpus(ROOT / "workloads" / "corpus"):
        p = perftest_lines(case.workload, {})
        if p.expressible and "--use_cuda=0" not in p.server + p.client:  # Debian's perftest has no CUDA
            out += [p.server, p.client]
    return out


def test_perftest_accepts_every_line_of_a_campaign_and_of_the_corpus(campaign: Path) -> None:
    lines = _lines(campaign)
    tools = {shlex.split(line)[0] for line in lines}
    assert {"ib_write_bw", "ib_read_bw", "ib_send_bw"} <= tools, tools  # each tool is exercised
    for line in lines:
        out = _run(line)
        assert ACCEPTED.search(out), f"perftest refused {line!r}: {out.strip()[-300:]}"


@pytest.mark.parametrize("line", ["ib_send_bw -c UD -l 4 -Q 8 -D 5", "ib_write_bw --no-such-option",
                                  "ib_read_bw -c UC -s 1024"])
def test_a_line_perftest_refuses_is_told_apart(line: str) -> None:
    assert not ACCEPTED.search(_run(line))
