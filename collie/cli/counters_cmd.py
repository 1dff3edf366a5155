"""``collie counters``: show, watch, diff and parse NIC counters from upstream sources (sysfs, ethtool, rdma).

Thin over :mod:`collie.collectors`; every table goes through the one renderer. Problems reading single
counters (permission, ``N/A``) and detected resets are warnings on stderr; user mistakes are one sentence and
exit 2.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from collie.cli.render import emit, format_option, render
from collie.collectors.catalog import Catalog, guess_dialect, load_catalog
from collie.collectors.ethtool import EthtoolStats, ethtool_snapshot, parse_ethtool, read_ethtool
from collie.collectors.host import HostCollector, SourceUse
from collie.collectors.normalize import normalize
from collie.collectors.rdma_stat import parse_rdma_stat
from collie.collectors.snapshot import Delta, Snapshot, delta, read_snapshot_file
from collie.collectors.sysfs import list_ports, read_sysfs_path
from collie.errors import InputError
from collie.tomlio import read_text

PARSE_KINDS = ("ethtool", "sysfs", "rdma-stat")
TABLE_COLUMNS = ("device", "name", "value", "source", "kind", "unit", "role")


def _warn(lines: Iterable[str]) -> None:
    for line in lines:
        click.echo(f"collie: warning: {line}", err=True)


def _num(v: float | None) -> float | int | None:
    if v is None:
        return None
    if isinstance(v, int):
        return v
    return int(v) if v.is_integer() and abs(v) < 2**63 else v


def _catalog(driver: str | None, names: Iterable[str], hint: str = "") -> Catalog | None:
    if driver is not None:
        return load_catalog(driver)
    dialect = guess_dialect(names, hint)
    return load_catalog(dialect) if dialect else None


def _spec_cols(cat: Catalog | None, name: str) -> dict[str, Any]:
    spec = cat.lookup(name) if cat is not None else None
    if spec is None:
        return {"kind": None, "unit": None, "role": None, "priority": None}
    return {"kind": spec.kind, "unit": spec.unit, "role": spec.role, "priority": spec.priority}


def _snapshot_rows(snaps: Sequence[Snapshot], cats: Mapping[str, Catalog | None], nonzero: bool,
                   role: str | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for s in snaps:
        cat = cats.get(s.device)
        for name, value in s.values.items():
            if nonzero and not value:
                continue
            cols = _spec_cols(cat, name)
            if role is not None and cols["role"] != role:
                continue
            rows.append({"device": s.device, "name": name, "value": _num(value),
                         "source": s.sources.get(name), **cols, "timestamp": s.timestamp})
    return rows


def _emit_rows(rows: list[dict[str, Any]], fmt: str, title: str, columns: Sequence[str]) -> None:
    if fmt == "table":
        emit(render(rows, fmt, title=title, columns=columns) if rows else f"{title}: no counters to show")
    else:
        emit(render(rows, fmt))


role_option = click.option("--role", default=None, help="Only counters with this catalog role (e.g. loss).")
driver_option = click.option("--driver", "driver", default=None, metavar="DIALECT",
                             help="Counter dialect (mlx5, bnxt_re, irdma, rxe); guessed when left out.")


@click.group("counters")
def counters() -> None:
    """NIC counters from upstream sources: sysfs, ethtool -S and rdma statistic (no vendor tool)."""


@dataclass(frozen=True)
class _Reader:
    """What ``show`` and ``watch`` read on each pass: one host collector per RDMA port (or, with ``--netdev`` on a
    host without RDMA devices, that netdev's ``ethtool -S`` alone), and the catalog of each."""

    collectors: tuple[HostCollector, ...]
    netdev_only: str | None
    driver: str | None

    def read(self) -> tuple[list[Snapshot], dict[str, Catalog | None]]:
        snaps = [c.snapshot() for c in self.collectors]
        if self.netdev_only is not None:
            snaps.append(read_ethtool(self.netdev_only))
        cats: dict[str, Catalog | None] = {}
        for c, snap in zip(self.collectors, snaps, strict=False):
            cats[snap.device] = load_catalog(self.driver) if self.driver else c.catalog(snap)
        if self.netdev_only is not None:
            cats[snaps[-1].device] = _catalog(self.driver, snaps[-1].values)
        return snaps, cats


def _reader(sysfs_root: str, device: str | None, port: int | None, netdev: str | None, driver: str | None,
            ethtool: bool | None, netlink: bool | None) -> _Reader:
    """The collectors for the options: ``--netdev``/``--netlink`` require that source; without them, a live
    host (``--sysfs-root /``) reads every source it has and a copied sysfs tree reads sysfs alone."""
    live = Path(sysfs_root).resolve() == Path("/")
    try:
        refs = list_ports(sysfs_root, device)
    except InputError:
        if netdev is None or device is not None:
            raise
        return _Reader((), netdev, driver)
    if port is not None:
        refs = [r for r in refs if r.port == port]
        if not refs:
            raise InputError(f"port {port} not found on {device or 'any RDMA device'}")
    if netdev is not None and len(refs) > 1:
        raise InputError(f"--netdev {netdev} names the netdev of one port, but {len(refs)} ports match "
                         f"({', '.join(r.label for r in refs)}); give --device and --port too")

    def use(flag: bool | None, explicit: bool) -> SourceUse:
        if flag is False:
            return SourceUse.OFF
        if flag or explicit:
            return SourceUse.REQUIRED
        return SourceUse.AUTO if live else SourceUse.OFF

    collectors = tuple(HostCollector(r.device, r.port, root=sysfs_root, netdev=netdev,
                                     ethtool=use(ethtool, netdev is not None), netlink=use(netlink, False))
                       for r in refs)
    return _Reader(collectors, None, driver)


def _warn_unreadable(snaps: Iterable[Snapshot]) -> None:
    _warn(f"{s.device}: {source} not read: {why}" for s in snaps for source, why in s.unreadable.items())


netlink_option = click.option("--netlink/--no-netlink", default=None,
                              help="Read 'rdma -j statistic show' for counters sysfs lacks (optional ones); "
                                   "default: on a live host, off on a copied --sysfs-root.")
ethtool_option = click.option("--ethtool/--no-ethtool", default=None,
                              help="Read 'ethtool -S' of the netdev behind each port (PFC pause, PHY, PCIe); "
                                   "default: on a live host, off on a copied --sysfs-root.")
netdev_option = click.option("--netdev", default=None,
                             help="The netdev to read with 'ethtool -S' (default: the one behind the port).")


sysfs_root_option = click.option("--sysfs-root", default="/", show_default=True,
                                 type=click.Path(file_okay=False),
                                 help="Folder laid out like / (for tests or a copied sysfs tree).")


@counters.command("show")
@click.option("--device", default=None, help="RDMA device (e.g. mlx5_0); default: all.")
@click.option("--port", type=int, default=None, help="Port number; default: all.")
@netdev_option
@ethtool_option
@netlink_option
@sysfs_root_option
@driver_option
@role_option
@click.option("--nonzero", is_flag=True, help="Only counters whose value is not 0.")
@click.option("--save", type=click.Path(dir_okay=False), default=None,
              help="Also write the snapshot(s) as JSON, for 'collie counters diff'.")
@format_option
def show(device: str | None, port: int | None, netdev: str | None, ethtool: bool | None, netlink: bool | None,
         sysfs_root: str, driver: str | None, role: str | None, nonzero: bool, save: str | None, fmt: str) -> None:
    """Current counter values of every RDMA port from every source (sysfs, ethtool -S, rdma statistic), with
    each counter's source, kind and role."""
    snaps, cats = _reader(sysfs_root, device, port, netdev, driver, ethtool, netlink).read()
    _warn(p for s in snaps for p in s.problems)
    _warn_unreadable(snaps)
    if save is not None:
        _save(save, snaps)
    _emit_rows(_snapshot_rows(snaps, cats, nonzero, role), fmt, "counters", TABLE_COLUMNS)


def _save(path: str, snaps: Sequence[Snapshot]) -> None:
    import json

    try:
        Path(path).write_text(json.dumps([s.to_dict() for s in snaps], indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write the snapshot ({exc.strerror or exc})") from None


def _delta_rows(d: Delta, before: Snapshot | None, after: Snapshot | None, cat: Catalog | None,
                nonzero: bool, role: str | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, value in d.values.items():
        cols = _spec_cols(cat, name)
        if role is not None and cols["role"] != role:
            continue
        if nonzero and not value:
            continue
        is_gauge = cols["kind"] == "gauge"
        row: dict[str, Any] = {"device": d.device, "name": name}
        if before is not None and after is not None:
            row["before"] = _num(before.values.get(name))
            row["after"] = _num(after.values.get(name))
        row["delta"] = None if is_gauge else _num(value)
        row["per_s"] = None if value is None else (value if is_gauge else value / d.seconds)
        row.update(cols)
        rows.append(row)
    return rows


def _normalized_rows(d: Delta, cat: Catalog | None, line_rate_bps: float | None) -> list[dict[str, Any]]:
    if cat is None:
        raise InputError(f"{d.device}: cannot tell which driver these counters come from; give --driver")
    n = normalize(d.values, d.seconds, cat, line_rate_bps=line_rate_bps)
    rows = []
    for key, value in n.to_dict().items():
        if isinstance(value, dict):
            for k, v in value.items():
                rows.append({"device": d.device, "quantity": f"{key}.{k}", "value": v})
        elif isinstance(value, list):
            if value:
                rows.append({"device": d.device, "quantity": key, "value": "; ".join(map(str, value))})
        else:
            rows.append({"device": d.device, "quantity": key, "value": value})
    return rows


view_option = click.option("--view", type=click.Choice(["raw", "normalized"]), default="raw",
                           show_default=True,
                           help="raw: per-counter deltas and rates; normalized: the oracle's view.")
line_rate_option = click.option("--line-rate", "line_rate_gbps", type=float, default=None, metavar="GBPS",
                                help="Port speed in Gb/s, to estimate pause ratios from XOFF frame counts.")


@counters.command("watch")
@click.option("--device", default=None, help="RDMA device (e.g. mlx5_0); default: all.")
@click.option("--port", type=int, default=None, help="Port number; default: all.")
@netdev_option
@ethtool_option
@netlink_option
@sysfs_root_option
@driver_option
@role_option
@click.option("--interval", type=click.FloatRange(min=0.01), default=1.0, show_default=True,
              help="Seconds between readings.")
@click.option("--count", type=click.IntRange(min=1), default=None,
              help="Stop after this many intervals (default: until Ctrl-C).")
@click.option("--all", "show_all", is_flag=True, help="Show counters that did not change too.")
@click.option("--summary", is_flag=True,
              help="At the end (with --count), the mean and spread of each counter's per-second rate.")
@view_option
@line_rate_option
@format_option
def watch(device: str | None, port: int | None, netdev: str | None, ethtool: bool | None, netlink: bool | None,
          sysfs_root: str, driver: str | None, role: str | None, interval: float, count: int | None,
          show_all: bool, summary: bool, view: str, line_rate_gbps: float | None, fmt: str) -> None:
    """Rates per second, one table per interval."""
    if summary and count is None:
        raise InputError("--summary needs --count N (the summary is printed after the last interval)")
    reader = _reader(sysfs_root, device, port, netdev, driver, ethtool, netlink)
    prev, cats = reader.read()
    _warn(p for s in prev for p in s.problems)
    _warn_unreadable(prev)
    history: dict[str, list[Snapshot]] = {s.device: [s] for s in prev}
    k = 0
    while count is None or k < count:
        time.sleep(interval)
        cur, _ = reader.read()
        k += 1
        for s in cur:
            history.setdefault(s.device, []).append(s)
        by_dev = {s.device: s for s in prev}
        for s in cur:
            before = by_dev.get(s.device)
            if before is None:
                continue
            d = delta(before, s, max(s.timestamp - before.timestamp, 1e-9), cats.get(s.device))
            _warn(r.sentence() for r in d.resets)
            title = f"{s.device}: interval {k} ({d.seconds:.2f} s)"
            if view == "normalized":
                _emit_rows(_normalized_rows(d, cats.get(s.device), _bps(line_rate_gbps)), fmt, title,
                           ("device", "quantity", "value"))
            else:
                rows = _delta_rows(d, None, None, cats.get(s.device), not show_all, role)
                for r in rows:
                    r["interval"] = k
                _emit_rows(rows, fmt, title, ("device", "name", "delta", "per_s", "kind", "role"))
        sys.stdout.flush()
        prev = cur
    if summary:
        _emit_summary(history, cats, show_all, role, fmt)


def _emit_summary(history: Mapping[str, list[Snapshot]], cats: Mapping[str, Catalog | None], show_all: bool,
                  role: str | None, fmt: str) -> None:
    from collie.collectors.sampling import summarize

    rows: list[dict[str, Any]] = []
    for dev, readings in history.items():
        if len(readings) < 2:
            continue
        cat = cats.get(dev)
        sampled = summarize(readings, cat)
        for name, st in sampled.stats.items():
            cols = _spec_cols(cat, name)
            if (role is not None and cols["role"] != role) or (not show_all and st.maximum == 0 == st.minimum):
                continue
            rows.append({"device": dev, "name": name, "mean_per_s": st.mean, "stdev": st.stdev,
                         "min": st.minimum, "max": st.maximum, "samples": st.samples, **cols})
    _emit_rows(rows, fmt, "summary over all intervals",
               ("device", "name", "mean_per_s", "stdev", "min", "max", "samples", "kind", "role"))


def _bps(gbps: float | None) -> float | None:
    return None if gbps is None else gbps * 1e9


@counters.command("diff")
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@click.option("--seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Interval length (default: from the snapshots' timestamps).")
@driver_option
@role_option
@click.option("--nonzero", is_flag=True, help="Only counters that changed.")
@view_option
@line_rate_option
@format_option
def diff(before: str, after: str, seconds: float | None, driver: str | None, role: str | None, nonzero: bool,
         view: str, line_rate_gbps: float | None, fmt: str) -> None:
    """Deltas between two saved snapshots (from 'collie counters show --save'), honouring counter kinds."""
    a_list, b_list = read_snapshot_file(before), read_snapshot_file(after)
    a_by = {s.device: s for s in a_list}
    pairs = [(a_by[b.device], b) for b in b_list if b.device in a_by]
    if not pairs:
        devs_b = ", ".join(s.device for s in b_list) or "none"
        raise InputError(f"{before} and {after} have no device in common (devices: "
                         f"{', '.join(sorted(a_by)) or 'none'} vs {devs_b})")
    for a, b in pairs:
        cat = _catalog(driver, [*a.values, *b.values], b.device)
        d = delta(a, b, seconds, cat)
        _warn(r.sentence() for r in d.resets)
        title = f"{b.device}: {d.seconds:g} s"
        if view == "normalized":
            _emit_rows(_normalized_rows(d, cat, _bps(line_rate_gbps)), fmt, title,
                       ("device", "quantity", "value"))
        else:
            _emit_rows(_delta_rows(d, a, b, cat, nonzero, role), fmt, title,
                       ("device", "name", "before", "after", "delta", "per_s", "kind", "role"))


def _read_input(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    return read_text(file, "a counter dump (only --kind sysfs reads folders)")


@counters.command("parse")
@click.argument("file")
@click.option("--kind", "kind", type=click.Choice(PARSE_KINDS), required=True,
              help="What FILE holds: ethtool -S text, a sysfs tree or grep dump, or rdma statistic output.")
@driver_option
@role_option
@click.option("--queues", is_flag=True, help="ethtool: also list per-queue counters.")
@click.option("--nonzero", is_flag=True, help="Only counters whose value is not 0.")
@format_option
def parse(file: str, kind: str, driver: str | None, role: str | None, queues: bool, nonzero: bool,
          fmt: str) -> None:
    """Parse a saved counter dump (FILE, or - for stdin) and show it with each counter's kind and role."""
    if kind == "sysfs":
        if file == "-":
            from collie.collectors.sysfs import parse_grep_dump

            snaps = parse_grep_dump(sys.stdin.read(), "<stdin>")
        else:
            snaps = read_sysfs_path(file)
        _warn(p for s in snaps for p in s.problems)
    elif kind == "rdma-stat":
        snaps = parse_rdma_stat(_read_input(file), file)
    else:
        stats = parse_ethtool(_read_input(file), file)
        snaps = [ethtool_snapshot(stats, Path(file).name)]
        if queues:
            _emit_rows(_ethtool_rows(stats, snaps[0], driver, nonzero, role), fmt, f"{file}",
                       ("queue", "name", "value", "kind", "unit", "role"))
            return
    cats = {s.device: _catalog(driver, s.values, s.device) for s in snaps}
    title = "; ".join(f"{s.device}: {c.driver if c else 'driver unknown'}" for s, c in
                      zip(snaps, cats.values(), strict=True))
    _emit_rows(_snapshot_rows(snaps, cats, nonzero, role), fmt, title, TABLE_COLUMNS)


def _ethtool_rows(stats: EthtoolStats, snap: Snapshot, driver: str | None, nonzero: bool,
                  role: str | None) -> list[dict[str, Any]]:
    cat = _catalog(driver, snap.values)
    rows = [{"queue": None, **r} for r in _snapshot_rows([snap], {snap.device: cat}, nonzero, role)]
    if role is None:
        for q, vals in sorted(stats.queues.items()):
            for name, value in vals.items():
                if nonzero and not value:
                    continue
                rows.append({"queue": q, "device": snap.device, "name": name, "value": _num(value),
                             "kind": None, "unit": None, "role": None, "priority": None,
                             "timestamp": snap.timestamp})
    return rows


@counters.command("catalog")
@click.argument("dialect", required=False)
@role_option
@click.option("--diagnostic", "only_diag", is_flag=True, help="Only diagnostic counters.")
@format_option
def catalog_cmd(dialect: str | None, role: str | None, only_diag: bool, fmt: str) -> None:
    """What collie knows about each counter of DIALECT (without DIALECT: the list of dialects)."""
    from collie.collectors.catalog import available_dialects

    if dialect is None:
        rows = []
        for d in available_dialects():
            cat = load_catalog(d)
            rows.append({"dialect": d, "counters": len(cat), "diagnostic": len(cat.diagnostic()),
                         "device_prefixes": list(cat.device_prefixes), "description": cat.description})
        _emit_rows(rows, fmt, "counter catalogs",
                   ("dialect", "counters", "diagnostic", "device_prefixes", "description"))
        return
    cat = load_catalog(dialect)
    rows = [s.to_dict() for s in cat if (role is None or s.role == role) and (not only_diag or s.diagnostic)]
    _emit_rows(rows, fmt, f"{dialect}: {cat.description}",
               ("name", "source", "kind", "unit", "role", "aliases", "meaning"))
