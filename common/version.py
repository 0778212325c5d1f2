"""The version of the mqwire distribution, which the clients report to the brokers as their software version.

It lives here, in the one package every client may import, so that no client imports the ``mqwire`` package
around it; ``mqwire.__version__`` reads it from here, and pyproject.toml's dynamic version points here.
"""

__version__ = "0.2.0"

__all__ = ["__version__"]
