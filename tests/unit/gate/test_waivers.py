"""Waiver files: validated field by field, matched by leading symptom, expiring after their day."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.gate.waivers import Waiver, Waivers, load_waivers

GOOD = '''
[[waiver]]
signature = "pause@receiver+low_throughput@receiver"
reason = "vendor ticket 1234"
expires = 2027-01-31
case = "f03-read-mtu1k"

[[waiver]]
signature = "low_throughput@receiver"
reason = "soft-RoCE is CPU-bound"
expires = "2026-12-31"
'''


def test_a_good_file(tmp_path: Path) -> None:
    f = tmp_path / "w.toml"
    f.write_text(GOOD)
    w = load_waivers(f)
    assert [x.expires for x in w.waivers] == [dt.date(2027, 1, 31), dt.date(2026, 12, 31)]
    assert w.waivers[0].case == "f03-read-mtu1k" and w.waivers[1].case == ""
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert load_waivers(empty).waivers == ()


@pytest.mark.parametrize(("text", "message"), [
    ("[waivers]\n", "unknown field 'waivers'"),
    ('waiver = "x"\n', "waiver: expected [[waiver]] tables"),
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "r"\nexpires = 2027-01-31\nowner = "me"\n',
     "waiver[0]: unknown field 'owner'"),
    ('[[waiver]]\nsignature = "pause@receiver"\nexpires = 2027-01-31\n',
     "waiver[0]: reason: missing (a non-empty string)"),
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "  "\nexpires = 2027-01-31\n',
     "waiver[0]: reason: expected a non-empty string"),
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "r"\nexpires = 31.01.2027\n', "malformed TOML"),
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "r"\nexpires = "31/01/2027"\n',
     "waiver[0]: expires: expected a date like 2027-01-31, got '31/01/2027'"),
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "r"\nexpires = 2027-01-31T10:00:00\n',
     "waiver[0]: expires: expected a date without a time"),
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "r"\nexpires = 20270131\n',
     "waiver[0]: expires: expected a date like 2027-01-31, got 20270131"),
    ('[[waiver]]\nsignature = "pause"\nreason = "r"\nexpires = 2027-01-31\n', "waiver[0]: signature: 'pause' is not"),
])
def test_each_mistake_is_one_sentence_naming_the_field(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "w.toml"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        load_waivers(f)
    assert message in str(exc.value) and str(f) in str(exc.value) and "\n" not in str(exc.value)


def test_missing_file() -> None:
    with pytest.raises(InputError, match="no such file"):
        load_waivers(Path("/nonexistent/w.toml"))


def test_matching_and_expiry() -> None:
    day = dt.date(2027, 1, 31)
    pause = Waiver("pause@receiver", "r", day)
    only_f03 = Waiver("low_throughput@receiver", "r2", day, case="f03")
    w = Waivers((pause, only_f03))
    # by leading symptom: a weaker symptom flickering does not matter
    assert w.match("pause@receiver+low_throughput@receiver", None, day).active is pause
    assert w.match("low_throughput@receiver+pause@receiver", None, day).active is None
    assert w.match("low_throughput@receiver", "f03", day).active is only_f03
    assert w.match("low_throughput@receiver", "f01", day).active is None
    assert w.match("", None, day).active is None
    # it waives through its day, not after
    after = w.match("pause@receiver", None, day + dt.timedelta(days=1))
    assert after.active is None and after.expired is pause
    assert "until 2027-01-31: r" in pause.describe()


def test_a_waiver_about_a_case_the_corpus_lacks_is_refused() -> None:
    waivers = Waivers((Waiver("pause@receiver", "r", dt.date(2027, 1, 31)),
                       Waiver("pause@receiver", "r", dt.date(2027, 1, 31), case="f03-read-mtu1k", index=1)),
                      "w.toml")
    waivers.check_cases(["f03-read-mtu1k"], "corpus")
    with pytest.raises(InputError, match=r"^w.toml: waiver\[1\]: case: 'f03-read-mtu1k' is no case of the corpus "
                                         r"corpus; did you mean 'f03-read-mtu1'\?$"):
        waivers.check_cases(["f03-read-mtu1", "h15-ud-many-qp"], "corpus")
    with pytest.raises(InputError, match=r"is no case of the corpus corpus; the corpus holds h15-ud-many-qp$"):
        waivers.check_cases(["h15-ud-many-qp"], "corpus")


def test_a_waiver_may_cover_receiver_starvation(tmp_path: Path) -> None:
    f = tmp_path / "w.toml"
    f.write_text('[[waiver]]\nsignature = "rnr@receiver"\nreason = "a slow receiver by design"\n'
                 'expires = 2027-01-31\n')
    (w,) = load_waivers(f).waivers
    day = dt.date(2027, 1, 31)
    assert Waivers((w,)).match("rnr@receiver", None, day).active is w
    assert Waivers((w,)).match("low_throughput@receiver+rnr@receiver", None, day).active is None
    f.write_text('[[waiver]]\nsignature = "rnr@nowhere"\nreason = "r"\nexpires = 2027-01-31\n')
    with pytest.raises(InputError, match="rnr, isolation, straggler and end receiver, sender, victim, host, link"):
        load_waivers(f)
