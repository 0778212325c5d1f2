"""Validation of keyword options at construction, so a wrong option fails early and names itself."""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

T = TypeVar("T")


def check_type(name: str, value: object, kind: type[T]) -> T:
    # bool is an int in Python; an option declared int must not silently accept True.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"option {name} must be {kind.__name__}, not {type(value).__name__}")
    return value


def check_str(name: str, value: object) -> str:
    return check_type(name, value, str)


def check_bool(name: str, value: object) -> bool:
    return check_type(name, value, bool)


def check_number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"option {name} must be a number, not {type(value).__name__}")
    return float(value)


def check_positive(name: str, value: object) -> float:
    number = check_number(name, value)
    if number <= 0:
        raise ValueError(f"option {name} must be positive, got {value!r}")
    return number


def check_non_negative(name: str, value: object) -> float:
    number = check_number(name, value)
    if number < 0:
        raise ValueError(f"option {name} must not be negative, got {value!r}")
    return number


def check_int_range(name: str, value: object, low: int, high: int) -> int:
    number = check_type(name, value, int)
    if not low <= number <= high:
        raise ValueError(f"option {name} must be between {low} and {high}, got {number}")
    return number


def check_choice(name: str, value: T, choices: Collection[T]) -> T:
    if value not in choices:
        raise ValueError(f"option {name} must be one of {sorted(map(repr, choices))}, got {value!r}")
    return value
