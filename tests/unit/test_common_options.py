"""The shared option convention: a TypedDict of names, a frozen config checked and built from it."""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

import pytest

from mqwire.common.errors import ConfigurationError, OptionTypeError, UnknownOptionError
from mqwire.common.options import (
    build_config,
    check_int_range,
    check_names,
    check_positive,
    check_str,
    defaults,
    instance_of,
    int_range,
    one_of,
    option,
    option_names,
    options_of,
    or_none,
)


class BaseOptions(TypedDict, total=False):
    retries: int


class WidgetOptions(BaseOptions, total=False):
    linger_ms: float
    mode: str
    name: str | None


@options_of(WidgetOptions)
@dataclasses.dataclass(frozen=True)
class WidgetConfig:
    retries: int = option(3, int_range(0, 10))
    linger: float = option(5, check_positive, name="linger_ms", unit="ms")
    mode: str = option("fast", one_of("fast", "safe"))
    name: str | None = option(None, or_none(check_str))


def test_defaults_are_applied_and_converted_to_the_fields_unit() -> None:
    config = build_config(WidgetConfig, "widget", {})
    assert config == WidgetConfig(retries=3, linger=0.005, mode="fast", name=None)
    assert defaults(WidgetConfig) == {"retries": 3, "linger_ms": 5, "mode": "fast", "name": None}


def test_given_values_are_checked_and_converted() -> None:
    config = build_config(WidgetConfig, "widget", {"linger_ms": 250, "retries": 0, "name": "w"})
    assert (config.linger, config.retries, config.name) == (0.25, 0, "w")


def test_the_config_is_frozen() -> None:
    config = build_config(WidgetConfig, "widget", {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.retries = 1  # type: ignore[misc]


def test_an_unknown_option_names_the_closest_known_one() -> None:
    with pytest.raises(UnknownOptionError, match=r"widget: unknown option 'lingr_ms' \(did you mean linger_ms\?\)"):
        build_config(WidgetConfig, "widget", {"lingr_ms": 5})
    # Inherited names count: retries comes from BaseOptions.
    with pytest.raises(UnknownOptionError, match=r"'retrys' \(did you mean retries\?\)"):
        build_config(WidgetConfig, "widget", {"retrys": 5})


def test_every_unknown_option_is_named_and_one_without_a_close_name_has_no_hint() -> None:
    with pytest.raises(UnknownOptionError, match=r"unknown options 'zzz', 'mod' \(did you mean mode\?\)$"):
        check_names("widget", ["zzz", "mod", "mode"], WidgetOptions)


def test_unknown_option_error_is_a_configuration_error_and_a_type_error() -> None:
    with pytest.raises(UnknownOptionError) as raised:
        build_config(WidgetConfig, "widget", {"bogus": 1})
    assert isinstance(raised.value, ConfigurationError)
    assert isinstance(raised.value, TypeError)


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"retries": 11}, ConfigurationError, "retries must be between 0 and 10"),
        ({"retries": True}, OptionTypeError, "retries must be int, not bool"),
        ({"linger_ms": 0}, ConfigurationError, "linger_ms must be positive"),
        ({"linger_ms": "5"}, OptionTypeError, "linger_ms must be a number"),
        ({"mode": "slow"}, ConfigurationError, "mode must be one of"),
        ({"name": 5}, OptionTypeError, "name must be str"),
    ],
)
def test_bad_values_are_typed_errors_naming_the_option(
    options: dict[str, Any], error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text):
        build_config(WidgetConfig, "widget", options)


def test_the_value_checks_raise_the_librarys_errors_which_are_still_value_and_type_errors() -> None:
    with pytest.raises(ConfigurationError):
        check_int_range("n", 5, 0, 1)
    with pytest.raises(ValueError):
        check_positive("n", -1)
    with pytest.raises(OptionTypeError):
        check_str("n", 1)
    with pytest.raises(TypeError):
        instance_of(bytes, "bytes")("n", "text")


def test_a_config_that_does_not_check_exactly_the_declared_options_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Missing:
        retries: int = option(3)

    with pytest.raises(ConfigurationError, match=r"missing linger_ms, mode, name; extra none"):
        options_of(WidgetOptions)(Missing)

    @dataclasses.dataclass(frozen=True)
    class Extra:
        retries: int = option(3)
        linger: float = option(5, name="linger_ms")
        mode: str = option("fast")
        name: str | None = option(None)
        colour: str = option("red")

    with pytest.raises(ConfigurationError, match=r"missing none; extra colour"):
        options_of(WidgetOptions)(Extra)


def test_a_config_not_tied_to_its_options_cannot_be_built() -> None:
    @dataclasses.dataclass(frozen=True)
    class Loose:
        retries: int = option(3)

    with pytest.raises(ConfigurationError, match="not tied"):
        build_config(Loose, "loose", {})


def test_option_names_include_inherited_ones_and_refuse_other_classes() -> None:
    assert option_names(WidgetOptions) == {"retries", "linger_ms", "mode", "name"}
    with pytest.raises(ConfigurationError):
        option_names(int)
