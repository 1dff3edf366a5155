"""Write the corpus of the 18 published anomalies and the near misses of each, from their concrete triggers.

The Collie paper (NSDI 2022) lists 18 anomalies in its Table 2, each with the concrete workload that reproduced
it. This script writes them as the case folders ``collie campaign --corpus`` reads, so anyone can replay them
on their own NIC (``collie campaign --corpus workloads/corpus``), and writes, for each one, the same workload
with exactly one necessary condition broken (the *near misses*) for the simulator's tests:

* ``workloads/corpus/<quirk>/``: ``case.toml`` (the concrete trigger), ``mfs.json`` (the paper's necessary
  conditions, in collie's feature vocabulary) and ``evidence.json`` (a case record, ``collie/storage/case.py``:
  where it was checked, the built-in simulated profile that has the anomaly and its fingerprint, and the
  oracle's verdicts of three runs there, which all lead with the same symptom); plus a ``README.md``.
* ``tests/fixtures/near-misses/<quirk>/<condition>/``: ``case.toml`` (whose description names the anomaly it
  is a near miss of and the condition it breaks) and ``evidence.json`` (the profile it must stay clean on, and
  its signature there). They are not in the corpus: on a real NIC a near miss of one anomaly may well be
  another one.

Before writing anything it checks every case on the simulator: a trigger must fire exactly its quirk (and the
quirks of its profile whose conditions it also meets: #12's trigger is #9's on GPU memory) and show the
published symptom under collie's own oracle; a near miss must not fire it. The simulator's ground truth
is read here and in the tests only; the files it writes are plain data, and nothing reads this script at run
time. ``--check`` writes nothing and exits 1 if the committed files differ from what it would write.

    PYTHONPATH=. python bench/write_corpus.py [--check]

Deviations from the paper's wording, forced by collie's workload constraints:
    * #18: the table's condition says batch >= 32 but its own trigger posts 16; the quirk (and this trigger)
      use batch 16. Its 12 KB MRs cannot hold a 64 KB single-SGE message (constraint ``sge_fits_mr``), so
      the trigger registers 64 KB MRs.
    * #9/#12: "SGEs [128 B, 64 KB, 1 KB]" becomes sizes = [128, 64K, 1K] over 3 SGEs (collie splits each
      message evenly over its SGEs).
"""

from __future__ import annotations

import argparse
import filecmp
import functools
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from collie import calibrate
from collie.errors import InputError
from collie.mfs import MFS, Condition
from collie.model.space import load_space
from collie.model.workload import Workload
from collie.oracle import Oracle, Verdict
from collie.preset import DEFAULT_PRESET, load_preset
from collie.storage.case import CaseEvidence, CaseRecord, OriginalFind, TargetRecord, write_case_folder
from collie.targets.sim import SimTarget, library
from collie.targets.sim.quirks import Quirk
from tests.simhelpers import BREAKS, BREAKS_END, CORPUS, NEAR_MISS_OF, NEAR_MISSES, ROOT, bi, flow, one

#: Seconds of the run recorded in each evidence.json (the simulator sleeps for none of them).
DURATION = 5.0
SEED = 0
#: Runs of each trigger that must all show the same leading symptom (evidence.json's ``confirmed``).
CONFIRM_RUNS = 3

K = 1024
M = 1024 * 1024


def with_flows(w: Workload, **kw: Any) -> Workload:
    """``w`` with every flow's fields replaced by ``kw`` (``wq`` sets both queue depths)."""
    depth = kw.pop("wq", None)
    if depth is not None:
        kw.setdefault("sq_depth", depth)
        kw.setdefault("rq_depth", depth)
    return w.with_flows(tuple(replace(f, **kw) for f in w.flows))


def one_way(w: Workload) -> Workload:
    """Keep only the first flow, with the QPs of both directions (so QP totals stay the same)."""
    f = w.flows[0]
    return w.with_flows((replace(f, qps=sum(x.qps for x in w.flows)),))


