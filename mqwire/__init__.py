"""mqwire: asyncio-native clients for Apache Kafka, Apache Pulsar and Apache InLong TubeMQ.

The clients themselves are the sibling packages ``kafkawire``, ``pulsarwire`` and ``tubemqwire``. This
package holds what they share and what surrounds them:

- ``mqwire.common``: the protocol-agnostic asyncio machinery (transport, correlation, pool, errors) and the
  typed contract the three clients implement;
- ``mqwire.testing``: real local Kafka, Pulsar and TubeMQ brokers and their pytest plugin (``mqwire[testing]``);
- ``mqwire.cli``: the ``mqwire`` command (``mqwire[cli]``).

Why ``mqwire.common`` and ``mqwire.testing`` rather than top-level ``common`` and ``brokers``: an installed
distribution must not claim generic import names that applications use for their own packages. In the source
tree the two live at the top (``common/`` and ``brokers/``) and ``mqwire/common`` and ``mqwire/testing`` are
symbolic links to them. A link, rather than a build-time package mapping, because it gives one module path
that the editable install, mypy, pytest and the wheel all see the same way (mypy cannot follow the import
hook an editable install needs for a mapping); the wheel holds real files under ``mqwire/``.

Importing ``mqwire`` is cheap: it imports none of its subpackages until ``mqwire.__version__`` is read (the
version lives in ``mqwire.common.version``, where the clients read it too).
"""

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from mqwire.common.version import __version__

        return __version__
    raise AttributeError(f"module 'mqwire' has no attribute {name!r}")
