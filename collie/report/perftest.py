"""perftest command lines for a minimal case, so that a vendor can reproduce it without collie.

perftest (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``) runs one flow of one verb with one message size
between a server (started first) and a client that connects to it, or with ``-b`` (``--bidirectional``, given on
both sides) that flow and its mirror image at once. A case it can express maps one to one:

=====================  ==========================================================================
collie flow field      perftest option (the names of perftest's own ``--help``)
=====================  ==========================================================================
opcode                 the tool: WRITE ``ib_write_bw``, READ ``ib_read_bw``, SEND ``ib_send_bw``
transport              ``-c RC|UC|UD`` (``--connection``)
sizes (one size)       ``-s BYTES`` (``--size``)
qps                    ``-q N`` (``--qp``)
mtu                    ``-m MTU`` (``--mtu``)
sq_depth               ``-t N`` (``--tx-depth``)
rq_depth (SEND only)   ``-r N`` (``--rx-depth``)
batch                  ``-l N`` (``--post_list``)
signal_every           ``-Q N`` (``--cq-mod``; always given: perftest's default is one completion in 100)
inline (not READ)      ``-I BYTES`` (``--inline_size``)
mrs = qps (> 1)        ``--mr_per_qp``
tclass (when set)      ``--tclass=N`` on both lines (the GRH's traffic class of each side's QPs; none: no flag)
memory gpu             ``--use_cuda=0`` on that side (a perftest built with CUDA)
two mirrored flows      ``-b`` (``--bidirectional``) on both lines
duration               ``-D SECONDS`` (``--duration``), and ``--report_gbits``
device, port, GID      ``-d DEV -i PORT -x GID`` of each host, when its target names them (``verbs:DEV:PORT:GID``)
=====================  ==========================================================================

The client (collie's requester, which posts the work requests) connects to the server's address: the server
host's recorded address (a remote campaign's inventory), else its host name. Anything else perftest cannot set,
and the case is then reported with one sentence naming the condition it lacks (:attr:`PerftestLines.lacks`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from collie.errors import TargetError
from collie.model.flow import Flow
from collie.model.workload import Workload
from collie.targets.registry import parse_target
from collie.targets.verbs.spec import VerbsSpec

TOOLS: Final = {"WRITE": "ib_write_bw", "READ": "ib_read_bw", "SEND": "ib_send_bw"}
#: The connection types each tool takes (perftest's ``-c`` of that verb).
CONNECTIONS: Final = {"WRITE": ("RC", "UC"), "READ": ("RC",), "SEND": ("RC", "UC", "UD")}


@dataclass(frozen=True)
class Device:
    """The RDMA device perftest should open on a host (empty: perftest's default, the first device), and the
    address a client connects to when that host serves (empty: its host name)."""

    name: str = ""
    port: int | None = None
    gid_index: int | None = None
    address: str = ""


@dataclass(frozen=True)
class PerftestLines:
    """The two command lines of a case, or why there are none.

    Invariant: exactly one of (``server`` and ``client``) and ``lacks`` is set.

    Attributes:
        tool: ``ib_write_bw``, ``ib_read_bw`` or ``ib_send_bw`` (``""`` when perftest cannot express the case).
        server_host, client_host: where each line runs (collie's server and client hosts).
        server, client: the command lines, shell-quoted.
        lacks: one sentence naming the condition perftest lacks.
    """

    tool: str = ""
    server_host: str = ""
    client_host: str = ""
    server: str = ""
    client: str = ""
    lacks: str = ""

    @property
    def expressible(self) -> bool:
        return not self.lacks


def device_of(target_spec: str) -> Device:
    """The device a recorded ``verbs:DEV[:PORT[:GID]]`` target names, with the parts it names (other targets,
    and a spec that does not parse: none)."""
    try:
        spec = parse_target(target_spec)
    except TargetError:
        return Device()
    if not isinstance(spec, VerbsSpec):
        return Device()
    return Device(spec.device, spec.port if spec.given_parts > 1 else None,
                  spec.gid_index if spec.given_parts > 2 else None)


def mirrored(workload: Workload) -> bool:
    """Whether the workload is two flows, each the other with client and server swapped (perftest's ``-b``)."""
    if len(workload.flows) != 2:
        return False
    a, b = workload.flows
    return not a.loopback and replace(a, client=a.server, server=a.client) == b


def lacks(workload: Workload) -> str:
    """The one condition of ``workload`` perftest cannot express (``""``: it can express it)."""
    if len(workload.flows) != 1 and not mirrored(workload):
        return (f"perftest runs one flow between two hosts (or it and its mirror image, -b), and this case has "
                f"{len(workload.flows)} flows at once" + (" that are not mirror images of each other"
                                                           if len(workload.flows) == 2 else ""))
    f = workload.flows[0]
    if f.mixed:
        return f"perftest posts one opcode per run, and this case cycles through {f.verbs} on the same QPs"
    if f.recv_delay_us or f.recv_batch != 1 or f.recv_sges != 1:
        return "perftest's receiver reposts one receive at a time as soon as it can, and this case paces its receives"
    if f.mr_churn or f.qp_churn:
        return "perftest has no control-path churn beside its traffic, which this case needs"
    if f.opcode not in TOOLS:
        return (f"perftest's bandwidth tests post WRITE, READ or SEND, and this case posts {f.opcode}")
    if f.transport not in CONNECTIONS[f.opcode]:
        return f"{TOOLS[f.opcode]} has no {f.transport} connection (it takes -c {'/'.join(CONNECTIONS[f.opcode])})"
    if len(f.sizes) != 1:
        return (f"perftest sends one message size per run, and this case cycles through {len(f.sizes)} sizes "
                f"({', '.join(str(s) for s in f.sizes)} bytes)")
    if f.sges != 1:
        return (f"perftest posts one scatter/gather entry per work request, and this case splits each message "
                f"over {f.sges}")
    if f.mrs != 1 and f.mrs != f.qps:
        return (f"perftest registers one memory region, or one per QP (--mr_per_qp), and this case registers "
                f"{f.mrs} for {f.qps} QP{'s' if f.qps != 1 else ''}")
    if "remote" in (f.client.memory, f.server.memory):
        return ("perftest has no option to place its buffers on the other NUMA socket, which this case needs "
                "(memory = remote)")
    if f.processes != 1:
        return f"perftest drives its QPs from one process, and this case uses {f.processes} per host"
    if f.burst:
        return "perftest sends a steady stream, and this case sends in on/off bursts"
    if f.inline and f.opcode == "READ":
        return "perftest has no inline data for READ, which this case asks for"
    if f.batch > 1 and f.batch % f.signal_every:
        return (f"perftest needs its post list to be a multiple of its completion moderation, and this case posts "
                f"{f.batch} work requests at a time with one completion every {f.signal_every}")
    return ""


def perftest_lines(workload: Workload, devices: Mapping[str, Device], duration_s: float = 5.0) -> PerftestLines:
    """The server and client command lines of ``workload`` (see the module's table), or what perftest lacks.

    Args:
        workload: the minimal case.
        devices: the device of each host (by the workload's host name; a host it lacks: perftest's default
            device, reached by its host name).
        duration_s: seconds to run (``-D``; whole seconds, at least 1).
    """
    why = lacks(workload)
    if why:
        return PerftestLines(lacks=why)
    f = workload.flows[0]
    tool = TOOLS[f.opcode]
    both = ["-b"] if mirrored(workload) else []
    served = devices.get(f.server.host, Device())
    server = [tool, *_device(served), *_common(f, duration_s), *both, *_memory(f.server.memory)]
    server_address = "localhost" if f.loopback else served.address or f.server.host
    client = [tool, *_device(devices.get(f.client.host, Device())), *_common(f, duration_s), *both,
              *_memory(f.client.memory), server_address]
    return PerftestLines(tool=tool, server_host=f.server.host, client_host=f.client.host,
                         server=shlex.join(server), client=shlex.join(client))


def _device(device: Device) -> list[str]:
    args: list[str] = []
    if device.name:
        args += ["-d", device.name]
    if device.port is not None:
        args += ["-i", str(device.port)]
    if device.gid_index is not None:
        args += ["-x", str(device.gid_index)]
    return args


def _common(f: Flow, duration_s: float) -> list[str]:
    args = ["-c", f.transport, "-s", str(f.sizes[0]), "-q", str(f.qps), "-m", str(f.mtu), "-t", str(f.sq_depth)]
    if f.opcode == "SEND":
        args += ["-r", str(f.rq_depth)]
    if f.batch > 1:
        args += ["-l", str(f.batch)]
    args += ["-Q", str(f.signal_every)]
    if f.inline:
        args += ["-I", str(f.inline)]
    if f.mrs > 1:
        args.append("--mr_per_qp")
    if f.tclass is not None:
        args.append(f"--tclass={f.tclass}")
    args += ["-D", str(max(1, round(duration_s))), "--report_gbits"]
    return args


def _memory(memory: str) -> list[str]:
    return ["--use_cuda=0"] if memory == "gpu" else []
