"""The perftest lines a report gives for simulated cases, run by perftest on a real rxe device (inside the guest).

Each line must be accepted as written (with the guest's device, port and GID index, which a ``verbs:`` target
names), run, and report the flow shape of its case: the verb and direction (perftest's test title), the
connection type, the number of QPs, the send and receive queue depths, the CQ moderation, the MTU and the
message size. Server and client run here, in loopback over 127.0.0.1, as bench/engine_vs_perftest.py does.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from collie.model.workload import Workload
from collie.report.perftest import PerftestLines, device_of, mirrored, perftest_lines
from collie.storage.corpus import load_corpus

ROOT = Path(__file__).resolve().parents[2]
#: Simulated cases of the corpus (found on sim profiles) that perftest can express, small enough for rxe.
CASES = ("f01-ud-rx-wqe", "f03-read-mtu1k", "h17-send-small-qps", "h18-bi-write-mtu1k")
TITLES = {"ib_write_bw": "RDMA_Write", "ib_read_bw": "RDMA_Read", "ib_send_bw": "Send"}


def _case(name: str) -> Workload:
    return next(c.workload for c in load_corpus(ROOT / "workloads" / "corpus") if c.name == name)


def _run(lines: PerftestLines, port: int, log: Path, timeout: float = 180) -> tuple[str, str]:
    """Start the server line, then the client line (retried until the server listens); (server's output,
    client's output). The server writes to the file ``log`` (a pipe could fill up and block it).

    A pair whose client connected but failed is run once more with a fresh server: perftest's own end-of-test
    handshake over its socket (``ethernet_read_keys: Couldn't read remote address``) fails now and then on an
    emulated guest after a measurement that went through; a second failure fails the test."""
    for attempt in (1, 2):
        client, server_rc = _pair(lines, port + 100 * (attempt - 1), log, timeout)
        if client.returncode == 0 or attempt == 2:
            break
    assert client.returncode == 0, (f"{' '.join(client.args)}: rc {client.returncode}\n{client.stdout}"
                                    f"{client.stderr}\nserver (rc {server_rc}):\n{log.read_text()}")
    return log.read_text(), client.stdout


def _pair(lines: PerftestLines, port: int, log: Path, timeout: float) -> tuple[subprocess.CompletedProcess[str], int]:
    """One server and its client: the client is retried while it cannot connect (the server not listening yet),
    never after it connected; (the client's last run, the server's exit status)."""
    server_cmd = [*shlex.split(lines.server), "-p", str(port)]
    client_cmd = [*shlex.split(lines.client)[:-1], "-p", str(port), "127.0.0.1"]
    with open(log, "w") as fh:  # the child keeps its own copy of the file
        server = subprocess.Popen(server_cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while True:
            time.sleep(0.5)
            client = subprocess.run(client_cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                    timeout=max(1.0, deadline - time.monotonic()), check=False)
            refused = client.returncode != 0 and "Couldn't connect" in client.stderr
            if not refused or server.poll() is not None or time.monotonic() > deadline:
                break
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return client, server.returncode


def _field(out: str, name: str) -> str:
    m = re.search(rf"{re.escape(name)}\s*:\s*(\S+)", out)
    assert m, f"perftest printed no {name!r}:\n{out}"
    return m.group(1)


@pytest.mark.parametrize("name", CASES)
def test_the_perftest_lines_of_a_simulated_case_run_on_rxe_with_its_flow_shape(device: str, name: str,
                                                                                tmp_path: Path) -> None:
    workload = _case(name)
    rxe = device_of(f"verbs:{device}:1:1")
    lines = perftest_lines(workload, {"a": rxe, "b": rxe}, duration_s=2.0)
    assert lines.expressible, lines.lacks
    server_out, out = _run(lines, 18600 + CASES.index(name), tmp_path / "server.log")
    f = workload.flows[0]
    title = (TITLES[lines.tool] + (" Bidirectional" if mirrored(workload) else "")
             + (" Post List" if f.batch > 1 else "") + " BW Test")
    assert re.search(rf"^\s*{title}\s*$", out, re.MULTILINE), out
    assert _field(out, "Connection type") == f.transport
    assert int(_field(out, "Number of qps")) == f.qps
    assert int(_field(out, "TX depth")) == f.sq_depth
    if f.opcode == "SEND":  # the receiving side prints its receive queue
        assert int(_field(server_out, "RX depth")) == f.rq_depth
    if f.batch > 1:
        assert int(_field(out, "Post List")) == f.batch
    assert int(_field(out, "CQ Moderation")) == f.signal_every
    assert _field(out, "Mtu") == f"{f.mtu}[B]"
    rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s*$", out, re.MULTILINE)
    assert rows and int(rows[-1][0]) == f.sizes[0], out
