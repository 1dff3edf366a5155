"""What a perftest run measured, in collie's terms: each row's workload (the flow shape the run's header states)
and its result in collie's units.

A row of ``ib_write_bw -q 4 -a --report_gbits`` is a workload of one RC WRITE flow from ``a`` to ``b`` of that
row's message size on 4 QPs, with the header's queue depths, post list, MTU, inline size and CQ moderation
(collie's ``signal_every``), and an MR of the message's size (at least 64 KiB); a bidirectional run adds the
mirror flow from ``b`` to ``a``. Its result is the
average bandwidth in Gb/s (perftest's MB/sec and MiB/sec are both 2^20 bytes a second), the message rate, and
for latency tools the latency percentiles in microseconds.

Invariants:
    * a row's workload is None exactly when the header leaves out something a flow needs or says something
      collie cannot express (an XRC or DC connection, an MTU that is no verbs MTU); :func:`shape_problem` says
      which in one sentence;
    * nothing here reads a file or prints.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from collie.importers.perftest import BandwidthRow, LatencyRow, PerftestLog, PerftestRow, PerftestRun
from collie.model.constraints import violations
from collie.model.flow import MTUS, TRANSPORTS, Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.sim.fit import SweepRow, Unit

#: perftest's bandwidth units -> bits a second per unit
UNIT_BPS: Final = {"MB/sec": 8.0 * (1 << 20), "MiB/sec": 8.0 * (1 << 20), "Gb/sec": 1e9}
_ATOMICS: Final = {"FETCH_AND_ADD": "ATOMIC_FA", "CMP_AND_SWAP": "ATOMIC_CS"}
#: The smallest MR of a row's workload: a message's size, at least collie's default MR (64 KiB).
MIN_MR: Final = 65536


@dataclass(frozen=True)
class Measured:
    """One row of a run, in collie's terms.

    Attributes:
        size: bytes per message.
        workload: the flow shape the run's header states at this size (None: see :func:`shape_problem`).
        gbps: the average bandwidth in Gb/s (bandwidth tools whose unit the log states; else None).
        msg_rate_mpps: millions of messages a second (bandwidth tools).
        lat_us: latency percentiles in microseconds, by name (``min``, ``typical``, ``avg``, ``p99``, ``p99.9``,
            ``max``; latency tools, those the log has).
    """

    size: int
    workload: Workload | None
    gbps: float | None = None
    msg_rate_mpps: float | None = None
    lat_us: tuple[tuple[str, float], ...] = ()


def opcode_of(run: PerftestRun) -> str | None:
    """collie's opcode of a run (``WRITE_IMM`` for ``RDMA_Write_imm``, ``ATOMIC_FA`` for a fetch-and-add), None
    when the log names no verb."""
    if run.verb is None:
        return None
    if run.verb == "ATOMIC":
        return _ATOMICS.get(run.atomic_op or "FETCH_AND_ADD")
    return f"{run.verb}_IMM" if run.immediate else run.verb


def shape_problem(run: PerftestRun) -> str | None:
    """Why the rows of ``run`` have no workload (one sentence), or None when they have one."""
    h = run.header
    if opcode_of(run) is None:
        return "the log names no verb (no test title)"
    if h.connection not in TRANSPORTS:
        return f"connection type {h.connection or '(not printed)'} is not one collie runs (RC, UC, UD)"
    if h.mtu is not None and h.mtu not in MTUS:
        return f"MTU {h.mtu} is not a verbs path MTU ({', '.join(map(str, MTUS))})"
    return None


def measured(run: PerftestRun) -> tuple[Measured, ...]:
    """Every row of ``run`` in collie's terms (see the module docstring)."""
    problem = shape_problem(run)
    out = []
    for row in run.rows:
        workload = None if problem is not None else _workload(run, row)
        if isinstance(row, BandwidthRow):
            per_unit = UNIT_BPS.get(run.unit or "")
            out.append(Measured(size=row.size, workload=workload,
                                gbps=row.bw_average * per_unit / 1e9 if per_unit else None,
                                msg_rate_mpps=row.msg_rate))
        else:
            out.append(Measured(size=row.size, workload=workload, lat_us=_latencies(row)))
    return tuple(out)


def _latencies(row: LatencyRow) -> tuple[tuple[str, float], ...]:
    named = (("min", row.t_min), ("typical", row.t_typical), ("avg", row.t_avg), ("p99", row.p99),
             ("p99.9", row.p99_9), ("max", row.t_max))
    return tuple((name, value) for name, value in named if value is not None)


def _workload(run: PerftestRun, row: PerftestRow) -> Workload | None:
    """The row's workload, None when the header's numbers make no legal flow (a size a UD MTU cannot carry)."""
    h = run.header
    opcode = opcode_of(run)
    if opcode is None or h.connection is None:
        return None
    latency = run.kind == "lat"
    depth = h.tx_depth or (1 if latency else 128)

    def flow(client: str, server: str) -> Flow:
        return Flow(Endpoint(client), Endpoint(server), transport=h.connection or "RC", opcodes=(opcode,),
                    sizes=(row.size,), qps=h.qps or 1, batch=h.post_list or 1, sq_depth=depth,
                    rq_depth=h.rx_depth or depth, mtu=h.mtu or 4096, inline=h.max_inline or 0,
                    mr_size=max(row.size, MIN_MR),
                    signal_every=1 if latency else min(h.cq_moderation or 1, depth))

    flows = (flow("a", "b"), flow("b", "a")) if run.bidirectional else (flow("a", "b"),)
    return None if violations(flows) else Workload(flows=flows)


def sweep_rows(log: PerftestLog, verb: str | None = None) -> tuple[SweepRow, ...]:
    """Every row of every run of ``log`` as a row of a sweep a simulator profile is fitted to
    (:mod:`collie.targets.sim.fit`): a bandwidth row's average Gb/s, a latency row's typical latency.

    Args:
        log: the parsed log.
        verb: the verb (``WRITE``, ``READ``, ``SEND``) of a run whose log printed no title; its connection and QPs,
            when the log printed no header either, are perftest's defaults (RC, 1 QP).
    """
    out: list[SweepRow] = []
    for index, run in enumerate(log.runs):
        if run.verb is None and verb is not None:
            header = replace(run.header, connection=run.header.connection or "RC", qps=run.header.qps or 1)
            run = replace(run, verb=verb, header=header)
        problem = shape_problem(run)
        test = run.title or (f"{run.verb} {'BW' if run.kind == 'bw' else 'latency'} (--verb)" if run.verb else
                             "untitled run")
        for row, m in zip(run.rows, measured(run), strict=True):
            unit, published = (Unit.GBPS, m.gbps) if m.gbps is not None or isinstance(row, BandwidthRow) else \
                (Unit.US, dict(m.lat_us).get("typical"))
            why = problem
            if why is None and m.workload is None:
                why = "the header's numbers make no flow collie can run at this size"
            if why is None and published is None:
                why = ("the log does not state its bandwidth unit" if unit is Unit.GBPS else
                       "the row has no typical latency")
            out.append(SweepRow(source=log.source, run=index, line=row.line, test=test, size=m.size,
                                workload=m.workload, unit=unit, published=published,
                                max_rd_atomic=run.header.outstand_reads, problem=why))
    return tuple(out)
