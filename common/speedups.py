"""The one rule by which a module picks its compiled speedups or its own Python code.

A speedup is an optional C extension built with the package when a C compiler is present; the module that uses
it keeps Python code that does the same. ``MQWIRE_PURE_PYTHON=1`` makes every module use its Python code (the
runtime matrix runs the suite so), and a speedup that was not built is the same as one turned off.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["PURE_PYTHON_VARIABLE", "load_speedups"]

PURE_PYTHON_VARIABLE = "MQWIRE_PURE_PYTHON"
"""The environment variable that, set to anything but the empty string, turns every compiled speedup off."""


def load_speedups(name: str) -> ModuleType | None:
    """The compiled module ``name``; None when ``MQWIRE_PURE_PYTHON`` is set or it was not built."""
    if os.environ.get(PURE_PYTHON_VARIABLE):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