@dataclass(frozen=True)
class Trigger:
    """A published concrete trigger.

    Attributes:
        quirk: the quirk id it must fire (the name of its corpus folder).
        anomaly: Table 2 number.
        profile: the built-in profile that has it.
        workload: the concrete trigger.
        pause: the published symptom includes PFC pause (else "no pause").
        low_throughput: the symptom includes throughput below 0.8 of both ceilings.
        breaks: condition broken -> workload (or ``(profile, workload)`` when the break is the subsystem).
    """

    quirk: str
    anomaly: int
    profile: str
    workload: Workload
    pause: bool
    low_throughput: bool
    breaks: dict[str, Workload | tuple[str, Workload]] = field(default_factory=dict)


def triggers() -> list[Trigger]:
    """The 18 concrete triggers, in Table 2 order, each with its near misses."""
    out: list[Trigger] = []
    # F, Intel and AMD hosts -----------------------------------------------------------------------------
    w = one("#1", transport="UD", opcodes=("SEND",), qps=1, mr_size=64 * K, wq=256, mtu=2048, batch=64,
            sizes=(2 * K,))
    out.append(Trigger("f01-ud-rx-wqe", 1, "cx6-200g", w, True, True, {
        "batch >= 64": with_flows(w, batch=32),
        "wq_depth >= 256": with_flows(w, wq=128),
        "transport == UD": with_flows(w, transport="RC"),
    }))
    w = one("#2", transport="UD", opcodes=("SEND",), qps=16, wq=1024, mtu=1024, batch=4, sizes=(1 * K,))
    out.append(Trigger("f02-ud-small-many-qp", 2, "cx6-200g", w, False, True, {
        "batch <= 8": with_flows(w, batch=16),
        "wq_depth >= 1024": with_flows(w, wq=512),
        "max_msg <= 1K": with_flows(w, mtu=2048, sizes=(2 * K,)),
        "qps_total >= 16": with_flows(w, qps=8),
        "transport == UD": with_flows(w, transport="RC"),
    }))
    w = one("#3", transport="RC", opcodes=("READ",), qps=8, mrs=1, mr_size=4 * M, wq=128, mtu=1024,
            sizes=(4 * M,))
    out.append(Trigger("f03-read-mtu1k", 3, "cx6-200g", w, True, True, {
        "mtu <= 1K": with_flows(w, mtu=4096),
        "opcode == READ": with_flows(w, opcodes=("WRITE",)),
        "max_msg >= 16K": with_flows(w, sizes=(8 * K,)),
    }))
    w = bi("#4", transport="RC", opcodes=("READ",), qps=80, mr_size=64 * K, wq=128, mtu=4096, batch=128, sges=4,
           sizes=(128,))
    out.append(Trigger("f04-bi-read-sge", 4, "cx6-200g", w, True, True, {
        "bidirectional": one_way(w),
        "batch >= 32": with_flows(w, batch=16),
        "sges >= 4": with_flows(w, sges=2),
        "qps_total >= 160": with_flows(w, qps=40),
        "opcode == READ": with_flows(w, opcodes=("WRITE",)),
    }))
    w = one("#5", transport="RC", opcodes=("SEND",), qps=1, wq=1024, mtu=1024, batch=64, sges=2, sizes=(2 * K,))
    out.append(Trigger("f05-rc-send-batch", 5, "cx6-200g", w, True, True, {
        "mtu <= 1K": with_flows(w, mtu=4096),
        "batch >= 64": with_flows(w, batch=32),
        "wq_depth >= 1024": with_flows(w, wq=512),
        "min_msg >= 2K": with_flows(w, sizes=(1 * K,)),
        "max_msg <= 8K": with_flows(w, sizes=(16 * K,)),
        "opcode == SEND": with_flows(w, opcodes=("WRITE",)),
    }))
    w = one("#6", transport="RC", opcodes=("SEND",), qps=32, wq=1024, mtu=1024, batch=8, sges=2, sizes=(1 * K,))
    out.append(Trigger("f06-rc-send-sge", 6, "cx6-200g", w, False, True, {
        "mtu <= 1K": with_flows(w, mtu=4096),
        "batch <= 16": with_flows(w, batch=32),
        "sges >= 2": with_flows(w, sges=1),
        "wq_depth >= 1024": with_flows(w, wq=512),
        "max_msg <= 1K": with_flows(w, sizes=(2 * K,)),
        "qps_total >= 32": with_flows(w, qps=16),
        "opcode == SEND": with_flows(w, opcodes=("WRITE",)),
    }))
    w = one("#7", transport="RC", opcodes=("WRITE",), qps=24, mrs=24 * 1024, mr_size=64 * K, wq=128, mtu=1024,
            batch=1, sizes=(512,))
    out.append(Trigger("f07-write-many-mr", 7, "cx6-200g", w, False, True, {
        "batch <= 1": with_flows(w, batch=2),
        "max_msg <= 1K": with_flows(w, sizes=(2 * K,)),
        "mrs_host >= 12000": with_flows(w, mrs=4096),
        "opcode == WRITE": with_flows(w, opcodes=("SEND",)),
        "transport == RC": with_flows(w, transport="UC"),
    }))
    w = one("#8", transport="RC", opcodes=("WRITE",), qps=480, wq=16, mtu=1024, batch=1, sizes=(512,))
    out.append(Trigger("f08-write-many-qp", 8, "cx6-200g", w, False, True, {
        "batch <= 1": with_flows(w, batch=2),
        "wq_depth <= 16": with_flows(w, wq=32),
        "max_msg <= 1K": with_flows(w, sizes=(2 * K,)),
        "qps_total >= 450": with_flows(w, qps=200),
        "transport == RC": with_flows(w, transport="UC"),
    }))
    w = bi("#9", transport="RC", opcodes=("WRITE",), qps=8, mr_size=4 * M, wq=128, mtu=4096, batch=8, sges=3,
           sizes=(128, 64 * K, 1 * K))
    out.append(Trigger("f09-bi-sge-mix-noro", 9, "cx6-200g-amd", w, True, True, {
        "bidirectional": one_way(w),
        "sges >= 3": with_flows(w, sges=2),
        "size_mix (small)": with_flows(w, sizes=(128, 1 * K)),
        "size_mix (large)": with_flows(w, sizes=(64 * K,)),
        "relaxed ordering off": ("cx6-200g", w),
    }))
    w = bi("#10", transport="RC", opcodes=("WRITE",), qps=320, mr_size=64 * K, wq=128, mtu=1024, batch=64,
           sizes=(64 * K, 128, 128, 128))
    out.append(Trigger("f10-bi-write-mix", 10, "cx6-200g", w, True, False, {
        "bidirectional": one_way(w),
        "batch >= 64": with_flows(w, batch=32),
        "size_mix": with_flows(w, sizes=(128,)),
        "qps_total >= 320": with_flows(w, qps=100),
        "opcode == WRITE": with_flows(w, opcodes=("SEND",)),
    }))
    w = bi("#11", amem="local", bmem="remote", transport="RC", opcodes=("WRITE",), qps=1, mrs=32, mr_size=4 * M,
           wq=128, mtu=4096, batch=16, sizes=(256 * K,))
    out.append(Trigger("f11-bi-remote-numa", 11, "cx6-200g-amd", w, True, False, {
        "bidirectional": one_way(w),
        "remote_numa": bi("#11 local", transport="RC", opcodes=("WRITE",), qps=1, mrs=32, mr_size=4 * M, wq=128,
                          mtu=4096, batch=16, sizes=(256 * K,)),
        "AMD host": ("cx6-200g", w),
    }))
    w = bi("#12", amem="gpu", bmem="gpu", transport="RC", opcodes=("WRITE",), qps=8, mr_size=4 * M, wq=128,
           mtu=4096, batch=8, sges=3, sizes=(128, 64 * K, 1 * K))
    out.append(Trigger("f12-gpu-acs", 12, "cx6-200g-amd", w, True, True, {
        "gpu": bi("#12 host memory", transport="RC", opcodes=("WRITE",), qps=8, mr_size=4 * M, wq=128, mtu=4096,
                  batch=8, sges=3, sizes=(128, 64 * K, 1 * K)),
        "misconfigured PCIe switch": ("cx6-200g", w),
    }))
    common: dict[str, Any] = {"transport": "RC", "opcodes": ("WRITE",), "mrs": 32, "mr_size": 4 * M, "wq": 128,
                              "mtu": 4096, "batch": 16, "sizes": (256 * K,)}
    w = Workload(flows=(flow("a", "b", qps=8, **dict(common)), flow("b", "b", qps=8, **dict(common))),
                 name="#13")
    out.append(Trigger("f13-loopback-incast", 13, "cx6-200g", w, True, False, {
        "incast (no loopback)": Workload(flows=(flow("a", "b", qps=16, **dict(common)),)),
        "incast (loopback only)": Workload(flows=(flow("b", "b", qps=16, **dict(common)),)),
    }))
    # H ------------------------------------------------------------------------------------------------
    w = bi("#14", transport="RC", opcodes=("WRITE",), qps=1024, mr_size=256 * K, wq=128, mtu=4096, batch=1,
           sges=4, sizes=(64 * K,))
    out.append(Trigger("h14-bi-mtu4k-sge", 14, "p2100g-100g", w, False, True, {
        "mtu >= 4K": with_flows(w, mtu=1024),
        "sges >= 4": with_flows(w, sges=2),
        "qps_total >= 1300": with_flows(w, qps=512),
        "bidirectional": one_way(w),
    }))
    w = one("#15", transport="UD", opcodes=("SEND",), qps=32, mr_size=4 * K, wq=64, mtu=2048, batch=1,
            sizes=(256, 1 * K, 64, 1 * K))
    out.append(Trigger("h15-ud-many-qp", 15, "p2100g-100g", w, True, False, {
        "wq_depth >= 64": with_flows(w, wq=32),
        "qps_total >= 32": with_flows(w, qps=16),
        "transport == UD": with_flows(w, transport="RC"),
    }))
    w = one("#16", transport="RC", opcodes=("READ",), qps=500, mr_size=256 * K, wq=128, mtu=1024, batch=8,
            sizes=(64 * K,))
    out.append(Trigger("h16-read-mtu1k-qps", 16, "p2100g-100g", w, True, False, {
        "mtu <= 1K": with_flows(w, mtu=4096),
        "batch >= 8": with_flows(w, batch=4),
        "qps_total >= 500": with_flows(w, qps=250),
        "opcode == READ": with_flows(w, opcodes=("WRITE",)),
    }))
    w = one("#17", transport="RC", opcodes=("SEND",), qps=80, mr_size=1 * M, wq=128, mtu=1024, batch=1,
            sizes=(1 * K,))
    out.append(Trigger("h17-send-small-qps", 17, "p2100g-100g", w, True, False, {
        "batch <= 16": with_flows(w, batch=32),
        "wq_depth >= 128": with_flows(w, wq=64),
        "max_msg <= 1K": with_flows(w, sizes=(2 * K,)),
        "qps_total >= 64": with_flows(w, qps=32),
        "opcode == SEND": with_flows(w, opcodes=("WRITE",)),
    }))
    w = bi("#18", transport="RC", opcodes=("WRITE",), qps=16, mr_size=64 * K, wq=64, mtu=1024, batch=16,
           sizes=(64 * K,))
    out.append(Trigger("h18-bi-write-mtu1k", 18, "p2100g-100g", w, True, False, {
        "bidirectional": one_way(w),
        "mtu <= 1K": with_flows(w, mtu=4096),
        "batch >= 16": with_flows(w, batch=8),
        "max_msg <= 64K": with_flows(w, sizes=(128 * K,), mr_size=128 * K),
        "qps_total >= 30": with_flows(w, qps=8),
        "opcode == WRITE": with_flows(w, opcodes=("READ",)),
    }))
    return out


