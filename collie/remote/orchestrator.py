"""``RemoteTarget``: the target behind ``--target remote:hosts.toml``; one run drives the agents of the hosts its
workload uses.

A workload names its hosts in one of three ways:

* by the roles ``a`` and ``b`` (every two-host workload): each role is played by its placed host
  (:mod:`~collie.remote.placement`; taken out hosts are stood in for);
* by the inventory's host names (an N-host pattern, a fleet check's rounds): each named host plays itself. A
  named host taken out is not stood in for: workloads naming it are ``Unsupported``;
* by the host roles ``r0``, ``r1``, ... (a pattern of the search space): role ``ri`` is played by the i-th host
  of the inventory not taken out (so a host taken out is stood in for by the hosts after it).

On verbs hosts the workload's names are sent as they are; sim hosts simulate one fleet profile, and the
inventory's i-th host plays the profile's i-th host (``h0``, ``h1``, ...), so a run over hosts named like the
profile's returns exactly what ``sim:PROFILE`` returns. A NIC address (``node3/1``, ``r3/1``) is played by the
agent of its host; a NIC beyond what the hosts' agents have (a verbs agent drives one device; a sim agent as many
as its profile's ``[host] nics``) makes the workload ``Unsupported``, in the sentence ``sim:PROFILE`` says.

A run of one workload, every step driven on all agents at once (a thread per agent, never one round trip after
another):

1. agents whose channel died (killed, connection dropped, timed out) are started again (hello, clock skew;
   collie is deployed first to a host that lacks it: :func:`~collie.remote.deploy.start_agent`);
2. ``prepare``: each agent of a role the workload uses (a loopback workload: one host) gets the
   :class:`~collie.targets.session.RunPlan` with the roles it plays and answers its endpoints' connection data;
3. ``connect``: each agent gets every other agent's endpoints;
4. ``start``: one instant (now + a margin), converted to each agent's clock with its measured skew;
5. ``finish``: each agent waits for the run's end and reports its :class:`~collie.targets.session.HostPart`;
6. the parts are merged into one :class:`~collie.targets.base.RunResult` (flows from their client's agent, each
   role's HostResult from its own agent; on verbs hosts tx/rx are recomputed from the merged flows); a flow
   that the agent of its server role reports too (a verbs UD flow, counted where it arrived) takes its rates
   from that report and its latencies from the client's; a flow's control-path churn figures are made of its
   ends' own reports (``HostPart.churn``: each host reports the churning ends on its roles);
7. ``abort`` on every agent, always, also when a step failed.

Invariants:
    * a host that fails a step makes the run raise one :class:`~collie.remote.errors.HostError` sentence naming
      it (a campaign journals the trial FAILED with it and goes on); several failed hosts: one
      :class:`RemoteRunError` sentence naming each; ``Unsupported`` from any prepare is raised as is (pruned);
    * a host that failed :attr:`RemoteTarget.max_failures` runs in a row is taken out: its roles move to an unused
      host that fits (:func:`~collie.remote.placement.replace`), or the run raises
      :class:`~collie.errors.TargetUnavailable` (a campaign stops, exit 3, resumable);
    * ``__exit__`` closes every agent and SSH connection; the agents exit on their channel's end and abort
      their session, so nothing of a run outlives the target.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Self, TypeVar

from collie.errors import InputError, TargetError, TargetUnavailable
from collie.model.flow import moved_address, nic_problem, split_address
from collie.model.patterns import rank_host_index
from collie.model.workload import Workload
from collie.remote.client import AgentClient
from collie.remote.deploy import start_agent
from collie.remote.errors import HostError
from collie.remote.inventory import ROLES, Host, Inventory, TargetKind, load_inventory
from collie.remote.launch import Launcher
from collie.remote.placement import NoStandIn, check_profiles, place, replace
from collie.targets.base import (
    EndChurn,
    FlowResult,
    HostResult,
    RunResult,
    TargetInfo,
    Unsupported,
    with_churn,
)
from collie.targets.session import HostPart, RunPlan

#: Runs in a row a host may fail before it is taken out.
MAX_FAILURES: Final = 3
#: Seconds between sending ``start`` and the common start instant, on top of the slowest agent's round trip.
START_MARGIN_S: Final = 0.05
MAX_WORKERS: Final = 64
FINGERPRINT: Final = ("nic_model", "firmware", "driver", "kernel", "counter_dialect")

T = TypeVar("T")


class RemoteRunError(TargetError):
    """Several hosts failed one run; ``str(exc)`` names each with its reason."""


@dataclass
class _Agent:
    """One host's agent as the target holds it."""

    host: Host
    client: AgentClient
    info: TargetInfo


