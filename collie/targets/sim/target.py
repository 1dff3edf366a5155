"""``SimTarget``: the simulated RDMA subsystem behind ``--target sim[:PROFILE|:PATH.toml]``.

Invariants:
    * ``run`` never sleeps unless ``pace > 0`` (then it sleeps ``pace x duration`` seconds, for demos);
    * noise is a pure function of ``(seed, workload.key(), repetition)``, where ``repetition`` is the one
      ``run`` is told (a campaign: how many of its journal's completed trials ran that key before) or else how
      many times this instance already ran that key; two instances with the same seed replaying the same
      sequence of workloads agree exactly, and so does a campaign resumed from its journal;
    * ``RunResult.truth`` lists the ids of the quirks that fired, then the ``base:<limit>`` labels of the
      base-model limits that held a flow down, then the profile's faults that shaped the run
      (``fault:HOST:KIND``), then its fabric's congested ports (``fabric:pause:PORT``) (``Outcome.fired``; tests
      and benchmarks only); with
      ``record_truth=False`` it is always empty and nothing else in the result changes;
    * on a fleet profile (hosts ``h0``, ``h1``, ...), a two-host workload's roles ``a`` and ``b`` are played by
      its first two hosts, as an inventory without ``[place]`` plays them; the result names the roles, and is
      the one a two-host profile of the same subsystem gives;
    * a pattern of the search space over host roles ``r0``, ``r1``, ... has role ``ri`` played by the profile's
      i-th host (a two-host profile: ``a``, ``b``); the result names the roles. A role's NIC ``ri/k`` is NIC ``k``
      of the host that plays ``ri``;
    * a fleet whose hosts have several NICs (``[host] nics``) simulates each NIC as a device of its own (its PCIe
      link, switch port and counters): ``RunResult.hosts`` has one entry per NIC used, named by its address.
"""

from __future__ import annotations

import time
from dataclasses import replace
from types import TracebackType
from typing import Self

from collie.codec import built
from collie.errors import InputError
from collie.model.features import features
from collie.model.flow import moved_address, nic_problem, split_address
from collie.model.patterns import rank_host_index
from collie.model.workload import Workload
from collie.targets.base import RunResult, TargetInfo, Unsupported
from collie.targets.sim.counters import dialect_counters
from collie.targets.sim.model import Compiled, check_supported, simulate
from collie.targets.sim.noise import Draws
from collie.targets.sim.profile import Profile, load_profile

_DRIVERS = {"mlx5": "mlx5", "bnxt_re": "bnxt_re", "rxe": "rxe"}
#: The roles of a two-host workload.
ROLES = ("a", "b")


