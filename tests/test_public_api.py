"""The public surface is what is documented: every name in each package's ``__all__``, every public method and
property of its classes, and every option of the calls that make clients, producers and consumers."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator
from typing import Any, is_typeddict

import pytest

PACKAGES = ["kafkawire", "pulsarwire", "tubemqwire", "mqwire.common", "mqwire.common.contract", "sparkwire"]
# The calls whose keyword options a user types: each option must be described in the call's docstring.
FACTORIES = {
    "kafkawire": ["connect", "Client.producer", "Client.consumer", "Client.admin"],
    "pulsarwire": ["connect", "Client.producer", "Client.consumer", "Client.reader", "Client.admin"],
    "tubemqwire": ["connect", "Client.producer", "Client.consumer", "Client.client_balance_consumer"],
}


def public_names(package: str) -> Iterator[tuple[str, Any]]:
    module = importlib.import_module(package)
    for name in module.__all__:
        yield f"{package}.{name}", getattr(module, name)


def own_members(cls: type) -> Iterator[tuple[str, Any]]:
    for name, member in vars(cls).items():
        if name.startswith("_") or isinstance(member, type):
            continue
        if inspect.isfunction(member) or isinstance(member, property | classmethod | staticmethod):
            yield name, member


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_a_docstring(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__doc__, f"{package} has no module docstring"
    missing = []
    for qualified, obj in public_names(package):
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not inspect.getdoc(obj):
            missing.append(qualified)
        if inspect.isclass(obj):
            for name, member in own_members(obj):
                target = member.fget if isinstance(member, property) else member
                if not getattr(target, "__doc__", None):
                    missing.append(f"{qualified}.{name}")
    assert not missing, f"undocumented public names: {missing}"


@pytest.mark.parametrize(("package", "call"), [(p, c) for p, calls in FACTORIES.items() for c in calls])
def test_every_option_is_declared_and_described(package: str, call: str) -> None:
    obj: Any = importlib.import_module(package)
    for part in call.split("."):
        obj = getattr(obj, part)
    signature = inspect.signature(obj)
    doc = inspect.getdoc(obj) or ""
    options = [p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    for parameter in signature.parameters.values():
        if parameter.kind is not inspect.Parameter.VAR_KEYWORD:
            continue
        # **options is allowed only as Unpack of a TypedDict, which declares every option to the type checker.
        unpacked = re.fullmatch(r"Unpack\[(\w+)\]", str(parameter.annotation).strip("'\""))
        assert unpacked, f"{package}.{call} takes **{parameter.name} without Unpack[TypedDict]: declare the options"
        declared = typed_dict(package, call, unpacked[1])
        options += sorted(declared.__required_keys__ | declared.__optional_keys__)
        doc += inspect.getdoc(declared) or ""
    undescribed = [name for name in options if name not in doc]
    assert not undescribed, f"{package}.{call}: options not described in its docstring: {undescribed}"


def typed_dict(package: str, call: str, name: str) -> Any:
    obj: Any = importlib.import_module(package)
    for part in call.split(".")[:-1]:
        obj = getattr(obj, part)
    module = importlib.import_module(getattr(obj, "__module__", package))
    declared = getattr(module, name, None) or getattr(importlib.import_module(package), name, None)
    assert declared is not None and is_typeddict(declared), f"{package}.{call}: {name} is not a TypedDict"
    return declared
