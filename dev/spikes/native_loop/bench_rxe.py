"""Spike benchmark for issue #33, run where an RDMA device is up (the soft-RoCE guest):

    bash .ci/softroce.sh --exec 'python3 dev/spikes/native_loop/bench_rxe.py'

One RC QP pair in loopback on one device, 64 B RDMA WRITEs. For each case it runs, alternating, a pure-Python
pyverbs loop (the engine's technique: prebuilt SendWR chain reused, poll 64 at a time), the native loop on the
SAME pyverbs QP/CQ through their raw pointers (handles.py), and perftest's ib_write_bw with the same shape.
Cases: single WRs, one completion per 100, send queue 128 (perftest's defaults: -s 64 -D 3) and post lists of 32
(-l 32). The native module is built first if it is missing (build.py); if it cannot be, only Python runs.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(HERE), str(ROOT)]

import pyverbs.enums as e  # noqa: E402  (rdma-core <= 49; a product would go through collie's compat)
from handles import HandleError, raw_handles  # noqa: E402
from pyverbs.addr import AHAttr, GlobalRoute  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, SendWR  # noqa: E402

SIZE = 64


class Pair:
    def __init__(self, dev: str, gid_index: int, depth: int) -> None:
        self.ctx = Context(name=dev)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 1024)
        self.rcq = CQ(self.ctx, 64)
        cap = QPCap(max_send_wr=depth, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        self.a = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.rcq, cap=cap, sq_sig_all=0))
        self.b = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.rcq, rcq=self.rcq, cap=cap, sq_sig_all=0))
        acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        self.src = MR(self.pd, 65536, acc)
        self.dst = MR(self.pd, 65536, acc)
        self.src.write(b"\xab" * SIZE, SIZE, 0)
        self.dst.write(bytes(SIZE), SIZE, 0)
        gid = self.ctx.query_gid(1, gid_index)
        for x, y in ((self.a, self.b), (self.b, self.a)):
            attr = QPAttr()
            attr.qp_access_flags = acc
            attr.port_num = 1
            attr.pkey_index = 0
            x.to_init(attr)
            attr.path_mtu = e.IBV_MTU_1024
            attr.dest_qp_num = y.qp_num
            attr.rq_psn = 0
            attr.max_dest_rd_atomic = 1
            attr.min_rnr_timer = 12
            attr.ah_attr = AHAttr(port_num=1, is_global=1, gr=GlobalRoute(dgid=gid, sgid_index=gid_index))
            x.to_rtr(attr)
            attr.sq_psn = 0
            attr.timeout = 14
            attr.retry_cnt = 7
            attr.rnr_retry = 7
            attr.max_rd_atomic = 1
            x.to_rts(attr)


def python_loop(p: Pair, seconds: float, batch: int, every: int, depth: int) -> tuple[int, float]:
    """The engine's technique in its simplest form: one prebuilt chain, flags set on the signalled WR."""
    chain = []
    for _ in range(batch):
        w = SendWR(wr_id=0, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(p.src.buf, SIZE, p.src.lkey)])
        w.set_wr_rdma(p.dst.rkey, p.dst.buf)
        chain.append(w)
    for x, y in itertools.pairwise(chain):
        x.next_wr = y
    last, head, qp, cq = chain[-1], chain[0], p.a, p.cq
    sig, ok = e.IBV_SEND_SIGNALED, e.IBV_WC_SUCCESS
    seq = done = it = 0
    t0 = time.monotonic()
    deadline = t0 + seconds
    stopping, t1, at = False, 0.0, 0
    while True:
        it += 1
        if not stopping and it & 15 == 0 and time.monotonic() >= deadline:
            stopping, t1, at = True, time.monotonic(), done
        if (not stopping or seq % every) and seq - done + batch <= depth:
            end = seq + batch
            last.wr_id = end
            last.send_flags = sig if end % every == 0 else 0
            qp.post_send(head)
            seq = end
        _, wcs = cq.poll(64)
        for wc in wcs:
            if wc.status != ok:
                raise RuntimeError(f"WC status {wc.status}")
            done = wc.wr_id
        if stopping and done == seq:
            break
    return at, t1 - t0


def native_loop(mod, p: Pair, h, seconds: float, batch: int, every: int, depth: int) -> tuple[int, float]:
    wrs, secs, _posts, _polls, err, _ = mod.run_write(h.qp, h.cq, p.src.buf, p.src.lkey, p.dst.buf, p.dst.rkey,
                                                       SIZE, seconds, batch, every, depth)
    if err:
        raise RuntimeError(f"native loop error {err}")
    return wrs, secs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=os.environ.get("COLLIE_SOFTROCE_DEVICE", "rxe0"))
    ap.add_argument("--gid-index", type=int, default=1)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-perftest", action="store_true")
    args = ap.parse_args()
    try:
        import _native_loop as mod
    except ImportError:
        from build import build

        mod = None
        if build():
            import _native_loop as mod
    depth = 128
    p = Pair(args.device, args.gid_index, depth)
    h = None
    if mod is not None:
        try:
            h = raw_handles(p.ctx, p.pd, p.cq, p.a, p.src)
        except HandleError as exc:
            print(f"warning: raw handles not usable ({exc}); the pure-Python loop only", file=sys.stderr)
        else:
            print(f"handles ({h.route}): ctx {h.context:#x} pd {h.pd:#x} cq {h.cq:#x} qp {h.qp:#x} mr {h.mr:#x}")
            print(f"C reads the QP: {mod.qp_info(h.qp)} (pyverbs: qp_num {p.a.qp_num}, state {p.a.qp_state})")
    perf_mod = None
    if not args.no_perftest:
        from bench import engine_vs_perftest as perf_mod
    cases = [("64 B single WRs, 1 CQE/100, sq 128", 1, 100, ["-s", "64", "-D", str(int(args.duration))]),
             ("64 B post lists of 32", 32, 32, ["-s", "64", "-l", "32", "-n", str(32 * 2000)])]
    for ci, (name, batch, every, pargs) in enumerate(cases):
        best = {"python": 0.0, "native": 0.0, "perftest": 0.0}
        for r in range(args.repeat):
            wrs, secs = python_loop(p, args.duration, batch, every, depth)
            best["python"] = max(best["python"], wrs / secs)
            if h is not None:
                wrs, secs = native_loop(mod, p, h, args.duration, batch, every, depth)
                best["native"] = max(best["native"], wrs / secs)
            if perf_mod is not None:
                pr = perf_mod.perftest(args.device, args.gid_index, 18600 + 10 * ci + r, pargs)
                best["perftest"] = max(best["perftest"], pr.ops_s)
        py, nat, pf = best["python"], best["native"], best["perftest"]
        print(f"{name:<36} python {py:>10,.0f}/s  native {nat:>10,.0f}/s ({nat / py:4.2f}x python"
              + (f", {nat / pf:4.2f}x perftest" if pf else "") + f")  perftest {pf:>10,.0f}/s", flush=True)
    # the destination really changed (the WRITEs landed): a cheap sanity check, not verification
    print("destination holds the source's bytes:", p.dst.read(SIZE, 0) == b"\xab" * SIZE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
