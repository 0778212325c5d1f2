"""Validation of keyword options at construction, so a wrong option fails early and names itself.

One convention for every client: a package declares the options of each factory once, as a public
``TypedDict`` (what the type checker sees), and says how each is checked in a frozen dataclass made with
:func:`option` fields and tied to the ``TypedDict`` by :func:`options_of`. :func:`build_config` then turns
the keyword arguments a user gave into that frozen config: unknown names are an
:class:`~mqwire.common.errors.UnknownOptionError` with the closest known name, each value is checked
(types and ranges) and converted to its unit (``_ms`` options become seconds), and absent options take
their one default.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Literal, TypeVar, cast

from mqwire.common.errors import ConfigurationError, OptionTypeError, UnknownOptionError

T = TypeVar("T")
C = TypeVar("C")

Check = Callable[[str, Any], Any]
"""``check(option name, value) -> checked value``, raising a ConfigurationError (or OptionTypeError)."""

Unit = Literal["ms"]
"""The unit an option is given in when the config holds it in another: ``"ms"`` is held in seconds."""

_SPEC = "mqwire.option"
_UNIT_SCALE: dict[str, float] = {"ms": 0.001}
# The TypedDict each config class was declared for (see options_of).
_DECLARED: dict[type[Any], type[Any]] = {}


# ---------------------------------------------------------------------------------------- value checks
def check_type(name: str, value: object, kind: type[T]) -> T:
    """``value`` if it is a ``kind``, else an OptionTypeError naming the option."""
    # bool is an int in Python; an option declared int must not silently accept True.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise OptionTypeError(f"option {name} must be {kind.__name__}, not {type(value).__name__}")
    return value


def check_str(name: str, value: object) -> str:
    """``value`` if it is a str."""
    return check_type(name, value, str)


def check_bool(name: str, value: object) -> bool:
    """``value`` if it is a bool."""
    return check_type(name, value, bool)


def check_number(name: str, value: object) -> float:
    """``value`` as a float if it is an int or a float (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OptionTypeError(f"option {name} must be a number, not {type(value).__name__}")
    return float(value)


def check_positive(name: str, value: object) -> float:
    """``value`` as a float if it is a number above 0."""
    number = check_number(name, value)
    if number <= 0:
        raise ConfigurationError(f"option {name} must be positive, got {value!r}")
    return number


def check_non_negative(name: str, value: object) -> float:
    """``value`` as a float if it is a number of 0 or more."""
    number = check_number(name, value)
    if number < 0:
        raise ConfigurationError(f"option {name} must not be negative, got {value!r}")
    return number


def check_int_range(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is an int from ``low`` to ``high``."""
    number = check_type(name, value, int)
    if not low <= number <= high:
        raise ConfigurationError(f"option {name} must be between {low} and {high}, got {number}")
    return number


def check_choice(name: str, value: T, choices: Collection[T]) -> T:
    """``value`` if it is one of ``choices``."""
    if value not in choices:
        raise ConfigurationError(f"option {name} must be one of {sorted(map(repr, choices))}, got {value!r}")
    return value


# ------------------------------------------------------------------------------ checks for option()
def int_range(low: int, high: int) -> Check:
    """The check of an int option from ``low`` to ``high``."""
    return lambda name, value: check_int_range(name, value, low, high)


def one_of(*choices: object) -> Check:
    """The check of an option that is one of ``choices``."""
    return lambda name, value: check_choice(name, value, choices)


def instance_of(kind: type[Any], what: str | None = None) -> Check:
    """The check of an option that is a ``kind`` (``what`` names it in the error, e.g. ``ssl.SSLContext``)."""

    def check(name: str, value: object) -> Any:
        if not isinstance(value, kind):
            raise OptionTypeError(f"option {name} must be {what or kind.__name__}, not {type(value).__name__}")
        return value

    return check


def callable_or_none(name: str, value: object) -> object:
    """The check of an option that is a callable (a serializer, a callback) or None."""
    if value is not None and not callable(value):
        raise OptionTypeError(f"option {name} must be callable, not {type(value).__name__}")
    return value


def or_none(check: Check) -> Check:
    """``check``, letting None through (an option whose default None means "not set")."""
    return lambda name, value: None if value is None else check(name, value)


# ------------------------------------------------------------------------------------ declared options
def option(default: object, check: Check | None = None, *, name: str | None = None, unit: Unit | None = None) -> Any:
    """A field of a config class: the option ``name`` (default: the field's name), its ``default`` as a
    user would give it (in ``unit``), the ``check`` its value passes, and the ``unit`` it is given in (the
    field holds it converted: ``"ms"`` to seconds). Such fields have no dataclass default: a config is
    made by :func:`build_config`, which applies the one default.
    """
    spec = _Spec(default=default, check=check, name=name, unit=unit)
    return dataclasses.field(metadata={_SPEC: spec}, kw_only=True)


@dataclasses.dataclass(frozen=True, slots=True)
class _Spec:
    default: object
    check: Check | None
    name: str | None
    unit: Unit | None


def option_names(declared: type[Any]) -> frozenset[str]:
    """The option names a ``TypedDict`` declares, those of the classes it extends included."""
    keys = getattr(declared, "__required_keys__", None)
    if keys is None:
        raise ConfigurationError(f"{declared.__name__} is not a TypedDict")
    return frozenset(keys) | frozenset(declared.__optional_keys__)


def check_names(what: str, options: Iterable[str], known: Collection[str] | type[Any]) -> None:
    """Raise an UnknownOptionError naming every option of ``options`` that ``known`` (names, or a
    ``TypedDict``) does not list, each with the closest known name when one is close."""
    names = option_names(known) if isinstance(known, type) else known
    unknown = [name for name in options if name not in names]
    if not unknown:
        return
    candidates = sorted(names)
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, candidates, n=1)
        hints.append(f"{name!r} (did you mean {close[0]}?)" if close else repr(name))
    plural = "s" if len(unknown) > 1 else ""
    raise UnknownOptionError(f"{what}: unknown option{plural} {', '.join(hints)}")


def _specs(config: type[Any]) -> list[tuple[dataclasses.Field[Any], str, _Spec]]:
    specs = []
    for field in dataclasses.fields(config):
        spec = field.metadata.get(_SPEC)
        if isinstance(spec, _Spec):
            specs.append((field, spec.name or field.name, spec))
    return specs


def options_of(declared: type[Any]) -> Callable[[type[C]], type[C]]:
    """Tie a frozen config class to the ``TypedDict`` of its options: the option names of its
    :func:`option` fields must be exactly the ``TypedDict``'s, checked once when the class is made, so the
    two cannot drift apart."""

    def tie(config: type[C]) -> type[C]:
        if not dataclasses.is_dataclass(config):
            raise ConfigurationError(f"{config.__name__} is not a dataclass")
        given = {name for _, name, _ in _specs(config)}
        wanted = option_names(declared)
        if given != wanted:
            missing = ", ".join(sorted(wanted - given)) or "none"
            extra = ", ".join(sorted(given - wanted)) or "none"
            raise ConfigurationError(
                f"{config.__name__} does not check the options of {declared.__name__}: missing {missing}; extra {extra}"
            )
        _DECLARED[config] = declared
        return config

    return tie


def defaults(config: type[Any]) -> dict[str, object]:
    """The default of every option of ``config``, by option name, as a user would give it."""
    return {name: spec.default for _, name, spec in _specs(config)}


def build_config(config: type[C], what: str, options: Mapping[str, object]) -> C:
    """The frozen ``config`` made from the keyword ``options`` a user gave ``what`` (a factory's name,
    shown in errors): unknown names fail with a "did you mean", absent options take their default, and
    every value is checked and converted to its field's unit."""
    declared = _DECLARED.get(config)
    if declared is None:
        raise ConfigurationError(f"{config.__name__} is not tied to its options (options_of)")
    check_names(what, options, declared)
    values: dict[str, object] = {}
    for field, name, spec in _specs(config):
        # Defaults pass the check too: it may normalise them (None to an empty mapping, say).
        value = options.get(name, spec.default)
        if spec.check is not None:
            value = spec.check(name, value)
        if spec.unit is not None and value is not None:
            value = cast(float, value) * _UNIT_SCALE[spec.unit]
        values[field.name] = value
    return config(**values)
