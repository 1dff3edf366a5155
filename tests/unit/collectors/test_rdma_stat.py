"""rdma statistic show: text (one line per port, or -p with continuation lines) and -j JSON."""

from __future__ import annotations

import json

import pytest

from collie.collectors.catalog import load_catalog
from collie.collectors.rdma_stat import parse_rdma_stat, parse_rdma_stat_json, parse_rdma_stat_text
from collie.errors import InputError

TEXT = (
    "link rxe0/1 sent_pkts 120 rcvd_pkts 118 duplicate_request 0 out_of_seq_request 2 lifespan 10\n"
    "link mlx5_0/1 rx_write_requests 0 rx_read_requests 175528982 out_of_sequence 1\n"
)


def test_text_one_line_per_port() -> None:
    rxe, mlx = parse_rdma_stat_text(TEXT)
    assert rxe.device == "rxe0/1" and rxe.source == "rdma-stat"
    assert rxe.values == {"sent_pkts": 120, "rcvd_pkts": 118, "duplicate_request": 0,
                          "out_of_seq_request": 2, "lifespan": 10}
    assert mlx.values["rx_read_requests"] == 175528982
    assert all(load_catalog("rxe").lookup(n) for n in rxe.values)


def test_text_pretty_continuation_lines() -> None:
    text = "link mlx5_0/1\n    rx_write_requests 3\n    np_cnp_sent 4 rp_cnp_handled 5\n"
    [snap] = parse_rdma_stat(text)
    assert snap.values == {"rx_write_requests": 3, "np_cnp_sent": 4, "rp_cnp_handled": 5}


def test_json_form() -> None:
    doc = [{"ifindex": 0, "ifname": "rxe0", "port": 1, "sent_pkts": 7, "rcvd_pkts": 9},
           {"ifindex": 1, "ifname": "mlx5_0", "port": 1, "np_cnp_sent": 1333}]
    a, b = parse_rdma_stat(json.dumps(doc))
    assert a.device == "rxe0/1" and a.values == {"sent_pkts": 7, "rcvd_pkts": 9}
    assert b.values == {"np_cnp_sent": 1333}
    assert parse_rdma_stat_json(json.dumps(doc[0]))[0].device == "rxe0/1"


@pytest.mark.parametrize(("text", "message"), [
    ("", "no counters found"),
    ("hello world\n", "line 1 is not rdma statistic output"),
    ("link rxe0/1 sent_pkts\n", "counter 'sent_pkts' has no integer value; expected 'name value' pairs"),
    ("link rxe0/1 sent_pkts many\n", "counter 'sent_pkts many' has no integer value"),
    ("[1, 2]", "entry 0 is not a port object"),
    ('[{"ifname": "rxe0", "port": 1, "sent_pkts": "x"}]', "counter 'sent_pkts' has value 'x'"),
    ("[{", "not JSON"),
    ("[]", "expected a JSON array of ports"),
])
def test_garbage(text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_rdma_stat(text, "junk")
    assert message in str(exc.value) and "\n" not in str(exc.value)
