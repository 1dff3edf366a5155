"""An RC/UC QP's move to RTR is tried again when the kernel's address resolution timed out (ETIMEDOUT), and
only then: any other error, or the last of :data:`RTR_ATTEMPTS` timeouts, comes through as it was raised."""

from __future__ import annotations

import errno
from typing import Any

import pytest

from collie.targets.verbs.resources import RTR_ATTEMPTS, _to_rtr


class RdmaError(Exception):
    """Stands for pyverbs' PyverbsRDMAError: a message and an ``error_code`` (an errno)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"Failed to modify QP state to RTR. Errno: {code}")
        self.error_code = code


class FlakyQP:
    """A QP whose first ``failures`` moves to RTR raise ``code``."""

    def __init__(self, failures: int, code: int = errno.ETIMEDOUT) -> None:
        self.failures, self.code, self.tries, self.attrs = failures, code, 0, list[Any]()

    def to_rtr(self, attr: Any) -> None:
        self.tries += 1
        if self.tries <= self.failures:
            raise RdmaError(self.code)
        self.attrs.append(attr)


def test_a_timed_out_rtr_is_tried_again_until_it_succeeds() -> None:
    qp = FlakyQP(failures=RTR_ATTEMPTS - 1)
    _to_rtr(qp, "attr", (RdmaError,))
    assert qp.tries == RTR_ATTEMPTS and qp.attrs == ["attr"]


def test_the_last_timeout_is_raised_as_it_came() -> None:
    qp = FlakyQP(failures=RTR_ATTEMPTS)
    with pytest.raises(RdmaError, match="Errno: 110"):
        _to_rtr(qp, "attr", (RdmaError,))
    assert qp.tries == RTR_ATTEMPTS and not qp.attrs


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOMEM, -1])
def test_any_other_error_is_raised_at_once(code: int) -> None:
    qp = FlakyQP(failures=1, code=code)
    with pytest.raises(RdmaError):
        _to_rtr(qp, "attr", (RdmaError,))
    assert qp.tries == 1


def test_an_error_outside_pyverbs_is_not_caught() -> None:
    class Broken:
        def to_rtr(self, attr: Any) -> None:
            raise TypeError("not a QP")

    with pytest.raises(TypeError):
        _to_rtr(Broken(), "attr", (RdmaError,))
