"""The shared hierarchy is declared once (``mqwire.common.errors.__all__``) and re-exported whole by each
package; ErrorCodes turns a broker's numeric code into its named exception."""

from __future__ import annotations

import pytest

import mqwire.common
import mqwire.common.errors
import pulsarwire
import pulsarwire.errors
import tubemqwire
import tubemqwire.errors
from mqwire.common.errors import BrokerError, ErrorCodes, FatalBrokerError, RetriableBrokerError


class _Known(FatalBrokerError):
    """A code the table lists."""


class _Unknown(RetriableBrokerError):
    """What a code the table does not list gets."""


def test_a_listed_code_gets_its_class_and_the_brokers_message() -> None:
    codes = ErrorCodes({7: _Known}, unknown=_Unknown, fallback="broker error")
    error = codes.error_for(7, "no such thing")
    assert type(error) is _Known
    assert (str(error), error.code) == ("no such thing", 7)


def test_an_unlisted_code_gets_the_unknown_class_and_an_empty_message_the_fallback() -> None:
    codes = ErrorCodes({7: _Known}, unknown=_Unknown, fallback="broker error")
    assert codes.error_class(8) is _Unknown
    error = codes.error_for(8, "")
    assert (str(error), error.code) == ("broker error 8", 8)


def test_the_hierarchy_lists_every_class_it_declares() -> None:
    declared = {
        name
        for name, value in vars(mqwire.common.errors).items()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == "mqwire.common.errors"
    }
    assert set(mqwire.common.errors.__all__) == declared


@pytest.mark.parametrize("module", [mqwire.common, pulsarwire, pulsarwire.errors, tubemqwire, tubemqwire.errors])
def test_each_package_re_exports_the_whole_hierarchy(module: object) -> None:
    exported = vars(module)["__all__"]
    for name in mqwire.common.errors.__all__:
        assert name in exported, name
        assert getattr(module, name) is getattr(mqwire.common.errors, name)
    assert len(exported) == len(set(exported))


@pytest.mark.parametrize(
    ("errors", "code", "expected", "fallback"),
    [
        (pulsarwire.errors.error_for, 11, pulsarwire.errors.TopicNotFoundError, "Pulsar server error 11"),
        (pulsarwire.errors.error_for, 999, pulsarwire.errors.UnknownServerError, "Pulsar server error 999"),
        (tubemqwire.errors.error_for_code, 404, tubemqwire.errors.NotFoundError, "TubeMQ error code 404"),
        (tubemqwire.errors.error_for_code, 1, tubemqwire.errors.UnknownErrorCodeError, "TubeMQ error code 1"),
    ],
)
def test_the_packages_tables(errors: object, code: int, expected: type[BrokerError], fallback: str) -> None:
    assert callable(errors)
    error = errors(code, "")
    assert type(error) is expected
    assert (str(error), error.code) == (fallback, code)
