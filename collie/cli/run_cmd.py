"""``collie run``: one experiment on a target, printed like perftest's bandwidth table."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from collie.cli.render import emit, format_option, render
from collie.cli.verdict_view import moved_counters, sentence, symptom_rows, throughput_rows, verdict_dict
from collie.errors import InputError
from collie.events import counted
from collie.model.collective import CollectiveResult, RankFigure
from collie.model.patterns import Pattern
from collie.model.units import format_bytes
from collie.model.workload import Workload
from collie.oracle import Oracle, Verdict
from collie.services import run_workload
from collie.targets.base import RunResult
from collie.targets.kind import TargetSpec
from collie.targets.registry import DEFAULT_TARGET, parse_target


def parsed_target(ctx: click.Context, param: click.Parameter, value: str | None) -> TargetSpec | None:
    """The --target spec, parsed by the target registry (a file it names made absolute: what a campaign and its
    cases record)."""
    return None if value is None else parse_target(value)


target_option = click.option("--target", "target_spec", default=DEFAULT_TARGET, show_default=True,
                             callback=parsed_target,
                             help="sim, sim:PROFILE, sim:PATH.toml, verbs:DEVICE[:PORT[:GID]], remote:HOSTS.toml.")
accept_keys_option = click.option("--accept-new-host-keys", is_flag=True,
                                  help="remote: targets only: record the key of a host that has none recorded yet "
                                       "(a changed key is never accepted).")
seed_option = click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                           help="Random seed (simulator noise, search stream).")


def output_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """An output folder's or file's option: an empty string, which would name the current folder, is refused."""
    if value is None:
        return None
    if not value.strip():
        raise InputError(f"{param.opts[0]} is empty; give a folder or file name")
    return Path(value)


pace_option = click.option("--pace", type=click.FloatRange(min=0.0), default=0.0, show_default=True,
                           help="Simulator only: sleep this fraction of each experiment's duration (demos).")


def flow_rows(workload: Workload, result: RunResult) -> list[dict[str, Any]]:
    """One perftest-like row per flow."""
    rows = []
    for fr in result.flows:
        f = workload.flows[fr.flow]
        rows.append({
            "flow": fr.flow,
            "path": f"{fr.client}->{fr.server}",
            "verb": f"{f.transport} {f.verbs}",
            "bytes": ", ".join(format_bytes(s) for s in f.sizes),
            "qps": f.qps,
            "BW [Gb/s]": round(fr.bps / 1e9, 3),
            "MsgRate [Mpps]": round(fr.msg_rate / 1e6, 4),
            "pkt rate [Mpps]": round(fr.pps / 1e6, 4),
            "lat p50 [us]": round(fr.lat_p50_us, 2),
            "lat p99 [us]": round(fr.lat_p99_us, 2),
        })
    return rows


def churn_rows(workload: Workload, result: RunResult) -> list[dict[str, Any]]:
    """One row per flow and kind of control-path churn it asks (MR, QP): the rate asked and achieved per side,
    and the mean and p99 latency of one operation (empty: the workload churns nothing)."""
    rows = []
    for fr in result.flows:
        f = workload.flows[fr.flow]
        for kind, asked in (("MR", f.mr_churn), ("QP", f.qp_churn)):
            if asked:
                k = kind.lower()
                rows.append({"flow": fr.flow, "churn": kind, "asked [/s]": asked,
                             "done [/s]": round(getattr(fr, f"{k}_churn_per_s"), 1),
                             "mean [us]": round(getattr(fr, f"{k}_churn_us"), 1),
                             "p99 [us]": round(getattr(fr, f"{k}_churn_p99_us"), 1)})
    return rows


#: Ranks ``collie run`` lists one by one; a larger pattern shows the slowest this many.
SHOWN_RANKS = 32


def collective_rows(pattern: Pattern, figures: CollectiveResult) -> list[dict[str, Any]]:
    """The collective's row, as nccl-tests prints one (size, time, algbw, busbw) with the spread and slowest link."""
    return [{
        "pattern": pattern.kind.value,
        "ranks": pattern.ranks,
        "size": format_bytes(pattern.size),
        "time [us]": round(figures.time_s * 1e6, 1) if figures.time_s < math.inf else "never ended",
        "algbw [GB/s]": round(figures.algbw_gbs, 2),
        "busbw [GB/s]": round(figures.busbw_gbs, 2),
        "median link [GB/s]": round(figures.median_link_gbs, 2),
        "spread": f"{figures.spread:.1%}",
        "slowest link": f"{figures.slowest_link.name} ({figures.slowest_link.gbs:.2f} GB/s)",
    }]


def rank_rows(figures: CollectiveResult) -> list[dict[str, Any]]:
    """One row per rank (the slowest :data:`SHOWN_RANKS` of a larger pattern): what it sent and received per
    second of its own transfers."""
    ranks = list(figures.ranks)
    if len(ranks) > SHOWN_RANKS:
        ranks = sorted(ranks, key=_worst_gbs)[:SHOWN_RANKS]
    return [{"rank": r.rank, "host": r.host, "send [GB/s]": round(r.send_gbs, 2), "recv [GB/s]": round(r.recv_gbs, 2)}
            for r in ranks]


