"""``collie sim``: the built-in simulated subsystems (profiles) and the shared quirk library."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

from collie.cli.render import emit, format_option, render, render_notes
from collie.errors import InputError
from collie.importers.perftest import parse_perftest
from collie.importers.shape import sweep_rows
from collie.importers.text import decode_log
from collie.model.rocev2 import PRIORITIES
from collie.storage.files import write_atomic
from collie.targets.sim import builtin_names, library, load_profile
from collie.targets.sim.fit import FitResult, FitRow, SweepRow, fit_profile, profile_text, rows_in_words
from collie.targets.sim.model import HOST_PRIORITY, HOST_TCLASS
from collie.targets.sim.profile import PROFILE_DIR, Profile, parse_profile
from collie.targets.sim.quirks import describe_quirks
from collie.tomlio import read_bytes, read_text


def _summary(p: Profile) -> dict[str, Any]:
    return {
        "name": p.name,
        "nic": p.nic.model,
        "line_rate_gbps": p.nic.line_rate_gbps,
        "msg_rate_mpps": p.nic.msg_rate_mpps,
        "dialect": p.dialect,
        "quirks": len(p.active_quirks),
        "description": p.description,
    }


def _details(p: Profile) -> dict[str, Any]:
    return {
        "name": p.name,
        "description": p.description,
        "source": p.source,
        "dialect": p.dialect,
        "hosts": list(p.hosts),
        "nic": p.nic.model,
        "firmware": p.nic.firmware,
        "driver": p.nic.driver,
        "line_rate_gbps": p.nic.line_rate_gbps,
        "msg_rate_mpps": p.nic.msg_rate_mpps,
        "loopback_gbps": p.nic.loopback_gbps,
        "base_latency_us": p.nic.base_latency_us,
        "limits": f"max_qp {p.nic.max_qp}, max_mr {p.nic.max_mr}, max_sge {p.nic.max_sge}, "
                  f"max_qp_wr {p.nic.max_qp_wr}",
        "pcie": f"Gen{p.pcie.gen} x{p.pcie.width} ({p.pcie.gbps:.0f} Gb/s usable), MPS {p.pcie.mps}, "
                f"relaxed ordering {'on' if p.pcie.relaxed_ordering else 'off'}",
        "host": f"{p.host.cpu_model or p.host.cpu_vendor} ({p.host.cpu_vendor}), {p.host.sockets} socket(s), "
                f"NIC on node {p.host.nic_numa_node}, kernel {p.host.kernel}",
        "nics": _nic_words(p),
        "gpu": p.host.gpu,
        "caches": f"QPC {p.cache.qpc_entries}, MPT {p.cache.mpt_entries}, MTT {p.cache.mtt_entries}, "
                  f"RX WQE {p.cache.rx_wqe_entries} entries",
        "noise": p.model.noise,
        "fabric": _fabric_words(p),
    }


def _nic_words(p: Profile) -> str:
    """The NICs of each host, in words."""
    n, shared = p.host.nics, p.host.shared_pcie_gbps
    if n == 1:
        return "one per host"
    return (f"{n} per host ({p.hosts[0]}, {p.hosts[0]}/1, ...), each its own device, port and PCIe link"
            + (f"; they share {shared:g} Gb/s of PCIe to the host's memory" if shared else ""))


def _fabric_words(p: Profile) -> str:
    """The switches under the hosts, in words."""
    f = p.fabric
    if f is None:
        return "one ideal non-blocking switch (nothing paused or dropped)"
    leaves = -(-len(p.hosts) // f.hosts_per_leaf)
    return (f"{leaves} leaf switch(es) of up to {f.hosts_per_leaf} hosts, {f.spines} spine(s), uplinks of "
            f"{f.uplink_gbps:g} Gb/s, {_pfc_words(f.protected)}, " + (
                f"a shared buffer of {f.buffer_mib:g} MiB per switch (a congested queue holds {f.alpha:g} x the "
                f"free buffer, {f.lossy_alpha:g} x on a priority PFC does not protect)" if f.buffer_mib else
                f"a congested queue holds {f.xoff_kib:g} KiB"))


def _pfc_words(lossless: frozenset[int]) -> str:
    """Which priorities PFC protects, in words."""
    if not lossless:
        return "no PFC (drops)"
    if len(lossless) == PRIORITIES:
        return "PFC (lossless)"
    listed = ", ".join(map(str, sorted(lossless)))
    return (f"PFC on priorit{'y' if len(lossless) == 1 else 'ies'} {listed} (lossless; the others drop; "
            f"a flow's priority is its traffic class / 32, the hosts' own class {HOST_TCLASS} is priority "
            f"{HOST_PRIORITY})")


def _quirk_rows(p: Profile) -> list[dict[str, Any]]:
    rows = [{"state": "active", **r} for r in describe_quirks(p.active_quirks)]
    for q, why in p.inactive_quirks:
        rows.extend({"state": f"inactive: {why}", **r} for r in describe_quirks([q]))
    return rows


@click.group("sim")
def sim() -> None:
    """The simulated RDMA subsystem: built-in profiles and the quirk library."""


@sim.command("profiles")
@format_option
def profiles(fmt: str) -> None:
    """List the built-in simulated subsystems (use one with --target sim:NAME)."""
    rows = [_summary(load_profile(n)) for n in builtin_names()]
    emit(render(rows, fmt, title="built-in simulator profiles"))


@sim.command("show")
@click.argument("profile")
@format_option
def show(profile: str, fmt: str) -> None:
    """Print one profile (a built-in NAME or a PATH.toml): its subsystem and its quirks.

    table and json print both; csv and jsonl print one row per quirk.
    """
    p = load_profile(profile)
    quirks = _quirk_rows(p)
    if fmt == "json":
        emit(render({**_details(p), "quirks": quirks}, "json"))
    elif fmt == "table":
        emit(render(_details(p), "table", title=f"profile {p.name}"))
        if quirks:
            emit(render(quirks, "table", title="quirks",
                        columns=["id", "anomaly", "state", "when", "pause", "throughput", "diagnostics"]))
        else:
            emit("no quirks: the base model alone")
    else:
        emit(render([{"profile": p.name, **q} for q in quirks], fmt))


@sim.command("quirks")
@format_option
def quirks(fmt: str) -> None:
    """List the shared quirk library (each published anomaly declared once)."""
    rows = describe_quirks(list(library().values()))
    emit(render(rows, fmt, title="quirk library", columns=["id", "anomaly", "summary", "when", "pause",
                                                            "throughput", "loss", "diagnostics"]))


_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: A row is "within" when simulated / published is within this of 1 (bench/fidelity.py's margin).
_MARGIN = 0.10


def _sweep(logs: tuple[Path, ...], verb: str | None) -> list[SweepRow]:
    """Every row of every log (each read and parsed; a log that is not perftest output is refused)."""
    rows: list[SweepRow] = []
    for path in logs:
        parsed = parse_perftest(decode_log(read_bytes(path, "a perftest log")), str(path))
        found = sweep_rows(parsed, verb)
        if not any(r.problem is None for r in found):
            why = next((r.problem for r in found if r.problem), "it has no result rows")
            hint = " (give --verb when the log has no test title)" if verb is None and found and all(
                r.test == "untitled run" for r in found) else ""
            raise InputError(f"{path}: the simulator cannot express its rows: {why}{hint}")
        rows.extend(found)
    return rows


def _base_text(spec: str, profile: Profile) -> str:
    """The text of the base profile (a built-in name or a path)."""
    if spec in builtin_names() and not spec.endswith(".toml"):
        return read_text(PROFILE_DIR / f"{spec}.toml", "a profile TOML file")
    return read_text(Path(spec).expanduser(), "a profile TOML file")


def _figure(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _tables(result: FitResult) -> list[tuple[str, list[dict[str, Any]]]]:
    """One table of rows per log."""
    logs: dict[str, list[FitRow]] = {}
    for r in result.rows:
        logs.setdefault(r.row.source, []).append(r)
    return [(source, _table_rows(rows)) for source, rows in logs.items()]


def _table_rows(rows: list[FitRow]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        ratio = r.ratio()
        out.append({"line": r.row.line, "test": r.row.test, "bytes": r.row.size,
                    "unit": r.row.unit.value, "published": _figure(r.row.published), "before": _figure(r.before),
                    "after": _figure(r.after), "ratio": "-" if ratio is None else f"{ratio:.2f}",
                    "fitted": ", ".join(r.fitted) or r.row.problem or ""})
    return out


def _document(result: FitResult, out: Path) -> dict[str, Any]:
    return {
        "profile": str(out), "base": result.base.name,
        "fitted": [{"name": c.name, "value": c.value, "base": c.base, "rows": rows_in_words(c.rows), "note": c.note}
                   for c in result.fitted],
        "kept": [{"name": k.name, "value": k.value, "reason": k.reason} for k in result.kept],
        "rows": [{"log": r.row.source, "line": r.row.line, "test": r.row.test, "bytes": r.row.size,
                  "unit": r.row.unit.value, "published": r.row.published, "before": r.before, "after": r.after,
                  "ratio": r.ratio(), "fitted": list(r.fitted), "problem": r.row.problem} for r in result.rows],
        "within": {"margin": _MARGIN, "before": result.within(_MARGIN, after=False),
                   "after": result.within(_MARGIN), "rows": len(result.rows)},
    }


@sim.command("fit")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path), help="The profile to write (.toml).")
@click.option("--base", default="cx6-200g", show_default=True,
              help="The profile whose other constants the fitted one keeps (a built-in NAME or a PATH.toml).")
@click.option("--name", default=None, help="The fitted profile's name (default: the output file's name).")
@click.option("--verb", type=click.Choice(["WRITE", "READ", "SEND"]), default=None,
              help="The verb of runs whose log printed no test title (their connection and QPs: RC, 1 unless "
                   "printed).")
@click.option("--force", is_flag=True, help="Overwrite the output file if it exists.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Output format.")
def fit(logs: tuple[Path, ...], out: Path, base: str, name: str | None, verb: str | None, force: bool,
        fmt: str) -> None:
    """Fit a profile's NIC constants to your own perftest sweep (LOG...: ib_write_bw -a and the other tools).

    The line rate comes from the plateau (rows of 1 MiB on), a QP's own rate (qp_wr_ns + doorbell_ns) from
    rows of at most 256 B, the packet rate from small rows on many QPs, the base latency from latency rows; each by
    bisection on the simulator itself. Everything else is the base's. The profile written says what was fitted
    from which rows; use it with --target sim:OUT.toml.
    """
    if out.exists() and not force:
        raise InputError(f"{out}: already exists; give --force to overwrite it")
    if not out.parent.is_dir():
        raise InputError(f"{out}: its folder {out.parent} does not exist")
    profile_name = name if name is not None else out.stem if _PROFILE_NAME.match(out.stem) else "fitted"
    if not _PROFILE_NAME.match(profile_name):
        raise InputError(f"--name: {profile_name!r} is not a profile name (letters, digits, '.', '_', '-')")
    base_profile = load_profile(base)
    base_text = _base_text(base, base_profile)
    rows = _sweep(logs, verb)
    result = fit_profile(rows, base_profile)
    names = [p.name for p in logs]
    text = profile_text(base_text, result, name=profile_name, logs=names,
                        description=f"{base_profile.name} fitted to {', '.join(names)} (collie sim fit)")
    written = parse_profile(text, str(out))  # what --target sim:OUT.toml will load
    if written.nic != result.profile.nic:
        raise InputError(f"{base}: the base profile's [nic] table could not be rewritten with the fitted values "
                         "(write it one key = value a line)")
    try:
        write_atomic(out, text)
    except OSError as exc:
        raise InputError(f"{out}: cannot be written ({exc.strerror or exc})") from None
    if fmt == "json":
        emit(render(_document(result, out), "json"))
        return
    for source, table in _tables(result):
        emit(render(table, "table", title=f"{source}: published, before ({result.base.name}) and after ({out})"))
    notes = [(c.name, f"{c.base:g} -> {c.value:g}", "; ".join(x for x in (rows_in_words(c.rows), c.note) if x))
             for c in result.fitted]
    notes += [(k.name, f"kept {k.value}" if k.value else "kept", k.reason) for k in result.kept]
    emit(render_notes(notes))
    emit(f"{result.within(_MARGIN, after=False)} of {len(result.rows)} rows within {_MARGIN:.0%} before, "
         f"{result.within(_MARGIN)} after; wrote {out} (use --target sim:{out})")
