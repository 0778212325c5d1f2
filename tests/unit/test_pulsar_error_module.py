"""pulsarwire declares its exceptions in errors.py only, and the modules that raise them export the same
classes under the names they had (``pulsarwire.AdminError``, ``pulsarwire.schema.SchemaMismatchError``)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import pulsarwire
import pulsarwire.errors
import pulsarwire.schema


def _exceptions_declared_outside_errors() -> list[str]:
    found = []
    for info in pkgutil.walk_packages(pulsarwire.__path__, "pulsarwire."):
        if info.name.endswith("_pb2") or info.name == "pulsarwire.errors":
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == info.name:
                found.append(f"{info.name}.{name}")
    return found


def test_every_exception_is_declared_in_errors_py() -> None:
    assert _exceptions_declared_outside_errors() == []


@pytest.mark.parametrize(
    ("exported", "name"),
    [
        (pulsarwire, "AdminError"),
        (pulsarwire, "RetriableAdminError"),
        (pulsarwire, "TopicAlreadyExistsError"),
        (pulsarwire, "CryptoError"),
        (pulsarwire, "TransactionError"),
        (pulsarwire, "TransactionTimeoutError"),
        (pulsarwire.schema, "SchemaMismatchError"),
    ],
)
def test_the_public_names_are_the_classes_of_errors_py(exported: object, name: str) -> None:
    assert getattr(exported, name) is getattr(pulsarwire.errors, name)
    assert name in vars(exported)["__all__"]