def _worst_gbs(rank: RankFigure) -> float:
    return min((x for x in (rank.send_gbs, rank.recv_gbs) if x > 0), default=0.0)


def host_rows(result: RunResult) -> list[dict[str, Any]]:
    """One row per host: NIC rates and the counters that moved."""
    return [{
        "host": h.host,
        "tx [Gb/s]": round(h.tx_bps / 1e9, 3),
        "rx [Gb/s]": round(h.rx_bps / 1e9, 3),
        "tx [Mpps]": round(h.tx_pps / 1e6, 4),
        "rx [Mpps]": round(h.rx_pps / 1e6, 4),
        "counters": len(h.counters),
    } for h in result.hosts]


@click.command()
@target_option
@click.option("--workload", "workload_file", required=True, type=click.Path(path_type=Path),
              help="Workload file (TOML or JSON), e.g. workloads/examples/rc-write-64k.toml.")
@click.option("--duration", type=click.FloatRange(min=0.1, max=3600.0), default=5.0, show_default=True,
              help="Seconds of measured traffic.")
@seed_option
@pace_option
@click.option("--verdict/--no-verdict", "judge", default=True, show_default=True,
              help="Judge the run with the oracle (costs two short calibration runs per direction kind the "
                   "workload needs, at most the run's own duration each).")
@accept_keys_option
@format_option
def run(target_spec: TargetSpec, workload_file: Path, duration: float, seed: int, pace: float, judge: bool,
        accept_new_host_keys: bool, fmt: str) -> None:
    """Run one experiment and print its result and the oracle's verdict on it.

    The verdict says whether the run is anomalous, which symptoms (PFC pause, low throughput, loss,
    retransmission, receiver not ready) at which end, how far past its threshold each is against the target's
    calibrated ceilings and clean baseline, and the counters that moved on each host, with where they were read.

    \b
    Exit codes: 0 done; 2 a usage mistake (a bad workload or inventory file, a workload the target cannot run);
    3 a remote target whose hosts cannot be reached.
    """
    ran = run_workload(target_spec, workload_file, duration=duration, seed=seed, pace=pace, judge=judge,
                       accept_new_host_keys=accept_new_host_keys)
    workload, result, oracle, verdict = ran.workload, ran.result, ran.oracle, ran.verdict
    if fmt == "json":
        out: dict[str, Any] = {"workload": workload.to_dict(), "key": workload.key(), **result.to_dict()}
        if ran.collective is not None:
            out["collective"] = collective_dict(ran.collective)
        if verdict is not None and oracle is not None:
            out["verdict"] = verdict_dict(verdict, oracle, result.duration_s)
            out["calibration"] = {"runs": ran.calibration, "ceilings": oracle.ceilings.to_dict(),
                                  "baseline": dict(oracle.baseline)}
        emit(render(out, "json"))
        return
    title = f"{workload.name or workload_file.name} on {target_spec} ({duration:g} s, setup {result.setup_s:.2f} s)"
    if workload.pattern is not None and ran.collective is not None and fmt == "table":
        emit(render(collective_rows(workload.pattern, ran.collective), fmt, title=f"{title}: the collective"))
        emit(render(rank_rows(ran.collective), fmt, title="ranks"))
        title = "connections"
    emit(render(flow_rows(workload, result), fmt, title=title))
    if fmt == "table":
        emit(render(host_rows(result), fmt, title="hosts"))
        churn = churn_rows(workload, result)
        if churn:
            emit(render(churn, fmt, title="control-path churn (per side)"))
        for err in result.errors:
            emit(f"error: {err}")
        if verdict is not None:
            emit_verdict(verdict, oracle, result.duration_s, ran.calibration)


def collective_dict(figures: CollectiveResult) -> dict[str, Any]:
    """The collective's figures for ``--format json`` (a time that never ended is null)."""
    out = asdict(figures)
    out["time_s"] = figures.time_s if figures.time_s < math.inf else None
    return out


def emit_verdict(verdict: Verdict, oracle: Oracle | None, duration_s: float, calibration: int) -> None:
    """Print a verdict as tables: its sentence, the symptoms, throughput against the ceilings, moved counters."""
    cost = f" (calibrated with {counted(calibration, 'run')})" if calibration else ""
    emit(f"verdict: {sentence(verdict)}{cost}")
    if verdict.symptoms:
        emit(render([{k: v for k, v in r.items() if k not in ("value", "threshold")}
                     for r in symptom_rows(verdict, oracle)], "table", title="symptoms"))
    emit(render(throughput_rows(verdict), "table", title="throughput against the calibrated ceilings"))
    moved = moved_counters(verdict, duration_s)
    if moved:
        emit(render(moved, "table", title="counters that moved"))
    else:
        emit("counters that moved: none of the counters the oracle reads")