class RemoteTarget:
    """Runs workloads across the hosts of an inventory (see the module docstring).

    Args:
        inventory: the hosts (a path is loaded; mistakes are :class:`~collie.errors.InputError`).
        seed: the simulator seed every sim host's agent gets in ``hello``.
        spec: the name to report (default ``remote:PATH``).
        launcher: how agents are started (default: SSH, host keys checked; needs paramiko).
        accept_new_host_keys: with the default launcher, record keys of hosts that have none recorded.
        max_failures: runs in a row a host may fail before it is taken out.
        warmup: seconds of unmeasured traffic before each measured interval (default: none on sim hosts, the
            verbs target's own warm-up otherwise).

    Raises:
        InputError: the inventory is malformed, or the placement mixes simulator profiles.
    """

    def __init__(self, inventory: Inventory | str | Path, *, seed: int = 0, spec: str | None = None,
                 launcher: Launcher | None = None, accept_new_host_keys: bool = False,
                 max_failures: int = MAX_FAILURES, warmup: float | None = None) -> None:
        self.inventory = inventory if isinstance(inventory, Inventory) else load_inventory(inventory)
        self.spec = spec or f"remote:{self.inventory.path}"
        self.seed = int(seed)
        self.max_failures = max_failures
        self.warmup = warmup
        self.placement: dict[str, Host] = place(self.inventory)
        self.out: list[str] = []
        self.notes: list[str] = []
        self._launcher = launcher
        self._accept_new = accept_new_host_keys
        self._agents: dict[str, _Agent] = {}
        self._failures: dict[str, int] = {}
        self._runs = 0
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------------------------------ lifetime

    def __enter__(self) -> Self:
        if self._launcher is None:
            self._launcher = _ssh_launcher(self.inventory, self._accept_new)
        self._pool = ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(self.inventory.hosts) + 1),
                                        thread_name_prefix="collie-remote")
        try:
            failed = self._ensure_agents(self._placed_hosts())
            if failed:
                raise TargetUnavailable(_sentence([e for _, e in failed], "cannot be used") +
                                        "; see: collie hosts check --inventory "
                                        f"{self.inventory.path}")
            self._check_dialects()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        agents, self._agents = list(self._agents.values()), {}
        pool, self._pool = self._pool, None
        if pool is not None:
            list(pool.map(lambda a: a.client.close(), agents))
            pool.shutdown(wait=True)
        else:
            for a in agents:
                a.client.close()
        if self._launcher is not None:
            self._launcher.close()

    # ------------------------------------------------------------------------------------------ fingerprint

    def describe(self) -> TargetInfo:
        """The fingerprint: kind ``remote``, hosts = the inventory's host names (in its order), NIC fields from
        the placed hosts' own targets (``X / Y`` when the roles' hosts differ), and per role its host, address,
        skew and every fingerprint field in ``details`` (``a.host``, ``a.nic_model``, ``a.profile``, ...);
        ``details["nics"]`` when the roles' hosts have the same number of NICs, more than one (sim hosts of a
        fleet profile with ``[host] nics``)."""
        infos = {r: self._agent_of(r).info for r in ROLES}
        details: dict[str, str] = {}
        for r in ROLES:
            a = self._agent_of(r)
            clock = a.client.clock
            details.update({f"{r}.host": a.host.name, f"{r}.address": a.host.endpoint, f"{r}.target": a.info.name,
                            f"{r}.clock_skew_ms": f"{clock.skew_s * 1e3:.3f}" if clock else "",
                            f"{r}.line_rate_bps": f"{a.info.line_rate_bps:.0f}"})
            details.update({f"{r}.{k}": str(getattr(a.info, k)) for k in FINGERPRINT})
            details.update({f"{r}.{k}": v for k, v in a.info.details.items()})
        if all(h.target.kind is TargetKind.SIM for h in self.placement.values()):
            details["simulated"] = "yes"
        nics = {i.details.get("nics", "1") for i in infos.values()}
        if len(nics) == 1 and nics != {"1"}:
            details["nics"] = nics.pop()  # the hosts' NICs each (a fleet profile's [host] nics)

        def joined(field: str) -> str:
            values = list(dict.fromkeys(str(getattr(i, field)) for i in infos.values()))
            return " / ".join(values)

        first = infos[ROLES[0]]
        return TargetInfo(name=self.spec, kind="remote", nic_model=joined("nic_model"), firmware=joined("firmware"),
                          driver=joined("driver"), kernel=joined("kernel"), counter_dialect=first.counter_dialect,
                          line_rate_bps=min(i.line_rate_bps for i in infos.values()),
                          msg_rate_pps=min(i.msg_rate_pps for i in infos.values()),
                          hosts=tuple(h.name for h in self.inventory.hosts), details=details,
                          max_rd_atomic=min(i.max_rd_atomic for i in infos.values()),
                          atomics=all(i.atomics for i in infos.values()))

    def _check_dialects(self) -> None:
        dialects = {r: self._agent_of(r).info.counter_dialect for r in ROLES}
        if len(set(dialects.values())) > 1:
            raise InputError(f"the roles' hosts report different counter dialects "
                             f"({', '.join(f'{r}: {d}' for r, d in dialects.items())}); place hosts of one kind")

    # ------------------------------------------------------------------------------------------ one run

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        """Run ``workload`` across the placed hosts (see the module docstring).

        Raises:
            Unsupported: a host's target cannot run it, or it names a host that is not a role.
            HostError, RemoteRunError: hosts failed this run (one sentence naming each).
            TargetUnavailable: a host was taken out and none can stand in.
        """
        if not duration > 0:
            raise InputError(f"duration {duration} is not a positive number of seconds")
        used = self._hosts_of(workload)
        self._runs += 1
        failed = self._ensure_agents([self.inventory.host(n) for n in used])
        if failed:
            self._failed(failed)
        nics = min(self._agents[n].info.nics_per_host for n in used)
        if problem := nic_problem(workload.hosts, nics):
            raise Unsupported(problem)
        names = self._agent_names(used)
        sent = _renamed(workload, names)
        # each involved host with the names of the workload's hosts it plays, as its agent knows them
        involved = {host: tuple(moved_address(r, names) for r in roles) for host, roles in used.items()}
        agents = [self._agents[name] for name in involved]
        warmup = self._warmup(duration)
        plans = {name: RunPlan(run=self._runs, workload=sent, roles=roles, warmup=warmup, duration=duration,
                               repetition=repetition) for name, roles in involved.items()}
        try:
            endpoints = self._step(agents, lambda a: a.client.prepare(plans[a.host.name]))
            everyone = {n: list(e) for n, e in endpoints.items()}
            self._step(agents, lambda a: a.client.connect(
                [ep for other, eps in everyone.items() if other != a.host.name for ep in eps]))
            slowest = max((a.client.clock.rtt_s for a in agents if a.client.clock), default=0.0)
            at = time.time() + START_MARGIN_S + 2 * slowest
            self._step(agents, lambda a: a.client.start(at + _skew(a)))
            parts = self._step(agents, lambda a: a.client.finish(
                max(0.0, at - time.time()) + warmup + duration + self.inventory.request_timeout))
        finally:
            self._abort_all(agents)
        for a in agents:
            self._failures[a.host.name] = 0
        merged = self._merge(sent, duration, parts, involved)
        return _renamed_result(dataclasses.replace(merged, workload_key=workload.key()), names)

    def _hosts_of(self, workload: Workload) -> dict[str, tuple[str, ...]]:
        """Each inventory host taking part in ``workload``'s run with the workload's NIC addresses it plays (see
        the module docstring): the placed hosts of the roles it uses, the hosts playing its host roles, or the
        hosts it names; a NIC address (``r3/1``) goes with its host.

        Raises:
            Unsupported: a workload host is neither a role nor a host of the inventory, the workload names both,
                or it names a host taken out.
        """
        addresses = workload.hosts
        used = tuple(sorted({split_address(a)[0] for a in addresses}))
        return {name: tuple(a for a in addresses if split_address(a)[0] in bases)
                for name, bases in self._bases_of(used).items()}

    def _bases_of(self, used: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """:meth:`_hosts_of` of the workload's hosts ``used`` (their NICs aside)."""
        if set(used) <= set(ROLES):
            return {name: mine for name, roles in self._roles().items()
                    if (mine := tuple(r for r in roles if r in used))}
        ranked = {h: i for h in used if (i := rank_host_index(h)) is not None}
        if len(ranked) == len(used):
            tag = self.inventory.ranks_tag
            present = [h.name for h in self.inventory.hosts if h.name not in self.out and (not tag or tag in h.tags)]
            last = max(ranked.values())
            if last >= len(present):
                carrying = f" carrying the tag {tag!r} ([place] ranks)" if tag else ""
                raise Unsupported(f"a pattern over the host roles r0 .. r{last} needs {last + 1} hosts; "
                                  f"{self.inventory.path} has {len(present)}{carrying}"
                                  + (f" (without {', '.join(map(repr, self.out))}, taken out)" if self.out else ""))
            return {present[i]: (h,) for h, i in ranked.items()}
        roles = [h for h in used if h in ROLES]
        if roles:
            others = [h for h in used if h not in ROLES]
            raise Unsupported(f"the workload names the role {roles[0]!r} and the host {others[0]!r}; a workload "
                              f"on a remote target names the roles ({', '.join(ROLES)}) or the inventory's hosts, "
                              "not both")
        known = {h.name for h in self.inventory.hosts}
        stranger = next((h for h in used if h not in known), None)
        if stranger is not None:
            raise Unsupported(f"workload host {stranger!r} is neither a role ({', '.join(ROLES)}; r0, r1, ... in a "
                              f"pattern) nor a host of {self.inventory.path}")
        gone = next((h for h in used if h in self.out), None)
        if gone is not None:
            raise Unsupported(f"host {gone!r} of {self.inventory.path} was taken out after failing "
                              f"{self.max_failures} runs in a row; a workload naming it cannot run")
        return {h: (h,) for h in used}

    def _agent_names(self, used: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
        """Each workload host's name as the agents know it (see the module docstring): a role's is itself, a
        verbs host's too, a sim host's the profile's host at its inventory position (a host role ``ri`` on the
        inventory's i-th host stays ``ri``: the agents' simulators place it there, as ``sim:PROFILE`` does).

        Raises:
            Unsupported: named hosts mix simulated and verbs targets or simulator profiles, or a sim host's
                position is beyond its profile's hosts.
        """
        played = sorted({split_address(w)[0] for roles in used.values() for w in roles})
        hosts = [self.inventory.host(n) for n in used]
        if set(played) <= set(ROLES) or all(h.target.kind is not TargetKind.SIM for h in hosts):
            return {w: w for w in played}
        targets = sorted({h.target.spec for h in hosts})
        if len(targets) > 1:
            raise Unsupported(f"the workload's hosts run {' and '.join(targets)}; the hosts of one workload "
                              "simulate one fleet (the same sim profile on every one) or run verbs on every one")
        simulated = self._agents[hosts[0].name].info.hosts
        position = {h.name: i for i, h in enumerate(self.inventory.hosts)}
        beyond = next((h for h in hosts if position[h.name] >= len(simulated)), None)
        if beyond is not None:
            raise Unsupported(f"host {beyond.name!r} is host {position[beyond.name] + 1} of "
                              f"{self.inventory.path}, and {targets[0]} simulates {len(simulated)} hosts; a "
                              "workload naming it needs a fleet profile of that many hosts on every host (such as "
                              "sim:fleet8-cx6, or a profile with hosts = N)")
        bases = {h.name: {split_address(w)[0] for w in used[h.name]} for h in hosts}
        if all(rank_host_index(w) == position[h.name] for h in hosts for w in bases[h.name]):
            return {w: w for w in played}  # host roles on their own positions: each simulator places them itself
        return {w: simulated[position[h.name]] for h in hosts for w in bases[h.name]}

    def _warmup(self, duration: float) -> float:
        if self.warmup is not None:
            return self.warmup
        if all(h.target.kind is TargetKind.SIM for h in self.placement.values()):
            return 0.0
        return min(1.0, 0.25 * duration)  # the verbs target's own default_warmup

    def _placed_hosts(self) -> list[Host]:
        """The placed hosts, each once."""
        return list({h.name: h for h in self.placement.values()}.values())

    def _roles(self) -> dict[str, tuple[str, ...]]:
        """Each placed host's roles."""
        out: dict[str, list[str]] = {}
        for role, host in self.placement.items():
            out.setdefault(host.name, []).append(role)
        return {n: tuple(r) for n, r in out.items()}

    def _agent_of(self, role: str) -> _Agent:
        return self._agents[self.placement[role].name]

    def _step(self, agents: Sequence[_Agent], call: Callable[[_Agent], T]) -> dict[str, T]:
        """``call`` on every agent at once; their results by host name. Failures: ``Unsupported`` is raised as
        is; host failures are counted and raised as one sentence."""
        assert self._pool is not None
        futures = {a.host.name: self._pool.submit(call, a) for a in agents}
        wait(futures.values())  # every agent's step has ended before anything else is sent to any of them
        results: dict[str, T] = {}
        failed: list[tuple[str, HostError]] = []
        unsupported: Unsupported | None = None
        for name, fut in futures.items():
            try:
                results[name] = fut.result()
            except Unsupported as exc:
                unsupported = unsupported or exc
            except HostError as exc:
                failed.append((name, exc))
        if failed:
            self._failed(failed)
        if unsupported is not None:
            raise unsupported
        return results

    def _abort_all(self, agents: Sequence[_Agent]) -> None:
        """``abort`` on every healthy agent at once; an agent that cannot abort is left broken (relaunched at
        the next run)."""
        assert self._pool is not None
        healthy = [a for a in agents if not a.client.broken]
        for fut in [self._pool.submit(a.client.abort) for a in healthy]:
            with contextlib.suppress(HostError):
                fut.result()

    def _failed(self, failed: Sequence[tuple[str, HostError]]) -> None:
        """Count the failures, take out hosts that failed too often, and raise the run's error."""
        notes = []
        for name, _ in failed:
            self._failures[name] = self._failures.get(name, 0) + 1
            if self._failures[name] >= self.max_failures:
                notes.append(self._take_out(name))
        errors = [e for _, e in failed]
        if len(errors) == 1 and not notes:
            raise errors[0]
        raise RemoteRunError(_sentence(errors, "failed") + "".join(notes))

    def _take_out(self, name: str) -> str:
        """Take host ``name`` out; the note saying who stands in for it.

        Raises:
            TargetUnavailable: no unused host fits.
        """
        self.out.append(name)
        agent = self._agents.pop(name, None)
        if agent is not None:
            agent.client.close()
        roles = [r for r, h in self.placement.items() if h.name == name]
        try:
            self.placement = replace(self.inventory, self.placement, name, self.out)
        except NoStandIn as exc:
            raise TargetUnavailable(f"host {name!r} failed {self.max_failures} runs in a row and is taken out, and "
                                    f"{exc}; the campaign cannot go on (fix the host, then continue with "
                                    f"--resume)") from None
        check_profiles(self.placement)
        note = f"; host {name!r} failed {self.max_failures} runs in a row and is taken out"
        if roles:
            note += (f": role{'s' if len(roles) > 1 else ''} {', '.join(roles)} now on host "
                     f"{self.placement[roles[0]].name!r}")
        self.notes.append(note[2:])
        return note

    # ------------------------------------------------------------------------------------------ agents

    def _ensure_agents(self, hosts: Collection[Host]) -> list[tuple[str, HostError]]:
        """Start (again) the agent of every host of ``hosts`` that is missing or broken, at once; the hosts that
        failed."""
        assert self._pool is not None
        needed = [h for h in hosts if h.name not in self._agents or self._agents[h.name].client.broken]
        for h in needed:
            old = self._agents.pop(h.name, None)
            if old is not None:
                old.client.close()
        futures = {h.name: self._pool.submit(self._launch, h) for h in needed}
        failed: list[tuple[str, HostError]] = []
        for name, fut in futures.items():
            try:
                self._agents[name] = fut.result()
            except HostError as exc:
                failed.append((name, exc))
        return failed

    def _launch(self, host: Host) -> _Agent:
        assert self._launcher is not None
        client = start_agent(self._launcher, host, self.inventory.request_timeout, seed=self.seed).client
        try:
            return _Agent(host, client, client.describe())
        except BaseException:
            client.close()
            raise

    def _merge(self, workload: Workload, duration: float, parts: Mapping[str, HostPart],
               involved: Mapping[str, tuple[str, ...]]) -> RunResult:
        """The agents' parts as one result: each host's flows and HostResults of the workload hosts it plays
        (``involved``, by inventory host)."""
        flows: dict[int, FlowResult] = {}
        hosts: dict[str, HostResult] = {}
        errors: list[str] = []
        truth: list[str] = []
        arrived: dict[int, FlowResult] = {}
        churn: dict[int, list[EndChurn]] = {}
        for name, part in parts.items():
            roles = set(involved[name])
            flows.update({f.flow: f for f in part.flows if f.client in roles})
            arrived.update({f.flow: f for f in part.flows if f.client not in roles and f.server in roles})
            hosts.update({h.host: h for h in part.hosts if h.host in roles})
            errors += [e if len(parts) == 1 else f"host {name!r}: {e}" for e in part.errors]
            truth += [t for t in part.truth if t not in truth]
            for end in part.churn:
                churn.setdefault(end.flow, []).append(end)
        missing = [i for i in range(len(workload.flows)) if i not in flows]
        if missing:
            raise TargetError(f"no host reported flow {missing[0]} of the workload (its client role "
                              f"{workload.flows[missing[0]].client.host!r}); the agents' parts do not fit")
        for i, got in arrived.items():
            flows[i] = dataclasses.replace(flows[i], bps=got.bps, pps=got.pps, msg_rate=got.msg_rate)
        for i, ends in churn.items():
            if i in flows:
                flows[i] = with_churn(flows[i], ends)
        merged = tuple(flows[i] for i in range(len(workload.flows)))
        if any(self.inventory.host(n).target.kind is TargetKind.VERBS for n in involved):
            hosts = _rates_from_flows(workload, merged, hosts)
        order = [h for h in _host_order(workload, parts) if h in hosts]
        return RunResult(workload_key=workload.key(), target=self.spec, duration_s=float(duration),
                         setup_s=max((p.setup_s for p in parts.values()), default=0.0), flows=merged,
                         hosts=tuple(hosts[h] for h in order), errors=tuple(errors),
                         engine_bound=any(p.engine_bound for p in parts.values()), truth=tuple(truth))


def _renamed(workload: Workload, names: Mapping[str, str]) -> Workload:
    """``workload`` with its hosts renamed by ``names`` (a pattern stays a pattern); itself when no name
    changes."""
    if all(k == v for k, v in names.items()):
        return workload
    if workload.pattern is not None:
        victim = workload.pattern.victim
        pattern = dataclasses.replace(workload.pattern, hosts=tuple(names[h] for h in workload.pattern.hosts),
                                      victim=None if victim is None else victim.moved(names))
        return Workload.of_pattern(pattern, workload.name, workload.description)
    return workload.with_flows(tuple(f.moved(names) for f in workload.flows))


def _renamed_result(result: RunResult, names: Mapping[str, str]) -> RunResult:
    """``result`` of a workload sent renamed by ``names``, with the workload's own host names back in its flows
    and host results (the simulator's ground truth keeps naming the profile's hosts, as ``sim:PROFILE`` does)."""
    if all(k == v for k, v in names.items()):
        return result
    back = {v: k for k, v in names.items()}
    return dataclasses.replace(
        result, flows=tuple(dataclasses.replace(f, client=moved_address(f.client, back),
                                                server=moved_address(f.server, back)) for f in result.flows),
        hosts=tuple(dataclasses.replace(h, host=moved_address(h.host, back)) for h in result.hosts))


def _host_order(workload: Workload, parts: Mapping[str, HostPart]) -> list[str]:
    """The roles reported, sorted (as a local target orders its hosts)."""
    return sorted({h.host for p in parts.values() for h in p.hosts})


def _rates_from_flows(workload: Workload, flows: Sequence[FlowResult], hosts: Mapping[str, HostResult]
                      ) -> dict[str, HostResult]:
    """Each role's tx/rx recomputed from every flow (the payload sender of a READ is its server), as the verbs
    target does on one host."""
    from dataclasses import replace as copy

    tx = {h: [0.0, 0.0] for h in hosts}
    rx = {h: [0.0, 0.0] for h in hosts}
    for f, r in zip(workload.flows, flows, strict=True):
        sender, receiver = (r.server, r.client) if f.receiver_is_client else (r.client, r.server)
        for acc, who in ((tx, sender), (rx, receiver)):
            if who in acc:
                acc[who][0] += r.bps
                acc[who][1] += r.pps
    return {h: copy(hr, tx_bps=tx[h][0], tx_pps=tx[h][1], rx_bps=rx[h][0], rx_pps=rx[h][1])
            for h, hr in hosts.items()}


def _skew(agent: _Agent) -> float:
    return agent.client.clock.skew_s if agent.client.clock is not None else 0.0


def _sentence(errors: Sequence[HostError], verb: str) -> str:
    if len(errors) == 1:
        return str(errors[0])
    return f"{len(errors)} hosts {verb}: " + "; ".join(str(e) for e in errors)


def _ssh_launcher(inventory: Inventory, accept_new: bool) -> Launcher:
    try:  # paramiko is only needed for remote hosts
        from collie.remote.ssh import KnownHosts, SshLauncher
    except ImportError as exc:
        raise InputError(f"a remote target needs {exc.name or 'paramiko'}; install it with 'pip install paramiko' "
                         f"(or Debian's python3-paramiko)") from None
    return SshLauncher(KnownHosts.default(inventory.known_hosts, accept_new), inventory.connect_timeout)