class SimTarget:
    """A simulated RDMA subsystem of two hosts, or a fleet, described by a profile (see docs/sim-profiles.md).

    Args:
        profile: a built-in profile name, a path to a ``.toml`` profile, a :class:`Profile`, or None for the
            default (``cx6-200g``).
        seed: noise seed.
        pace: sleep this fraction of each experiment's duration in ``run`` (0 = never sleep).
        record_truth: fill ``RunResult.truth`` with the fired quirk ids and base-model labels.

    Raises:
        InputError: unknown or malformed profile, or a counter catalog whose ``sim`` fields the simulator
            cannot report (one sentence naming the file and field).
    """

    def __init__(self, profile: str | Profile | None = None, *, seed: int = 0, pace: float = 0.0,
                 record_truth: bool = True) -> None:
        self.profile = profile if isinstance(profile, Profile) else load_profile(profile)
        if pace < 0:
            raise InputError(f"pace: {pace} must not be negative")
        self.seed = int(seed)
        self.pace = float(pace)
        self.record_truth = record_truth
        self._runs: dict[str, int] = {}
        self._model = Compiled(self.profile, dialect_counters(self.profile.dialect))
        self._spec = f"sim:{self.profile.name}"
        hosts = self.profile.hosts
        #: a fleet's hosts playing the roles (None: the profile names them, or has too few hosts)
        self._roles = dict(zip(ROLES, hosts, strict=False)) \
            if not set(ROLES) & set(hosts) and len(hosts) >= len(ROLES) else None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    def describe(self) -> TargetInfo:
        p = self.profile
        nic, pcie, host = p.nic, p.pcie, p.host
        details = {
            "profile": p.name,
            "profile_source": p.source,
            "pcie": f"Gen{pcie.gen} x{pcie.width}",
            "pcie_gbps": f"{pcie.gbps:.1f}",
            "relaxed_ordering": "on" if pcie.relaxed_ordering else "off",
            "cpu": host.cpu_model or host.cpu_vendor,
            "cpu_vendor": host.cpu_vendor,
            "numa": f"{host.sockets} socket(s), NIC on node {host.nic_numa_node}",
            "gpu": host.gpu,
            "loopback_bps": f"{nic.loopback_gbps * 1e9:.0f}",
            "roce_overhead_bytes": "82",
            "base_latency_us": f"{nic.base_latency_us:g}",
            "max_qp": str(nic.max_qp),
            "max_mr": str(nic.max_mr),
            "max_sge": str(nic.max_sge),
            "max_qp_wr": str(nic.max_qp_wr),
            "quirks": ", ".join(q.id for q in p.active_quirks) or "none",
        }
        if host.nics > 1:
            details["nics"] = str(host.nics)
        return TargetInfo(
            name=self._spec, kind="sim", nic_model=nic.model, firmware=nic.firmware,
            driver=nic.driver or _DRIVERS[p.dialect], kernel=host.kernel, counter_dialect=p.dialect,
            line_rate_bps=nic.line_rate_gbps * 1e9, msg_rate_pps=nic.msg_rate_mpps * 1e6,
            hosts=p.hosts, details=details, max_rd_atomic=nic.max_rd_atomic,
        )

    def placed(self, workload: Workload) -> tuple[Workload, dict[str, str]]:
        """``workload`` with its roles played by the profile's hosts (see the invariants), and each of those
        hosts' role; ``workload`` itself and ``{}`` when it names hosts of the profile.

        Raises:
            Unsupported: host roles ``r0`` .. ``ri`` of a pattern beyond the profile's hosts.
        """
        roles = sorted({split_address(h)[0] for h in workload.hosts})  # each NIC's host
        ranked = [rank_host_index(h) for h in roles]
        if all(i is not None for i in ranked) and not set(roles) <= set(self.profile.hosts):
            last = max(i for i in ranked if i is not None)
            hosts = self.profile.hosts
            if last >= len(hosts):
                raise Unsupported(f"a pattern over the host roles r0 .. r{last} needs {last + 1} hosts; profile "
                                  f"{self.profile.name} has {len(hosts)} (a fleet profile: hosts = N)")
            host = {r: hosts[i] for r, i in zip(roles, ranked, strict=True) if i is not None}
        elif self._roles is not None and set(roles) <= self._roles.keys():
            host = self._roles
        else:
            return workload, {}
        return workload.with_flows(tuple(f.moved(host) for f in workload.flows)), {h: role for role, h in host.items()}

    def checked(self, workload: Workload) -> tuple[Workload, dict[str, str]]:
        """:meth:`placed` of a workload this profile can run.

        Raises:
            Unsupported: a NIC beyond its host's (said in the workload's names, as a remote fleet says it), a
                host outside the profile, GPU memory without a GPU, over a device limit.
        """
        if problem := nic_problem(workload.hosts, self.profile.host.nics):
            raise Unsupported(problem)
        placed, names = self.placed(workload)
        check_supported(self.profile, placed)
        return placed, names

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        """Simulate one experiment of ``duration`` measured seconds; ``repetition`` picks its noise (see the
        module's invariants).

        Raises:
            Unsupported: a host outside the profile, GPU memory without a GPU, over a device limit.
            ValueError: a duration that is not positive.
        """
        if not duration > 0:
            raise ValueError(f"duration must be positive, got {duration}")
        placed, names = self.checked(workload)
        key = workload.key()
        if repetition is None:
            rep = self._runs.get(key, 0)
            self._runs[key] = rep + 1
        elif repetition < 0:
            raise ValueError(f"repetition must be 0 or more, got {repetition}")
        else:
            rep = repetition
        draws = Draws(self.seed, key, rep)
        out = simulate(self._model, placed, features(workload), duration, draws)
        if names:
            out = replace(out, flows=tuple(replace(f, client=moved_address(f.client, names),
                                                   server=moved_address(f.server, names)) for f in out.flows),
                          hosts=tuple(replace(h, host=moved_address(h.host, names)) for h in out.hosts))
        if self.pace > 0:
            time.sleep(self.pace * duration)
        return built(RunResult, {
            "workload_key": key, "target": self._spec, "duration_s": float(duration), "setup_s": out.setup_s,
            "flows": out.flows, "hosts": out.hosts, "errors": (), "engine_bound": False,
            "truth": out.fired if self.record_truth else (),
        })
