"""``collie run``: one experiment on a target, printed like perftest's bandwidth table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from collie.cli.render import emit, format_option, render
from collie.errors import TargetError
from collie.targets import DEFAULT_TARGET, open_target
from collie.targets.base import RunResult, Unsupported
from collie.units import format_size
from collie.workload import Workload

target_option = click.option("--target", "target_spec", default=DEFAULT_TARGET, show_default=True,
                             help="sim, sim:PROFILE, sim:PATH.toml, verbs:DEVICE[:PORT[:GID]], remote:HOSTS.toml.")
accept_keys_option = click.option("--accept-new-host-keys", is_flag=True,
                                  help="remote: targets only: record the key of a host that has none recorded yet "
                                       "(a changed key is never accepted).")
seed_option = click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                           help="Random seed (simulator noise, search stream).")
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
            "verb": f"{f.transport} {f.opcode}",
            "bytes": " ".join(format_size(s) for s in f.sizes),
            "qps": f.qps,
            "BW [Gb/s]": round(fr.bps / 1e9, 3),
            "MsgRate [Mpps]": round(fr.msg_rate / 1e6, 4),
            "pkt rate [Mpps]": round(fr.pps / 1e6, 4),
            "lat p50 [us]": round(fr.lat_p50_us, 2),
            "lat p99 [us]": round(fr.lat_p99_us, 2),
        })
    return rows


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
@accept_keys_option
@format_option
def run(target_spec: str, workload_file: Path, duration: float, seed: int, pace: float, accept_new_host_keys: bool,
        fmt: str) -> None:
    """Run one experiment and print its result.

    \b
    Exit codes: 0 done; 2 a usage mistake (a bad workload or inventory file, a workload the target cannot run);
    3 a remote target whose hosts cannot be reached.
    """
    workload = Workload.load(workload_file)
    target = open_target(target_spec, seed=seed, pace=pace, accept_new_host_keys=accept_new_host_keys)
    with target:
        try:
            result = target.run(workload, duration)
        except Unsupported as exc:
            raise TargetError(f"{target_spec} cannot run this workload: {exc}") from None
    if fmt == "json":
        emit(render({"workload": workload.to_dict(), "key": workload.key(), **result.to_dict()}, "json"))
        return
    title = f"{workload.name or workload_file.name} on {target_spec} ({duration:g} s, setup {result.setup_s:.2f} s)"
    emit(render(flow_rows(workload, result), fmt, title=title))
    if fmt == "table":
        emit(render(host_rows(result), fmt, title="hosts"))
        for err in result.errors:
            emit(f"error: {err}")
