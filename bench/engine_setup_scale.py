"""Setup at scale (#33): collie's verbs resources for thousands of QPs and MRs, created, connected, destroyed.

Run it where an RDMA device is up, e.g. inside the soft-RoCE guest:
``bash .ci/softroce.sh --exec 'python3 bench/engine_setup_scale.py --device rxe0'``.

Each step is one RC WRITE flow of ``qps`` QPs and ``mrs`` MRs (per side, as a workload states them: a local run
creates both sides on the device, so ``2 x qps`` QPs and ``2 x mrs`` MRs), run by collie's own worker code,
``worker.run_job`` exactly as a one-process run calls it (``WorkerResources`` builds and connects, the engine
posts its receives, a short interval of traffic (``--traffic`` s, no warm-up) proves every QP connected, the
drain, teardown), in a fresh Python process per step so its peak RSS is its own. Printed per step:

* create+connect seconds: ``run_job``'s ``setup_s`` (context, PD, MRs, CQs, QPs, INIT -> RTR -> RTS, the
  prebuilt work requests, the engine's per-QP records, the first receives);
* destroy seconds: from ``WorkerResources.close`` (closing the context destroys every QP, MR, CQ) until
  ``run_job`` returned (the Python objects freed);
* RSS when set up (VmRSS), its growth over the process before ``run_job``, peak RSS (VmHWM, ``ru_maxrss``),
  RSS after the teardown, and how much the guest's ``MemAvailable`` fell (kernel memory of the device too);
* growth per QP (the QP series) and per MR (the MR series), in KiB, counting every object on the device.

At the end, a least-squares fit of the RSS growth and of the setup time over all steps that ran:
``a x QPs + b x MRs + c``. With ``--baseline`` every step also runs the same objects through pyverbs alone
(one CQ per side, no work requests, no engine): the floor collie's own code adds to.

The device's limits (``ibv_query_device``: max_qp, max_mr, max_cqe) and the machine's memory are printed
first. A step the limits check refuses (``check_workload``, e.g. pinned memory) is reported and skipped unless
``--force``; a step that fails (an error, the OOM killer) is reported with its reason and the run goes on.
Prints a JSON line with every row at the end. perftest's ``ib_write_bw -q N`` wall time for 1,000 QPs is in
``bench/engine_vs_perftest.py``; it is not repeated here.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collie.errors import TargetError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload

A, B = Endpoint("a"), Endpoint("b")
#: (series, qps, mrs) of the default steps, per side of one flow.
DEFAULT_STEPS = (
    ("qps", 500, 1), ("qps", 1250, 1), ("qps", 2500, 1), ("qps", 5000, 1), ("qps", 10000, 1),
    ("mrs", 1, 5000), ("mrs", 1, 25000), ("mrs", 1, 50000), ("mrs", 1, 100000),
    ("both", 5000, 25000),
)
KIB = 1024
MIB = 1024 * 1024


def status_kib(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` (VmRSS, VmHWM)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def meminfo_kib(field: str) -> int:
    with open("/proc/meminfo", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def step_flow(qps: int, mrs: int, args: argparse.Namespace) -> Flow:
    return Flow(A, B, sizes=(min(64, args.mr_size),), qps=qps, mrs=mrs, mr_size=args.mr_size,
                sq_depth=args.sq_depth, signal_every=args.signal_every, batch=args.batch, transport=args.transport,
                opcodes=("SEND",) if args.transport == "UD" else ("WRITE",))


# ---- one step, in its own process -----------------------------------------------------------------------------
def child_collie(qps: int, mrs: int, args: argparse.Namespace) -> dict[str, Any]:
    """One step through ``run_job``; the close of ``WorkerResources`` is timed by a subclass that only records."""
    import collie.targets.verbs.worker as worker_mod
    from collie.targets.verbs.compat import load
    from collie.targets.verbs.job import Timing
    from collie.targets.verbs.resources import WorkerResources
    from collie.targets.verbs.spec import parse_spec
    from collie.targets.verbs.target import plan_jobs

    pv = load()
    spec = parse_spec(f"{args.device}:{args.port}:{args.gid_index}")
    flow = step_flow(qps, mrs, args)
    timing = Timing(warmup=0.0, duration=args.traffic)
    (job,) = plan_jobs(Workload(flows=(flow,)), spec, timing, False, 1, None, [0])
    job = replace(job, collector=None)  # the port's counters are not what this measures
    marks: dict[str, float] = {}

    class TimedResources(WorkerResources):
        def close(self) -> None:
            marks.setdefault("close_start", time.perf_counter())
            super().close()

    class Sync:
        def prepared(self, endpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return []

        def ready(self, setup_s: float) -> int:
            marks["setup_s"] = setup_s
            marks["rss_ready"] = status_kib("VmRSS")
            marks["avail_ready"] = meminfo_kib("MemAvailable")
            return time.monotonic_ns()

    worker_mod.WorkerResources = TimedResources  # type: ignore[misc]
    rss0, avail0 = status_kib("VmRSS"), meminfo_kib("MemAvailable")
    report = worker_mod.run_job(pv, job, Sync())
    end = time.perf_counter()
    return {"setup_s": marks["setup_s"], "destroy_s": end - marks["close_start"], "rss0_kib": rss0,
            "rss_ready_kib": marks["rss_ready"], "hwm_kib": status_kib("VmHWM"),
            "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "rss_after_kib": status_kib("VmRSS"),
            "avail_drop_kib": avail0 - marks["avail_ready"], "errors": list(report.errors)[:3],
            "completed_wrs": sum(s.wrs for s in report.stats)}


def child_pyverbs(qps: int, mrs: int, args: argparse.Namespace) -> dict[str, Any]:
    """The same objects through pyverbs alone: MRs, one CQ per side, QPs of the same capabilities, RC to RTS."""
    from collie.targets.verbs.compat import load

    pv = load()
    e = pv.e
    flow = step_flow(qps, mrs, args)
    rss0, avail0 = status_kib("VmRSS"), meminfo_kib("MemAvailable")
    t0 = time.perf_counter()
    ctx = pv.device.Context(name=args.device)
    try:
        pd = pv.pd.PD(ctx)
        cqe = min(int(ctx.query_device().max_cqe), 4096)
        gid = ctx.query_gid(args.port, args.gid_index)
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        mr_list = [pv.mr.MR(pd, flow.mr_size, access) for _ in range(2 * mrs)]
        scq, rcq = pv.cq.CQ(ctx, cqe), pv.cq.CQ(ctx, cqe)
        ud = flow.transport == "UD"
        qp_type = e.IBV_QPT_UD if ud else e.IBV_QPT_RC
        ccap = pv.qp.QPCap(max_send_wr=flow.sq_depth, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)
        scap = pv.qp.QPCap(max_send_wr=1, max_recv_wr=flow.rq_depth if ud else 1, max_send_sge=1, max_recv_sge=1)
        pairs = [(pv.qp.QP(pd, pv.qp.QPInitAttr(qp_type=qp_type, scq=scq, rcq=scq, cap=ccap, sq_sig_all=0)),
                  pv.qp.QP(pd, pv.qp.QPInitAttr(qp_type=qp_type, scq=rcq, rcq=rcq, cap=scap, sq_sig_all=0)))
                 for _ in range(qps)]

        def to_rts(qp: Any, dest: int) -> None:
            attr = pv.qp.QPAttr()
            attr.port_num = args.port
            attr.pkey_index = 0
            if ud:
                attr.qkey = 0x11111111
                attr.sq_psn = 0
                qp.to_rts(attr)
                return
            attr.qp_access_flags = access
            qp.to_init(attr)
            attr.path_mtu = e.IBV_MTU_1024
            attr.dest_qp_num = dest
            attr.rq_psn = 0
            attr.max_dest_rd_atomic = 1
            attr.min_rnr_timer = 20
            attr.ah_attr = pv.addr.AHAttr(port_num=args.port, is_global=1,
                                          gr=pv.addr.GlobalRoute(dgid=gid, sgid_index=args.gid_index))
            qp.to_rtr(attr)
            attr.sq_psn = 0
            attr.timeout, attr.retry_cnt, attr.rnr_retry, attr.max_rd_atomic = 14, 7, 6, 1
            qp.to_rts(attr)

        for c, s in pairs:
            to_rts(c, s.qp_num)
            to_rts(s, c.qp_num)
        setup_s = time.perf_counter() - t0
        rss_ready, avail_ready = status_kib("VmRSS"), meminfo_kib("MemAvailable")
        t1 = time.perf_counter()
    finally:
        ctx.close()
    del pairs, mr_list
    end = time.perf_counter()
    return {"setup_s": setup_s, "destroy_s": end - t1, "rss0_kib": rss0, "rss_ready_kib": rss_ready,
            "hwm_kib": status_kib("VmHWM"), "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "rss_after_kib": status_kib("VmRSS"), "avail_drop_kib": avail0 - avail_ready, "errors": []}


def run_child(args: argparse.Namespace) -> int:
    kind, qps, mrs = args.child[0], int(args.child[1]), int(args.child[2])
    try:
        out = (child_collie if kind == "collie" else child_pyverbs)(qps, mrs, args)
    except Exception as exc:  # the parent reports it as the step's failure
        out = {"failed": f"{type(exc).__name__}: {exc}"}
    print("RESULT " + json.dumps(out), flush=True)
    return 0


# ---- the coordinator ---------------------------------------------------------------------------------------
def child_args(args: argparse.Namespace) -> list[str]:
    return ["--device", args.device, "--port", str(args.port), "--gid-index", str(args.gid_index),
            "--mr-size", str(args.mr_size), "--sq-depth", str(args.sq_depth), "--signal-every",
            str(args.signal_every), "--batch", str(args.batch), "--traffic", str(args.traffic), "--transport",
            args.transport]


def measure(kind: str, qps: int, mrs: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, str(qps), str(mrs), *child_args(args)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.step_timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"failed": f"no result within {args.step_timeout:g} s"}
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            out: dict[str, Any] = json.loads(line[len("RESULT "):])
            out["wall_s"] = wall
            return out
    how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    tail = (proc.stderr.strip().splitlines() or [""])[-1]
    return {"failed": f"{how} after {wall:.0f} s{' (the OOM killer?)' if proc.returncode == -9 else ''} {tail}"}


def fit(rows: list[dict[str, Any]], key: str) -> dict[str, float] | None:
    """Least squares ``key ~ a x qp_objects + b x mr_objects + c`` over the rows that ran, on the counts that vary
    among them (``None`` when fewer than three distinct steps ran)."""
    import numpy as np

    ok = [r for r in rows if "failed" not in r]
    if len({(r["qp_objects"], r["mr_objects"]) for r in ok}) < 3:
        return None
    cols = [c for c in ("qp_objects", "mr_objects") if len({r[c] for r in ok}) > 1]
    x = np.array([[*(r[c] for c in cols), 1.0] for r in ok], dtype=float)
    y = np.array([float(r[key]) for r in ok])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return {**{c: float(v) for c, v in zip(cols, coef[:-1], strict=True)}, "const": float(coef[-1])}


def parse_step(text: str) -> tuple[str, int, int]:
    qps, _, mrs = text.lower().partition("x")
    q, m = int(qps), int(mrs or 1)
    return ("both" if q > 1 and m > 1 else "qps" if q > 1 else "mrs"), q, m


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="rxe0")
    ap.add_argument("--port", type=int, default=1)
    ap.add_argument("--gid-index", type=int, default=1)
    ap.add_argument("--step", action="append", type=parse_step, default=None, metavar="QPSxMRS",
                    help="a step (qps and mrs per side of the flow, e.g. 10000x1); repeat; default: the series")
    ap.add_argument("--series", default="qps,mrs,both", help="which of the default series to run (comma list)")
    ap.add_argument("--transport", choices=("RC", "UD"), default="RC")
    ap.add_argument("--mr-size", type=int, default=4096, help="bytes of every MR (default one page)")
    ap.add_argument("--sq-depth", type=int, default=128)
    ap.add_argument("--signal-every", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--traffic", type=float, default=0.05, help="seconds of traffic between setup and teardown")
    ap.add_argument("--baseline", action="store_true", help="also run every step through pyverbs alone")
    ap.add_argument("--force", action="store_true", help="run steps the limits check refuses")
    ap.add_argument("--step-timeout", type=float, default=600.0)
    ap.add_argument("--child", nargs=3, metavar=("KIND", "QPS", "MRS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return run_child(args)

    from collie.targets.verbs.compat import load
    from collie.targets.verbs.device import query
    from collie.targets.verbs.limits import check_workload
    from collie.targets.verbs.spec import parse_spec

    try:
        pv = load()
        facts = query(pv, parse_spec(f"{args.device}:{args.port}:{args.gid_index}"))
    except TargetError as exc:
        print(f"engine_setup_scale: {exc}", file=sys.stderr)
        return 2
    lim = facts.limits
    mem_total, mem_avail = meminfo_kib("MemTotal"), meminfo_kib("MemAvailable")
    print(f"device {args.device} ({facts.driver or 'RDMA'}): max_qp {lim.max_qp}, max_mr {lim.max_mr}, max_cqe "
          f"{lim.max_cqe}, max_qp_wr {lim.max_qp_wr}, max_cq {lim.max_cq}; memory {mem_total // KIB} MiB, "
          f"available {mem_avail // KIB} MiB; RLIMIT_MEMLOCK "
          f"{'unlimited' if lim.memlock_bytes is None else lim.memlock_bytes}"
          f"{f'; pyverbs {pv.version}' if pv.version else ''}",
          flush=True)
    opcode = "SEND" if args.transport == "UD" else "WRITE"
    print(f"flow: {args.transport} {opcode} 64 B, mr_size {args.mr_size}, sq_depth {args.sq_depth}, signal_every "
          f"{args.signal_every}, batch {args.batch}; {args.traffic:g} s of traffic; one worker process", flush=True)
    header = (f"{'step':<6} {'run':<8} {'QPs':>7} {'MRs':>7} {'setup s':>8} {'destroy s':>9} {'RSS MiB':>8} "
              f"{'grow MiB':>8} {'peak MiB':>8} {'after':>6} {'avail-':>7} {'KiB/QP':>7} {'KiB/MR':>7}  note")
    print(header, flush=True)
    rows: list[dict[str, Any]] = []
    wanted = set(args.series.split(","))
    for series, qps, mrs in args.step or [s for s in DEFAULT_STEPS if s[0] in wanted]:
        problems = check_workload(Workload(flows=(step_flow(qps, mrs, args),)), lim)
        for kind in ("collie", *(("pyverbs",) if args.baseline else ())):
            row: dict[str, Any] = {"series": series, "run": kind, "qps": qps, "mrs": mrs, "qp_objects": 2 * qps,
                                   "mr_objects": 2 * mrs}
            if problems and not args.force:
                row["failed"] = f"refused by the limits check: {problems[0]}"
            else:
                row.update(measure(kind, qps, mrs, args))
            rows.append(row)
            if "failed" in row:
                print(f"{series:<6} {kind:<8} {2 * qps:>7} {2 * mrs:>7}  {row['failed']}", flush=True)
                continue
            grow = (row["rss_ready_kib"] - row["rss0_kib"]) / KIB
            row["grow_mib"] = grow
            per_qp = f"{grow * KIB / (2 * qps):7.2f}" if series == "qps" else f"{'-':>7}"
            per_mr = f"{grow * KIB / (2 * mrs):7.2f}" if series == "mrs" else f"{'-':>7}"
            note = "; ".join(row["errors"]) if row.get("errors") else ""
            print(f"{series:<6} {kind:<8} {2 * qps:>7} {2 * mrs:>7} {row['setup_s']:8.2f} {row['destroy_s']:9.2f} "
                  f"{row['rss_ready_kib'] / KIB:8.0f} {grow:8.0f} {row['hwm_kib'] / KIB:8.0f} "
                  f"{row['rss_after_kib'] / KIB:6.0f} {row['avail_drop_kib'] / KIB:7.0f} {per_qp} {per_mr}  {note}",
                  flush=True)
    for kind in ("collie", *(("pyverbs",) if args.baseline else ())):
        mine = [r for r in rows if r["run"] == kind]
        for key, unit, scale in (("grow_mib", "KiB", KIB), ("setup_s", "ms", 1000.0), ("destroy_s", "ms", 1000.0),
                                 ("avail_drop_kib", "KiB", 1.0)):
            got = fit(mine, key)
            if got:
                terms = [f"{got[c] * scale:.3f} {unit} per {c.split('_')[0].upper()}" for c in got if c != "const"]
                const = got["const"] * scale / (KIB if unit == "KiB" else 1000.0)
                print(f"fit {kind} {key}: {' + '.join(terms)} + {const:.2f} {'MiB' if unit == 'KiB' else 's'}")
    print(json.dumps({"bench": "engine_setup_scale", "device": args.device, "max_qp": lim.max_qp,
                      "max_mr": lim.max_mr, "max_cqe": lim.max_cqe, "mem_total_kib": mem_total, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
