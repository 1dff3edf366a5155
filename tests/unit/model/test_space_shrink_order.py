"""A space file's ``[minimize]`` table: the order the minimizer shrinks the space's dimensions in."""

from __future__ import annotations

from pathlib import Path

import pytest

from collie.errors import InputError
from collie.model.space import SHRINK_ORDER, load_space

QPS = '[[dimension]]\nname = "qps"\nkind = "int"\nmin = 1\nmax = 64\n'


def _load(tmp_path: Path, body: str):  # type: ignore[no-untyped-def]
    p = tmp_path / "s.toml"
    p.write_text(QPS + body)
    return load_space(p)


def test_a_space_without_the_table_takes_the_default_order(tmp_path: Path) -> None:
    assert _load(tmp_path, "").shrink_order == SHRINK_ORDER
    assert SHRINK_ORDER.index("op") < SHRINK_ORDER.index("*") < SHRINK_ORDER.index("sizes")


def test_the_table_sets_the_order_and_may_name_parameters_the_space_does_not_search(tmp_path: Path) -> None:
    space = _load(tmp_path, '[minimize]\norder = ["op", "*", "sizes", "qps"]\n')
    assert space.shrink_order == ("op", "*", "sizes", "qps")
    assert "[minimize]" in (Path(__file__).resolve().parents[3] / "workloads" / "default.toml").read_text()


@pytest.mark.parametrize(("body", "fragment"), [
    ('[minimize]\norder = ["op", "colour", "*"]\n', "'colour' is not a parameter"),
    ('[minimize]\norder = ["op"]\n', 'and "*" (the others, in groups) once'),
    ('[minimize]\norder = ["op", "*", "op"]\n', "name each parameter at most once"),
    ('[minimize]\norder = "op"\n', "minimize.order: expected a list"),
    ('[minimize]\nfirst = ["op"]\n', "unknown field 'first'"),
])
def test_a_bad_table_is_one_sentence_naming_it(tmp_path: Path, body: str, fragment: str) -> None:
    with pytest.raises(InputError) as err:
        _load(tmp_path, body)
    assert fragment in str(err.value) and "minimize" in str(err.value)