TRIGGERS: tuple[Trigger, ...] = tuple(triggers())


# ---- checking on the simulator ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _target(profile: str) -> tuple[SimTarget, Oracle]:
    """The profile's simulator and an oracle calibrated on it the way ``collie replay`` does."""
    target = SimTarget(profile, seed=SEED)
    info = target.describe()
    oracle = calibrate.calibrated_oracle(lambda w: target.run(w, calibrate.CALIBRATION_SECONDS),
                                         calibrate.catalog_of(info), info, load_preset(DEFAULT_PRESET).thresholds)
    return target, oracle


def _judge(profile: str, workload: Workload) -> tuple[tuple[str, ...], Verdict]:
    target, oracle = _target(profile)
    run = target.run(workload, DURATION)
    return run.truth, oracle.judge(run, workload)


def expected_fires(profile: str, workload: Workload) -> set[str]:
    """The published anomalies of ``profile`` whose conditions ``workload`` meets (#12's trigger is #9's on
    GPU memory, so it shows both)."""
    active = {q.id: q for q in SimTarget(profile).profile.active_quirks}
    return {t.quirk for t in TRIGGERS if t.quirk in active and mfs_of(active[t.quirk], "").matches(workload)}


def mfs_of(quirk: Quirk, signature: str) -> MFS:
    """The quirk's condition (the paper's necessary conditions) as a minimal feature set."""
    out = []
    for c in quirk.when:
        if c.op == "in":
            out.append(Condition(c.feature, "in", tuple(sorted(c.value))))
        elif c.op in ("==", ">=", "<="):
            out.append(Condition(c.feature, c.op, c.value))
        elif c.op in (">", "<") and isinstance(c.value, int):
            out.append(Condition(c.feature, c.op + "=", c.value + (1 if c.op == ">" else -1)))
        else:
            raise SystemExit(f"{quirk.id}: clause {c.text!r} has no MFS form")
    return MFS(signature, tuple(out))


