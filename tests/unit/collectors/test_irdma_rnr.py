"""irdma's gen3 RNR counters: the kernel names their hw_counters files ``RNR sent`` and ``RNR received``
(drivers/infiniband/hw/irdma/verbs.c, irdma_hw_stat_names), blanks included. Every collector reads such a name
in its normal form (``RNR_sent``), which the irdma catalog names, so receiver starvation is judged on irdma too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collie.collectors.catalog import counter_name, load_catalog, parse_catalog
from collie.collectors.normalize import normalize
from collie.collectors.rdma_stat import parse_rdma_stat
from collie.collectors.sysfs import parse_grep_dump, read_sysfs
from collie.errors import InputError
from collie.tomlio import parse_toml

IRDMA = load_catalog("irdma")


def _irdma_tree(root: Path, sent: int, received: int) -> Path:
    """A gen3 irdma port's hw_counters as the kernel lays them out (a few of them)."""
    hw = root / "sys/class/infiniband/irdma0/ports/1/hw_counters"
    hw.mkdir(parents=True)
    for name, value in (("ip4InOctets", 5000), ("cnpSent", 4), ("RNR sent", sent), ("RNR received", received),
                        ("ord limit count", 0)):
        (hw / name).write_text(f"{value}\n")
    return root


def test_the_normal_form_joins_a_names_words_with_underscores() -> None:
    assert counter_name("RNR sent") == "RNR_sent" and counter_name("Nak Sequence Error") == "Nak_Sequence_Error"
    assert counter_name("rcvd_rnr_err") == "rcvd_rnr_err"


def test_irdma_rnr_files_are_read_normalized_and_judged_as_receiver_starvation(tmp_path: Path) -> None:
    [before] = read_sysfs(_irdma_tree(tmp_path / "t0", 10, 2))
    [after] = read_sysfs(_irdma_tree(tmp_path / "t1", 50, 12))
    assert {"RNR_sent", "RNR_received", "ord_limit_count"} <= set(after.values) and after.problems == ()
    assert after.sources["RNR_sent"] == "hw"
    assert IRDMA.lookup("RNR_sent") is not None and IRDMA.lookup("RNR_received") is not None
    deltas = {k: float(after.values[k] - before.values[k]) for k in ("RNR_sent", "RNR_received")}  # type: ignore[operator]
    n = normalize(deltas, 2.0, IRDMA)
    assert n.receiver_starvation_per_s == 25  # (40 + 10) / 2 s
    assert set(n.receiver_starvation_rates) == {"RNR_sent", "RNR_received"}


def test_the_grep_dump_and_rdma_statistic_read_blank_names_the_same_way() -> None:
    dump = ("/sys/class/infiniband/irdma0/ports/1/hw_counters/RNR sent:7\n"
            "/sys/class/infiniband/irdma0/ports/1/hw_counters/cnpSent:3\n")
    [snap] = parse_grep_dump(dump)
    assert snap.values == {"RNR_sent": 7, "cnpSent": 3}
    [text] = parse_rdma_stat("link irdma0/1 cnpSent 3 RNR sent 7 RNR received 1\n")
    assert text.values == {"cnpSent": 3, "RNR_sent": 7, "RNR_received": 1}
    [js] = parse_rdma_stat(json.dumps([{"ifindex": 0, "ifname": "irdma0", "port": 1, "RNR sent": 7}]))
    assert js.values == {"RNR_sent": 7}


def test_a_catalog_naming_a_counter_with_blanks_is_told_its_normal_form() -> None:
    text = ('driver = "x"\ndescription = "x"\n[[counter]]\nname = "RNR sent"\nsource = "hw"\nkind = "monotonic"\n'
            'unit = "events"\nrole = "receiver_starvation"\nmeaning = "x"\n')
    with pytest.raises(InputError, match=r"'RNR sent' is not a counter name \(no blanks allowed: a driver's name "
                                         r"with blanks is written with _, e.g. 'RNR_sent'\)"):
        parse_catalog(parse_toml(text, "x.toml"), "x.toml")
