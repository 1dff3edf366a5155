"""The two guests' rxe devices really talk to each other across qemu's socket link (not each to itself).

The GID comes from guest 1's agent (over real SSH), and is checked against the guest's own sysfs and its IP on the
link; then ``ib_write_bw`` (perftest, started through ssh) runs from guest 1 to guest 2, and both ends' rxe
counters show the packets: sent by guest 1, received by guest 2.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
import time
from pathlib import Path

from tests.softroce_pair.conftest import Guest

HW = "/sys/class/infiniband/rxe0/ports/1/hw_counters"


def _link_ip(guest: Guest) -> ipaddress.IPv4Address:
    out = guest.ssh("ip -4 -o addr show dev pair0").stdout
    m = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", out)
    assert m, f"{guest.name}: pair0 has no IPv4 address: {out!r}"
    return ipaddress.IPv4Address(m.group(1))


def _gid_ip(gid: str) -> ipaddress.IPv4Address:
    """The IPv4 address inside an IPv4-mapped RoCEv2 GID (``0000:...:ffff:0a4d:0001``)."""
    mapped = ipaddress.IPv6Address(gid).ipv4_mapped
    assert mapped is not None, f"GID {gid} is not IPv4-mapped"
    return mapped


def _counters(guest: Guest) -> dict[str, int]:
    out = guest.ssh(f"cd {HW} && grep -H . *").stdout
    return {name: int(value) for name, value in (line.split(":", 1) for line in out.splitlines())}


def test_the_agent_of_guest1_reports_its_rxe_gid_on_the_link(pair_inventory: Path, guests: tuple[Guest, Guest]) -> None:
    from collie.remote.client import AgentClient
    from collie.remote.inventory import load_inventory
    from collie.remote.ssh import KnownHosts, SshLauncher

    inv = load_inventory(pair_inventory)
    host = inv.hosts[0]
    launcher = SshLauncher(KnownHosts.default(inv.known_hosts), inv.connect_timeout)
    try:
        client = AgentClient(host, launcher.start(host), inv.request_timeout)
        try:
            client.hello()
            info = client.describe()
        finally:
            client.close()
    finally:
        launcher.close()
    assert info.driver == "rxe" and info.details["device"] == "rxe0" and info.details["gid_index"] == "1", info
    sysfs_gid = guests[0].read("/sys/class/infiniband/rxe0/ports/1/gids/1")
    assert ipaddress.IPv6Address(info.details["gid"]) == ipaddress.IPv6Address(sysfs_gid)
    assert _gid_ip(info.details["gid"]) == _link_ip(guests[0])
    assert _link_ip(guests[0]) != _link_ip(guests[1])


def test_ib_write_bw_from_guest1_reaches_guest2_across_the_socket_link(guests: tuple[Guest, Guest]) -> None:
    g1, g2 = guests
    server_ip = _link_ip(g2)
    before = _counters(g1), _counters(g2)
    # the server in guest 2 waits for one client; run it detached so this ssh returns, its output in a file
    log = "/run/collie-pair-ib_write_bw.log"
    g2.ssh(f"rm -f {log}; setsid ib_write_bw -d rxe0 -x 1 -s 4096 -n 200 -F >{log} 2>&1 </dev/null &")
    deadline = time.monotonic() + 60
    while "18515" not in g2.ssh("ss -ltnH").stdout:  # perftest's exchange port: the server is listening
        assert time.monotonic() < deadline, f"ib_write_bw server did not listen: {g2.read(log)}"
        time.sleep(0.5)
    client = g1.ssh(f"ib_write_bw -d rxe0 -x 1 -s 4096 -n 200 -F {shlex.quote(str(server_ip))}", check=False)
    deadline = time.monotonic() + 60
    while g2.ssh("pgrep -x ib_write_bw", check=False).returncode == 0:
        assert time.monotonic() < deadline, "ib_write_bw server did not finish"
        time.sleep(0.5)
    server_out = g2.read(log)
    assert client.returncode == 0, client.stdout + client.stderr + "\nserver:\n" + server_out
    # each side names the other's GID: guest 1's remote GID is guest 2's link address, and back
    gid_re = re.compile(r"remote address:.*\n\s*GID: ([0-9:]+)")
    for out, peer in ((client.stdout, server_ip), (server_out, _link_ip(g1))):
        remote = gid_re.search(out)
        assert remote, out
        assert str(peer).split(".") == [str(int(x)) for x in remote.group(1).split(":")[-4:]], out
    after = _counters(g1), _counters(g2)
    sent = after[0]["sent_pkts"] - before[0]["sent_pkts"]
    received = after[1]["rcvd_pkts"] - before[1]["rcvd_pkts"]
    # 200 writes: at least one packet each (4 at the link's active MTU of 1024 B), every one crossing the link
    assert sent >= 200 and received >= 200, (sent, received)
