"""Control overhead per step: persistent agents over SSH vs one ``ssh`` command per step (the Collie scripts' way).

Starts N real sshd servers on 127.0.0.1 (tests/sshd_fixture.py: each its own port, host key, authorized key) for
N = 2, 8, 32 hosts. One *step* drives every host at once (concurrently) and waits for all of them:

* ``agent run``: one ``run`` request (a 64 KiB RC WRITE on the host's sim target) to each host's persistent agent
  (started once over one SSH connection per host; start-up excluded);
* ``agent sample``: one ``sample`` request the same way;
* ``ssh true``: one OpenSSH ``ssh HOST true`` per host: the floor of the one-command-per-step way (a new
  connection, handshake and authentication each time, but nothing run);
* ``ssh agent``: one ``ssh HOST python3 -m collie.agent --stdio`` per host that gets hello + run on stdin and
  exits: what one step costs when each step is its own command.

Prints milliseconds per step and the ratios. The sim runs no traffic (duration is simulated), so a step's time
is all control overhead. Asserts nothing; tests never time anything.

Then, per experiment of the remote target (``RemoteTarget.run``: relaunch check, prepare, connect, start, finish,
merge, abort on every host of the placement, all hosts at once each step), on sim hosts for 2 and 8 hosts:

* 2 hosts: one RemoteTarget over two hosts (roles a and b), running experiments one after another;
* 8 hosts: four RemoteTargets of two hosts each, in four threads at once (four placements of one inventory's
  hosts, as parallel search chains would use them).

A sim host does not sleep through the measured interval (it is simulated), so an experiment's wall time is the
control overhead plus the simulator's own compute on the agent; the latter is measured apart (the same workloads
on a local SimTarget in this process) and subtracted: "control" = wall - local sim compute. With four targets on
a 2-core machine the hosts' agents, sshd and the controller threads share the same cores, so the 8-host figure
shows contention as much as the controller's cost.

    PYTHONPATH=. python bench/remote_overhead.py [--hosts 2 8 32] [--steps 20] [--ssh-steps 3]
        [--target-hosts 2 8] [--experiments 50]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from collie import __version__
from collie.model.workload import Workload
from collie.remote.client import AgentClient
from collie.remote.inventory import load_inventory
from collie.remote.orchestrator import RemoteTarget
from collie.remote.protocol import Hello, Run, encode
from collie.remote.ssh import KnownHosts, SshLauncher
from collie.targets.sim import SimTarget
from tests.conftest import EXAMPLES
from tests.sshd_fixture import SshdFarm, need_sshd, start_farm

WORKLOAD = Workload.load(EXAMPLES / "rc-write-64k.toml")


def per_step(pool: ThreadPoolExecutor, n: int, steps: int, one: Callable[[int], object]) -> list[float]:
    """Seconds of each step: ``one(i)`` for every host i at once, waiting for all."""
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        list(pool.map(one, range(n)))
        out.append(time.perf_counter() - t0)
    return out


def ssh_argv(farm: SshdFarm, i: int, known: Path, command: str) -> list[str]:
    return ["ssh", "-q", "-i", str(farm.client_key), "-p", str(farm.servers[i].port), "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes", "root@127.0.0.1", command]


def measure(n: int, steps: int, ssh_steps: int, folder: Path) -> dict[str, float]:
    farm = start_farm(folder, n)
    try:
        inventory = farm.inventory(folder / "hosts.toml")
        known = inventory.with_suffix(".known_hosts")
        inv = load_inventory(inventory)
        launcher = SshLauncher(KnownHosts(folder / "no-user-known-hosts", inv.known_hosts), inv.connect_timeout)
        with ThreadPoolExecutor(max_workers=n) as pool:
            t0 = time.perf_counter()
            clients = list(pool.map(lambda h: AgentClient(h, launcher.start(h), 120), inv.hosts))
            list(pool.map(lambda c: c.hello(), clients))
            startup = time.perf_counter() - t0
            run = per_step(pool, n, steps, lambda i: clients[i].run(WORKLOAD, 1.0))
            sample = per_step(pool, n, steps, lambda i: clients[i].sample())
            for c in clients:
                c.close()
            launcher.close()
            true = per_step(pool, n, ssh_steps, lambda i: subprocess.run(
                ssh_argv(farm, i, known, "true"), check=True, stdin=subprocess.DEVNULL))
            lines = (encode(Hello(inv.hosts[0].name, "sim:cx6-200g", __version__), 1)
                     + encode(Run(WORKLOAD, 1.0), 2))
            agent = per_step(pool, n, ssh_steps, lambda i: subprocess.run(
                ssh_argv(farm, i, known, "python3 -m collie.agent --stdio"), input=lines, check=True,
                capture_output=True))
    finally:
        for s in farm.servers:
            s.stop()
    return {"startup": startup, "run": statistics.median(run), "sample": statistics.median(sample),
            "ssh_true": statistics.median(true), "ssh_agent": statistics.median(agent)}


def measure_target(n: int, experiments: int, folder: Path) -> dict[str, float]:
    """Per-experiment wall time of ``RemoteTarget.run`` with ``n`` sim hosts (n / 2 targets of 2 hosts, in
    parallel), and the local simulator's compute for the same experiments."""
    farm = start_farm(folder, n)
    try:
        inventories = [SshdFarm(farm.client_key, farm.servers[i:i + 2]).inventory(folder / f"pair{i}.toml")
                       for i in range(0, n, 2)]
        targets = [RemoteTarget(inv, seed=1) for inv in inventories]
        with ThreadPoolExecutor(max_workers=len(targets)) as pool:
            list(pool.map(lambda t: t.__enter__(), targets))
            try:
                for t in targets:
                    t.run(WORKLOAD, 1.0, repetition=0)  # warm: first-use imports and caches on the agents

                def chain(t: RemoteTarget) -> list[float]:
                    times = []
                    for i in range(experiments):
                        t0 = time.perf_counter()
                        t.run(WORKLOAD, 1.0, repetition=i)
                        times.append(time.perf_counter() - t0)
                    return times

                t0 = time.perf_counter()
                walls = [x for times in pool.map(chain, targets) for x in times]
                elapsed = time.perf_counter() - t0
            finally:
                list(pool.map(lambda t: t.__exit__(None, None, None), targets))
    finally:
        for s in farm.servers:
            s.stop()
    local = SimTarget(seed=1)
    sim = []
    for i in range(experiments):
        t0 = time.perf_counter()
        local.run(WORKLOAD, 1.0, repetition=i)
        sim.append(time.perf_counter() - t0)
    wall, compute = statistics.median(walls), statistics.median(sim)
    return {"wall": wall, "sim": compute, "control": wall - compute,
            "rate": len(walls) / elapsed, "targets": len(targets)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[2, 8, 32])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ssh-steps", type=int, default=3)
    parser.add_argument("--target-hosts", type=int, nargs="*", default=[2, 8],
                        help="host counts for the RemoteTarget.run overhead (even numbers; none: skip)")
    parser.add_argument("--experiments", type=int, default=50, help="experiments per target")
    args = parser.parse_args()
    need_sshd()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.hosts:
            rows[n] = measure(n, args.steps, args.ssh_steps, Path(tmp) / f"n{n}")
            r = rows[n]
            print(f"{n:>3} hosts: agents up in {r['startup'] * 1e3:7.0f} ms | per step: agent run "
                  f"{r['run'] * 1e3:7.1f} ms, agent sample {r['sample'] * 1e3:7.1f} ms, ssh true "
                  f"{r['ssh_true'] * 1e3:7.1f} ms, ssh agent {r['ssh_agent'] * 1e3:7.1f} ms | ssh agent / agent run "
                  f"= {r['ssh_agent'] / r['run']:5.1f}x, ssh true / agent run = {r['ssh_true'] / r['run']:5.1f}x",
                  flush=True)
    first, last = min(rows), max(rows)
    if first != last:
        grow = rows[last]["run"] / rows[first]["run"]
        print(f"agent run per step grows {grow:.1f}x from {first} to {last} hosts ({last / first:.0f}x the hosts); "
              f"ssh agent per step grows {rows[last]['ssh_agent'] / rows[first]['ssh_agent']:.1f}x")
    per: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.target_hosts:
            per[n] = r = measure_target(n, args.experiments, Path(tmp) / f"t{n}")
            print(f"{n:>3} hosts ({r['targets']:.0f} remote target(s) at once): per experiment wall "
                  f"{r['wall'] * 1e3:6.1f} ms, local sim compute {r['sim'] * 1e3:5.1f} ms, control "
                  f"{r['control'] * 1e3:6.1f} ms | {r['rate']:6.1f} experiments/s in all", flush=True)
    if len(per) > 1:
        first, last = min(per), max(per)
        print(f"control per experiment {per[last]['control'] / per[first]['control']:.1f}x from {first} to {last} "
              f"hosts; experiments/s {per[last]['rate'] / per[first]['rate']:.1f}x; ssh agent step ({first} hosts) / "
              f"remote experiment control = "
              f"{rows[first]['ssh_agent'] / per[first]['control'] if first in rows else float('nan'):.0f}x")


if __name__ == "__main__":
    sys.exit(main())