def slug(text: str) -> str:
    """A folder name for a broken condition: ``batch >= 64`` -> ``batch-ge-64``."""
    for op, word in ((">=", "ge"), ("<=", "le"), ("==", "eq")):
        text = text.replace(op, f" {word} ")
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _point(workload: Workload) -> dict[str, Any]:
    """The point of the default search space that builds ``workload`` (empty for the triggers it cannot
    express, such as #13's incast with loopback)."""
    try:
        return load_space().point_of(workload)
    except InputError:
        return {}


def write(corpus: Path, near: Path) -> list[str]:
    """Check every trigger and near miss on the simulator and write both folders; returns the problems."""
    problems: list[str] = []
    lib = library()
    corpus.mkdir(parents=True)
    near.mkdir(parents=True)
    rows = []
    for t in TRIGGERS:
        quirk = lib[t.quirk]
        truth, verdict = _judge(t.profile, t.workload)
        kinds = {s.kind for s in verdict.symptoms}
        if set(truth) != expected_fires(t.profile, t.workload) or t.quirk not in truth:
            problems.append(f"{t.quirk}: the trigger fires {truth or 'nothing'}, not its quirk and those whose "
                            "conditions it meets")
        if t.pause != ("pause" in kinds) or (t.low_throughput and "low_throughput" not in kinds):
            problems.append(f"{t.quirk}: the oracle says {verdict.signature or 'clean'}; published: pause "
                            f"{t.pause}, low throughput {t.low_throughput}")
        target, oracle = _target(t.profile)
        again = [oracle.judge(target.run(t.workload, DURATION), t.workload) for _ in range(CONFIRM_RUNS - 1)]
        if any(v.leading != verdict.leading for v in again):
            problems.append(f"{t.quirk}: not confirmed: re-runs show {[v.signature for v in again]}")
        mfs = mfs_of(quirk, verdict.signature)
        if not mfs.matches(t.workload):
            problems.append(f"{t.quirk}: the trigger is outside its own conditions {mfs.describe()}")
        spec = f"sim:{t.profile}"
        case = Workload(t.workload.flows, name=t.quirk,
                        description=f"Collie (NSDI 2022) Table 2 #{t.anomaly}: {quirk.summary}. Conditions: "
                                    f"{mfs.describe()}. Checked on {spec}: {verdict.signature}. Written by "
                                    "bench/write_corpus.py.")
        point = _point(case)
        write_case_folder(corpus / t.quirk, CaseRecord(
            anomaly_id=t.quirk, signature=verdict.signature, confirmed=True, workload=case, mfs=mfs,
            target=TargetRecord(spec, target.describe()),
            evidence=CaseEvidence.of(point, [verdict, *again], verdict.leading),
            original=OriginalFind(point, verdict)))
        rows.append(f"| [`{t.quirk}`]({t.quirk}/case.toml) | {t.anomaly} | `{spec}` | {quirk.summary} | "
                    f"`{verdict.signature}` |")
        for condition, broken in t.breaks.items():
            profile, workload = broken if isinstance(broken, tuple) else (t.profile, broken)
            truth, verdict = _judge(profile, workload)
            if t.quirk in truth or set(truth) != expected_fires(profile, workload):
                problems.append(f"{t.quirk}: the near miss without {condition!r} still fires it")
            elif not truth and verdict.anomalous:
                problems.append(f"{t.quirk}: the near miss without {condition!r} fires nothing but is judged "
                                f"{verdict.signature}")
            miss = near / t.quirk / slug(condition)
            miss.parent.mkdir(parents=True, exist_ok=True)
            named = Workload(workload.flows, name=f"{t.quirk}/{slug(condition)}",
                             description=f"{NEAR_MISS_OF}{t.quirk}{BREAKS}{condition}{BREAKS_END} Must not show "
                                         f"that anomaly on sim:{profile}. Written by bench/write_corpus.py.")
            write_case_folder(miss, CaseRecord(
                anomaly_id=f"{t.quirk}/{slug(condition)}", signature=verdict.signature, confirmed=False,
                workload=named, target=TargetRecord(f"sim:{profile}", _target(profile)[0].describe())))
    (corpus / "README.md").write_text(_README.format(rows="\n".join(rows)), encoding="utf-8")
    return problems


