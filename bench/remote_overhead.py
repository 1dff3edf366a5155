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

    PYTHONPATH=. python bench/remote_overhead.py [--hosts 2 8 32] [--steps 20] [--ssh-steps 3]
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
from collie.remote.client import AgentClient
from collie.remote.inventory import load_inventory
from collie.remote.protocol import Hello, Run, encode
from collie.remote.ssh import KnownHosts, SshLauncher
from collie.workload import Workload
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[2, 8, 32])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ssh-steps", type=int, default=3)
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


if __name__ == "__main__":
    sys.exit(main())
