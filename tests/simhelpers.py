"""Test helpers for the simulator: workload builders, the corpus of published anomalies and their near misses,
oracle ceilings calibrated on a target, symptom summaries.

Calibration follows ANOMALIES.md: large WRITEs for bits/s, many small WRITEs for packets/s, per direction kind
(one-way, bidirectional, loopback), on the target itself.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from collie.mfs import MFS
from collie.model.flow import Endpoint, Flow, flow_to_dict
from collie.model.space import SearchSpace, load_space
from collie.model.workload import Workload
from collie.oracle import Oracle, Thresholds, Verdict
from collie.storage.case import CaseRecord
from collie.storage.corpus import load_case, load_corpus
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget
from collie.targets.sim.model import BASE_PREFIX

DURATION = 10.0


def reference_key(w: Workload) -> str:
    """:meth:`Workload.key` as documented: the SHA-256 of the flows' sorted canonical JSON forms."""
    canon = sorted(json.dumps(flow_to_dict(f), sort_keys=True) for f in w.flows)
    return hashlib.sha256("\n".join(canon).encode()).hexdigest()[:16]
ROOT = Path(__file__).resolve().parents[1]
#: The 18 published anomalies as case folders (what ``collie campaign --corpus`` reads).
CORPUS = ROOT / "workloads" / "corpus"
#: Each corpus case with one necessary condition broken: must not show its anomaly (tests only).
NEAR_MISSES = ROOT / "tests" / "fixtures" / "near-misses"
#: How a near miss's case.toml description names the case it misses and the condition it breaks
#: (bench/write_corpus.py writes it, :func:`near_misses` reads both back).
NEAR_MISS_OF, BREAKS, BREAKS_END = "near miss of ", ": its condition `", "` broken."


def flow(client: str = "a", server: str = "b", cmem: str = "local", smem: str = "local", **kw: Any) -> Flow:
    depth = kw.pop("wq", None)
    if depth is not None:
        kw.setdefault("sq_depth", depth)
        kw.setdefault("rq_depth", depth)
    return Flow(client=Endpoint(client, cmem), server=Endpoint(server, smem), **kw)


def one(name: str = "", **kw: Any) -> Workload:
    """A one-way workload a -> b (``wq`` sets both queue depths; ``cmem``/``smem`` the memory placements)."""
    return Workload(flows=(flow(**kw),), name=name)


def bi(name: str = "", amem: str = "local", bmem: str = "local", **kw: Any) -> Workload:
    """The same flow in both directions (a -> b and b -> a)."""
    return Workload(flows=(flow("a", "b", amem, bmem, **kw), flow("b", "a", bmem, amem, **kw)), name=name)


@dataclass(frozen=True)
class KnownCase:
    """A case folder of the corpus or of the near misses, read with collie's own case reader.

    Attributes:
        name: the folder's path below its root (``f03-read-mtu1k``, ``f03-read-mtu1k/mtu-le-1k``).
        quirk: the simulator quirk the case shows (corpus) or must not show (near miss).
        profile: the built-in profile it is checked on (``evidence.json``'s ``target`` without ``sim:``).
        workload: the case.
        signature: the oracle's signature ``evidence.json`` records (empty for a clean near miss).
        mfs: the case's minimal feature set (corpus cases only).
        breaks: the necessary condition a near miss breaks (empty for a corpus case).
    """

    name: str
    quirk: str
    profile: str
    workload: Workload
    signature: str
    mfs: MFS | None = None
    breaks: str = ""

    @property
    def kinds(self) -> set[str]:
        """The symptom kinds of the recorded signature (``pause``, ``low_throughput``, ...)."""
        return {part.split("@")[0] for part in self.signature.split("+") if part}


def _profile(record: CaseRecord, where: Path) -> str:
    target = record.target.spec if record.target is not None else ""
    assert target.startswith("sim:"), f"{where}: evidence.json names no simulated target"
    return target.removeprefix("sim:")


@functools.cache
def corpus() -> tuple[KnownCase, ...]:
    """The corpus, in name order; a case's folder is named after its quirk."""
    out = []
    for c in load_corpus(CORPUS):
        case = load_case(c.path.parent)
        out.append(KnownCase(c.name, c.name, _profile(case.record, c.path), c.workload, case.signature, c.mfs))
    return tuple(out)


@functools.cache
def near_misses() -> tuple[KnownCase, ...]:
    """Every near miss, grouped by the corpus case it is a near miss of."""
    out = []
    for path in sorted(NEAR_MISSES.glob("*/*/case.toml")):
        case = load_case(path.parent)
        named = re.fullmatch(rf"{NEAR_MISS_OF}(.+?){re.escape(BREAKS)}(.+?){re.escape(BREAKS_END)} .*",
                             case.workload.description)
        assert named is not None, f"{path}: the description names no anomaly and broken condition"
        out.append(KnownCase(f"{path.parent.parent.name}/{path.parent.name}", named.group(1),
                             _profile(case.record, path), case.workload, case.signature, breaks=named.group(2)))
    return tuple(out)


#: Base-model limits the oracle calibrates (its per-flow bounds: a QP's own WR rate, the READ/atomic window, the
#: atomic rate): a run they hold is judged like any other, and the oracle must explain it.
JUDGED_LIMITS: frozenset[str] = frozenset(("base:qp_rate", "base:read_window", "base:atomic_rate"))


def fired(truth: tuple[str, ...]) -> set[str]:
    """What a run's truth holds beyond the limits the oracle is held to (:data:`JUDGED_LIMITS`): the quirks it
    fired and the base-model limits the oracle does not know."""
    return set(truth) - JUDGED_LIMITS