_README = """\
# The published anomalies, as replayable cases

The 18 anomalies of the Collie paper (NSDI 2022, Table 2), each a case folder in the format `--corpus` reads:
`case.toml` is the concrete workload that reproduced it, `mfs.json` the paper's necessary conditions in
collie's feature vocabulary, `evidence.json` where it was checked (the built-in simulated profile that has the
anomaly) and the oracle's verdict there.

```
collie campaign --target verbs:mlx5_0 --corpus workloads/corpus   # replay all 18 first, then search the rest
collie replay workloads/corpus/f03-read-mtu1k --target verbs:mlx5_0
```

A campaign runs every case once before it searches (apart from the budget), says which still reproduce, and
keeps its search out of their conditions, so it reports only what is new. On a simulated profile exactly the
cases of the anomalies it has reproduce (`collie sim show NAME` lists them). The `f` cases were found on
ConnectX-6 (subsystem F of the paper; `f09` needs PCIe relaxed ordering off, `f11` a two-socket AMD host, `f12`
a GPU behind a PCIe switch whose ACS misroutes peer traffic), the `h` cases on Broadcom P2100G (subsystem H).

| case | # | checked on | anomaly | signature there |
|---|---|---|---|---|
{rows}

Written by `PYTHONPATH=. python bench/write_corpus.py`, which checks every case on the simulator first (and
writes, for the tests, each trigger with one necessary condition broken to `tests/fixtures/near-misses/`);
`--check` says whether these files are up to date.
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the committed files differ")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus, near = Path(tmp) / "corpus", Path(tmp) / "near-misses"
        problems = write(corpus, near)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            raise SystemExit(1)
        if args.check:
            stale = _diff(corpus, CORPUS) + _diff(near, NEAR_MISSES)
            print("\n".join(stale) if stale else "up to date")
            raise SystemExit(1 if stale else 0)
        for new, old in ((corpus, CORPUS), (near, NEAR_MISSES)):
            if old.exists():
                shutil.rmtree(old)
            shutil.copytree(new, old)
    print(f"wrote {len(TRIGGERS)} cases to {CORPUS.relative_to(ROOT)} and "
          f"{sum(len(t.breaks) for t in TRIGGERS)} near misses to {NEAR_MISSES.relative_to(ROOT)}")


def _diff(new: Path, old: Path) -> list[str]:
    """Files that differ between the freshly written tree ``new`` and the committed ``old``."""
    out: list[str] = []

    def walk(c: filecmp.dircmp[str], rel: Path) -> None:
        out.extend(str(rel / n) for n in c.left_only + c.right_only + c.diff_files + c.funny_files)
        for name, sub in c.subdirs.items():
            walk(sub, rel / name)

    walk(filecmp.dircmp(new, old, ignore=[]), old.relative_to(ROOT))
    return sorted(out)


if __name__ == "__main__":
    main()
