"""collie's verbs engine next to perftest's ``ib_write_bw`` on the same device, in one run.

Run it where an RDMA device is up, e.g. inside the soft-RoCE guest: ``.ci/softroce.sh --bench``
(or ``python3 bench/engine_vs_perftest.py --device rxe0`` on a machine with a device and perftest).

Pairs, each printed with its ratio (collie / perftest):
    * bandwidth at 64 KiB: ``ib_write_bw -s 65536 -D 3`` vs one RC QP writing 64 KiB messages;
    * message rate at 64 B: ``ib_write_bw -s 64 -D 3`` vs single WRs, and ``ib_write_bw -s 64 -l 32 -n N``
      (post lists of 32; ``-n`` a multiple of 32) vs chains of 32 in one worker process, and in two worker
      processes with one and with two QPs each;
    * setup of 1,000 RC QPs: the wall time of ``ib_write_bw -q 1000 -t 32 -s 64 -n 100`` (perftest needs
      ``-t 32`` there: with its defaults it cannot create the CQs beyond 327 QPs on rxe) vs the wall time of a
      collie run that creates, connects and destroys 1,000 QP pairs around a 0.05 s interval (no warm-up).
Goals (issue #33): >= 1.0x perftest at 64 KiB, on single WRs and on post lists in one and two processes, and
1,000-QP setup <= 0.5x perftest's wall time. Each collie row is measured with each traffic loop (``--loops``,
default ``native,python``: the native C loop, and the Python loop it replaces), side by side in one run.
Loopback on one device: perftest's server and client both run here, connected over 127.0.0.1. collie uses
perftest's defaults where they matter (send queue 128, one completion per 100 WRs for single WRs). Each pair
is measured ``--repeat`` times alternating perftest and collie, and the best of each is kept (throughput on a
shared, emulated machine only ever loses to noise).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.verbs import VerbsTarget
from collie.targets.verbs.native import ENV
from collie.targets.verbs.spec import parse_spec

A, B = Endpoint("a"), Endpoint("b")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$")


@dataclass(frozen=True)
class Perf:
    """One perftest run: average bandwidth in MB/s (perftest's unit), message rate in ops/s, wall seconds."""

    mb_s: float
    ops_s: float
    wall_s: float


def perftest(device: str, gid: int, port: int, args: list[str], timeout: float = 240) -> Perf:
    """Run ``ib_write_bw`` server and client in loopback and parse the client's result row.

    ``wall_s`` runs from the server's start to the client's end (both sides' setup, as collie's wall time
    covers both sides). The client is started 0.5 s after the server and restarted every 0.5 s while it
    cannot connect yet (a server with many QPs listens only after creating them).
    """
    base = ["ib_write_bw", "-d", device, "-i", "1", "-x", str(gid), "-F", "-p", str(port), *args]
    t0 = time.perf_counter()
    # the server's output is not read: with many QPs it prints a line per QP, enough to fill a pipe and block
    server = subprocess.Popen(base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL)
    try:
        deadline = t0 + timeout
        while True:
            time.sleep(0.5)
            client = subprocess.run([*base, "127.0.0.1"], capture_output=True, text=True,
                                    timeout=max(1.0, deadline - time.perf_counter()), stdin=subprocess.DEVNULL,
                                    check=False)
            if client.returncode == 0 or server.poll() is not None or time.perf_counter() > deadline:
                break
        wall = time.perf_counter() - t0
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    for line in client.stdout.splitlines():
        m = _ROW.match(line)
        if m:
            return Perf(mb_s=float(m.group(4)), ops_s=float(m.group(5)) * 1e6, wall_s=wall)
    raise RuntimeError(f"no result row from {' '.join(base)}: rc {client.returncode}\n{client.stdout}"
                       f"{client.stderr}")


def collie(t: VerbsTarget, flow: Flow, duration: float) -> tuple[float, float, float, bool]:
    """(MB/s, ops/s, wall seconds, engine_bound) of one collie run."""
    t0 = time.perf_counter()
    r = t.run(Workload(flows=(flow,)), duration)
    wall = time.perf_counter() - t0
    if r.errors:
        raise RuntimeError(f"collie run had errors: {r.errors}")
    f = r.flows[0]
    return f.bps / 8 / 1e6, f.msg_rate, wall, r.engine_bound


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="rxe0")
    ap.add_argument("--gid-index", type=int, default=1)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--qps", type=int, default=1000, help="QPs for the setup pair")
    ap.add_argument("--repeat", type=int, default=2, help="measurements of each side of a pair (best kept)")
    ap.add_argument("--only", choices=("bandwidth", "rate", "setup"), default=None, help="run one group of pairs")
    ap.add_argument("--loops", default="native,python",
                    help="collie's traffic loops to measure, in this order (default native,python)")
    args = ap.parse_args()
    if shutil.which("ib_write_bw") is None:
        print("ib_write_bw not found: install perftest", file=sys.stderr)
        return 2
    loops = [x.strip() for x in args.loops.split(",") if x.strip()]
    if not loops or set(loops) - {"native", "python"}:
        print(f"--loops {args.loops!r}: name native, python or both", file=sys.stderr)
        return 2
    dev, gid, d = args.device, args.gid_index, args.duration
    rows: list[dict[str, object]] = []

    def pair(what: str, unit: str, perf: float, ours: dict[str, tuple[float, bool]], goal: str,
             note: str = "") -> None:
        row: dict[str, object] = {"what": what, "unit": unit, "perftest": perf, "goal": goal, "note": note}
        text = f"{what:<44} perftest {perf:>12.1f} {unit:<6}"
        for loop, (value, eb) in ours.items():
            ratio = value / perf if perf else float("nan")
            row[loop] = value
            row[f"{loop}_ratio"] = ratio
            row[f"{loop}_engine_bound"] = eb
            text += f" {loop} {value:>12.1f} {ratio:5.2f}x{' (engine_bound)' if eb else ''}"
        rows.append(row)
        print(f"{text}  (goal {goal}){'  ' + note if note else ''}", flush=True)

    n32 = 32 * 2000
    rep = max(1, args.repeat)
    targets: dict[str, VerbsTarget] = {}

    def best(perf_args: list[str], flow: Flow, duration: float, port: int, timeout: float = 240,
             low: bool = False) -> tuple[Perf, dict[str, tuple[float, float, float, bool]]]:
        """Alternate perftest and each loop ``rep`` times; keep the best of each (lowest wall time if ``low``)."""
        ps: list[Perf] = []
        cs: dict[str, list[tuple[float, float, float, bool]]] = {loop: [] for loop in loops}
        for i in range(rep):
            print(f"  ... ib_write_bw {' '.join(perf_args)}", file=sys.stderr, flush=True)
            ps.append(perftest(dev, gid, port + i, perf_args, timeout=timeout))
            for loop in loops:
                print(f"  ... collie ({loop} loop) {flow.opcode} {flow.sizes} qps={flow.qps} batch={flow.batch} "
                      f"processes={flow.processes}", file=sys.stderr, flush=True)
                cs[loop].append(collie(targets[loop], flow, duration))
        if low:
            return min(ps, key=lambda p: p.wall_s), {k: min(v, key=lambda c: c[2]) for k, v in cs.items()}
        return max(ps, key=lambda p: p.ops_s), {k: max(v, key=lambda c: c[1]) for k, v in cs.items()}

    with contextlib.ExitStack() as opened:  # every target closed on every way out
        for loop in loops:
            os.environ[ENV] = loop
            targets[loop] = opened.enter_context(VerbsTarget(parse_spec(f"{dev}:1:{gid}"), warmup=0.5))
            if targets[loop].describe().details.get("traffic_loop") != loop:
                print(f"the {loop} loop is not available here", file=sys.stderr)
                return 2
        if args.only in (None, "bandwidth"):
            p, cs = best(["-s", "65536", "-D", str(int(d))], Flow(A, B, sizes=(65536,), sq_depth=128, signal_every=100),
                         d, 18515)
            pair("bandwidth 64 KiB, 1 RC QP", "MB/s", p.mb_s, {k: (c[0], c[3]) for k, c in cs.items()}, ">= 1.0x")

        if args.only in (None, "rate"):
            p, cs = best(["-s", "64", "-D", str(int(d))], Flow(A, B, sizes=(64,), sq_depth=128, signal_every=100), d,
                         18525)
            pair("64 B, single WRs (-s 64 -D 3)", "ops/s", p.ops_s, {k: (c[1], c[3]) for k, c in cs.items()}, ">= 1.0x")
            p, cs = best(["-s", "64", "-l", "32", "-n", str(n32)],
                         Flow(A, B, sizes=(64,), batch=32, sq_depth=128, signal_every=32), d, 18535)
            pair("64 B, post lists of 32 (-l 32), 1 process", "ops/s", p.ops_s,
                 {k: (c[1], c[3]) for k, c in cs.items()}, ">= 1.0x")
            for qps in (2, 4):
                flow = Flow(A, B, sizes=(64,), batch=32, sq_depth=128, signal_every=32, qps=qps, processes=2)
                p, cs = best(["-s", "64", "-l", "32", "-n", str(n32)], flow, d, 18545 + qps)
                pair(f"64 B, post lists of 32 (-l 32), 2 proc. x {qps // 2} QP", "ops/s", p.ops_s,
                     {k: (c[1], c[3]) for k, c in cs.items()}, ">= 1.0x")

        if args.only in (None, "setup"):
            q = args.qps
            for t in targets.values():
                t.warmup = 0.0  # the row times setup and teardown around a 0.05 s interval, as perftest's -n 100
            p, cs = best(["-q", str(q), "-t", "32", "-s", "64", "-n", "100"],
                         Flow(A, B, sizes=(64,), qps=q, sq_depth=32, signal_every=32), 0.05, 18565, timeout=600,
                         low=True)
            setup = targets[loops[-1]].last_details
            note = f"collie create+connect {setup.worker_setup_s[0]:.2f} s (last run)" if setup else ""
            pair(f"setup of {q} RC QPs (wall, s)", "s", p.wall_s, {k: (c[2], False) for k, c in cs.items()}, "<= 0.5x",
                 note)
    print(json.dumps({"bench": "engine_vs_perftest", "device": dev, "loops": loops, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