def expected_quirks(profile: str, workload: Workload) -> set[str]:
    """The quirks of ``profile`` a workload should fire: those of the corpus cases whose conditions it meets."""
    active = {q.id for q in SimTarget(profile).profile.active_quirks}
    return {c.quirk for c in corpus() if c.quirk in active and c.mfs is not None and c.mfs.matches(workload)}


def oracle_for(target: SimTarget) -> Oracle:
    """An oracle calibrated on ``target`` the way a campaign does (``collie.calibrate``), checking that no planted
    quirk fires in a calibration run (the base model's own limits may: a READ at depth 1 is window-bound)."""
    from collie import calibrate as cal

    def clean(w: Workload) -> RunResult:
        r = target.run(w, DURATION)
        assert not [t for t in r.truth if not t.startswith(BASE_PREFIX)], (w.name, r.truth)
        return r

    info = target.describe()
    return cal.calibrated_oracle(clean, cal.catalog_of(info), info, Thresholds())


def kinds(verdict: Verdict) -> set[str]:
    return {s.kind for s in verdict.symptoms}


def max_pause(run: object) -> float:
    """Largest tx pause ratio over the hosts of a run (mlx5 and bnxt names)."""
    out = 0.0
    for h in run.hosts:  # type: ignore[attr-defined]
        for k in ("tx_prio3_pause_duration", "pfc_pri3_tx_duration_us"):
            if k in h.counters:
                out = max(out, h.counters[k] / (run.duration_s * 1e6))  # type: ignore[attr-defined]
    return out


def random_workload(rng: random.Random, *, gpu: bool = True, remote: bool = True) -> Workload | None:
    """A random legal workload in the paper's space (log-uniform counts and sizes); None if illegal."""
    from collie.model.constraints import LEGAL_OPCODES, violations

    transport = rng.choice(("RC", "RC", "RC", "UC", "UD"))
    opcode = rng.choice([o for o in LEGAL_OPCODES[transport] if not o.startswith("ATOMIC")] + ["ATOMIC_FA"] *
                        (transport == "RC"))
    mtu = rng.choice((256, 512, 1024, 2048, 4096))

    def logint(lo: int, hi: int) -> int:
        return round(2 ** rng.uniform(math.log2(lo), math.log2(hi)))

    if opcode.startswith("ATOMIC"):
        sizes: tuple[int, ...] = (8,)
        sges = 1
    else:
        hi = mtu if transport == "UD" else 4 << 20
        sizes = tuple(logint(32, hi) for _ in range(rng.randint(1, 4)))
        sges = min(logint(1, 16), min(sizes))
    batch = logint(1, 128)
    depth = max(batch, logint(1, 4096))
    mr_size = max(max(sizes), logint(4096, 4 << 20))  # a message lies in one MR (msg_fits_mr)
    mrs = logint(1, 20000)
    while mrs * mr_size * 2 > (32 << 30) and mrs > 1:
        mrs //= 2
    mems = ["local"] + ["remote"] * remote + ["gpu"] * gpu
    cmem, smem = rng.choice(mems), rng.choice(mems)
    qps = logint(1, 2048)
    shape = rng.choice(("oneway", "oneway", "bi", "loop"))
    base = Flow(client=Endpoint("a", cmem), server=Endpoint("b", smem), transport=transport, opcodes=(opcode,),
                sizes=sizes, qps=qps, batch=batch, sges=sges, sq_depth=depth, rq_depth=depth, mtu=mtu,
                mrs=mrs, mr_size=mr_size)
    if shape == "bi":
        flows = (base, replace(base, client=Endpoint("b", smem), server=Endpoint("a", cmem)))
    elif shape == "loop":
        flows = (replace(base, server=Endpoint("a", smem)),)
    else:
        flows = (base,)
    w = Workload(flows=flows)
    return None if violations(w.flows) else w


PERFTEST_DEFAULTS: tuple[Workload, ...] = (
    one(name="ib_write_bw", qps=1, batch=1, wq=128, mtu=4096, sizes=(65536,)),
    one(name="ib_write_bw -q 8 -l 16", qps=8, batch=16, wq=128, mtu=4096, sizes=(65536,)),
    one(name="ib_write_bw -s 64 -q 16", qps=16, batch=32, wq=512, mtu=4096, sizes=(64,)),
    one(name="ib_read_bw", opcodes=("READ",), qps=1, wq=128, mtu=4096, sizes=(65536,)),
    one(name="ib_send_bw", opcodes=("SEND",), qps=1, wq=512, mtu=4096, sizes=(65536,)),
    one(name="ib_send_bw -c UD", transport="UD", opcodes=("SEND",), qps=1, wq=512, mtu=4096, sizes=(4096,)),
    bi(name="ib_write_bw -b", qps=1, wq=128, mtu=4096, sizes=(65536,)),
    bi(name="ib_read_bw -b -q 4", opcodes=("READ",), qps=4, wq=128, mtu=4096, sizes=(1 << 20,), mr_size=1 << 20),
    one(name="ib_write_bw -a (2 B)", qps=1, wq=128, mtu=4096, sizes=(2,)),
    one(name="ib_write_bw -s 8M", qps=2, wq=128, mtu=4096, sizes=(8 << 20,), mr_size=8 << 20),
    one(name="ib_atomic_bw", opcodes=("ATOMIC_FA",), qps=4, wq=128, mtu=4096, sizes=(8,)),
)


PAPER_SPACE: Final = Path(__file__).resolve().parents[1] / "workloads" / "paper.toml"


@functools.cache
def paper_space() -> SearchSpace:
    """The Collie paper's space (``workloads/paper.toml``: one opcode per flow, the receive side tied to the send
    side, no churn). Tests of the campaign's mechanics on planted anomalies search it: in the whole default space a
    starved receiver or a churned cache is an anomaly of the base model's own, which they are not about."""
    return load_space(PAPER_SPACE)
