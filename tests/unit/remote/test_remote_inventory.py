"""The inventory: the shipped example loads; every mistake is one sentence naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.remote.inventory import TargetKind, load_inventory, parse_inventory
from tests.conftest import ROOT, run_cli

EXAMPLE = ROOT / "hosts" / "lab.toml"
GOOD_HOST = '[[host]]\nname = "a"\naddress = "127.0.0.1"\ntarget = "sim"\n'


def parse(text: str, tmp_path: Path) -> object:
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return load_inventory(path)


def test_the_example_inventory_loads_with_canonical_targets_and_paths() -> None:
    inv = load_inventory(EXAMPLE)
    assert inv.names == ("node-a", "node-b", "sim-1", "sim-2")
    a = inv.host("node-a")
    assert (a.user, a.port, a.netdev, a.numa, a.tags) == ("collie", 22, "ens1f0np0", 0, ("rack1", "cx6"))
    assert a.target.kind is TargetKind.VERBS and a.target.spec == "verbs:mlx5_0:1:3"
    assert (a.target.device, a.target.port) == ("mlx5_0", 1)
    assert inv.host("sim-1").target.spec == "sim:cx6-200g"
    assert (inv.host("sim-2").port, inv.host("sim-2").user) == (2222, "lab")
    assert inv.known_hosts == EXAMPLE.parent / "lab.known_hosts"
    assert a.identity == Path.home() / ".ssh" / "id_ed25519"
    assert [h.name for h in inv.tagged("sim")] == ["sim-1", "sim-2"]
    assert (inv.connect_timeout, inv.request_timeout) == (10.0, 30.0)


def test_defaults_apply_and_relative_paths_are_taken_from_the_inventory_folder(tmp_path: Path) -> None:
    inv = parse('[defaults]\ntarget = "sim:rxe"\nidentity = "keys/id"\nuser = "u"\n'
                '[[host]]\nname = "a"\naddress = "h1"\n[[host]]\nname = "b"\naddress = "h2"\nuser = "v"\n',
                tmp_path)
    assert [(h.name, h.user, h.target.spec) for h in inv.hosts] == [("a", "u", "sim:rxe"), ("b", "v", "sim:rxe")]
    assert inv.hosts[0].identity == tmp_path / "keys" / "id"
    assert inv.hosts[0].line == 5 and inv.hosts[1].line == 8


def test_hostile_names_and_tags_are_data_and_kept_exactly(tmp_path: Path) -> None:
    inv = parse('[[host]]\nname = "x; touch /tmp/p $(id) `id` \'q\\"\\nz"\naddress = "127.0.0.1"\ntarget = "sim"\n'
                'tags = ["$(reboot)", "a;b"]\n', tmp_path)
    assert inv.hosts[0].name == "x; touch /tmp/p $(id) `id` 'q\"\nz"
    assert inv.hosts[0].tags == ("$(reboot)", "a;b")


@pytest.mark.parametrize(("text", "expected"), [
    (GOOD_HOST + "colour = 1\n",
     "hosts.toml:5: host[0]: unknown field 'colour'; allowed fields are address, identity, name"),
    ("verbose = true\n" + GOOD_HOST, "hosts.toml:1: unknown field 'verbose'; allowed fields are connect_timeout"),
    ('[defaults]\nname = "x"\n' + GOOD_HOST,
     "hosts.toml:2: defaults: unknown field 'name'; allowed fields are identity"),
    ('[[host]]\nname = "a"\ntarget = "sim"\n', "hosts.toml:1: host[0]: address: missing (a host name or IP address)"),
    ('[[host]]\naddress = "h"\ntarget = "sim"\n', "hosts.toml:1: host[0]: name: missing (a non-empty host name"),
    ('[[host]]\nname = "a"\naddress = "h"\n',
     "hosts.toml:1: host[0]: target: missing (a device target, in the host or in [defaults]: sim,"),
    (GOOD_HOST + GOOD_HOST,
     "hosts.toml:6: host[1]: name: host names must be unique, got 'a' (already the name of host[0])"),
    (GOOD_HOST.replace('"sim"', '"verbs:mlx5_0:x"'), "hosts.toml:4: host[0]: target: target verbs:mlx5_0:x: port"),
    (GOOD_HOST.replace('"sim"', '"verbs:"'), "hosts.toml:4: host[0]: target: target verbs needs a device name"),
    (GOOD_HOST.replace('"sim"', '"sim:nope"'), "hosts.toml:4: host[0]: target: 'nope' is not a built-in simulator"),
    (GOOD_HOST.replace('"sim"', '"remote:x.toml"'), "hosts.toml:4: host[0]: target: 'remote:x.toml' is not a device"),
    (GOOD_HOST + "port = 0\n", "hosts.toml:5: host[0]: port: expected a TCP port (an integer from 1 to 65535), got 0"),
    (GOOD_HOST + "port = 70000\n",
     "hosts.toml:5: host[0]: port: expected a TCP port (an integer from 1 to 65535), got 70000"),
    (GOOD_HOST + 'port = "22"\n',
     "hosts.toml:5: host[0]: port: expected a TCP port (an integer from 1 to 65535), got '22'"),
    ("[defaults]\nport = true\n" + GOOD_HOST,
     "hosts.toml:2: defaults: port: expected a TCP port (an integer from 1 to 65535), got True"),
    (GOOD_HOST.replace('"127.0.0.1"', '"a b"'),
     "hosts.toml:3: host[0]: address: expected a host name or IP address, got 'a b'"),
    (GOOD_HOST.replace('"127.0.0.1"', '""'),
     "hosts.toml:3: host[0]: address: expected a host name or IP address, got ''"),
    (GOOD_HOST.replace('"a"', '""'),
     "hosts.toml:2: host[0]: name: expected a non-empty host name without NUL characters, got ''"),
    (GOOD_HOST + 'user = "a b"\n',
     "hosts.toml:5: host[0]: user: expected a user name (letters, digits, '_', '.', '-', '@'), got 'a b'"),
    (GOOD_HOST + 'netdev = "eth0"\n', "hosts.toml:5: host[0]: netdev: a netdev only applies to a verbs target"),
    (GOOD_HOST.replace('"sim"', '"verbs:rxe0"') + 'netdev = "a/b"\n',
     "hosts.toml:5: host[0]: netdev: expected a network interface name (at most 15"),
    (GOOD_HOST + "numa = -1\n", "hosts.toml:5: host[0]: numa: must be 0 or more, got -1"),
    (GOOD_HOST + 'tags = "x"\n', "hosts.toml:5: host[0]: tags: expected a list of non-empty strings, got 'x'"),
    (GOOD_HOST + 'identity = ""\n', "hosts.toml:5: host[0]: identity: expected a file name, got ''"),
    ("connect_timeout = 0\n" + GOOD_HOST,
     "hosts.toml:1: connect_timeout: expected a timeout (a number of seconds above 0 and at most 3600), "
     "got 0"),
    ('request_timeout = "x"\n' + GOOD_HOST,
     "hosts.toml:1: request_timeout: expected a timeout (a number of seconds above 0 and at "
     "most 3600), got 'x'"),
    ("", "hosts.toml: host: missing (at least one [[host]] table with a name and an address)"),
    ("host = 3\n", "hosts.toml:1: host: expected at least one [[host]] table with a name and an address, got 3"),
    ("[[host\n", "hosts.toml: malformed TOML"),
    ("host = []\n", "hosts.toml:1: host: expected at least one [[host]] table with a name and an address, got []"),
    ("host = [1]\n", "hosts.toml: host[0]: expected a [[host]] table, got 1"),
    ("defaults = 3\n" + GOOD_HOST, "hosts.toml:1: defaults: expected a table, got 3"),
    (GOOD_HOST + 'tags = ["x", ""]\n', "hosts.toml:5: host[0]: tags[1]: expected a non-empty string, got ''"),
    (GOOD_HOST + 'numa = "0"\n', "hosts.toml:5: host[0]: numa: expected a NUMA node (an integer), got '0'"),
    ('known_hosts = 3\n' + GOOD_HOST, "hosts.toml:1: known_hosts: expected a file name, got 3"),
    ('[place]\na = 3\n' + GOOD_HOST, 'hosts.toml:2: place: a: expected a host name or "tag:TAG", got 3'),
])
def test_each_mistake_is_one_sentence_naming_line_and_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(InputError) as err:
        parse(text, tmp_path)
    message = str(err.value)
    assert expected in message
    assert message.startswith(str(tmp_path / "hosts.toml"))
    assert "\n" not in message


def test_a_missing_file_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_inventory(tmp_path / "nope.toml")


def test_parse_inventory_needs_no_file_on_disk(tmp_path: Path) -> None:
    inv = parse_inventory(GOOD_HOST, tmp_path / "virtual.toml")
    assert inv.names == ("a",) and inv.known_hosts is None


def test_hosts_list_validates_through_the_cli(tmp_path: Path) -> None:
    ok = run_cli("hosts", "list", "--inventory", str(EXAMPLE), "--format", "json")
    assert ok.returncode == 0, ok.stderr
    assert "node-a" in ok.stdout and "verbs:mlx5_0:1:3" in ok.stdout
    roles = {row["host"]: row["roles"] for row in json.loads(ok.stdout)}
    assert roles == {"node-a": "a", "node-b": "b", "sim-1": None, "sim-2": None}  # its [place]: node-a, tag:cx6
    mixed = tmp_path / "mixed.toml"
    mixed.write_text(GOOD_HOST + '[[host]]\nname = "b"\naddress = "h"\ntarget = "sim:p2100g-100g"\n')
    listed = run_cli("hosts", "list", "--inventory", str(mixed), "--format", "json")
    assert listed.returncode == 0 and [r["roles"] for r in json.loads(listed.stdout)] == [None, None]
    assert listed.stderr.startswith(f"warning: --target remote:{mixed} would refuse this inventory: role 'a' is on")
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD_HOST + "port = 99999\n")
    out = run_cli("hosts", "list", "--inventory", str(bad))
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"collie: error: {bad}:5: host[0]: port: expected a TCP port (an "
                                               f"integer from 1 to 65535), got 99999"]
