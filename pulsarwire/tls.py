"""The TLS context of a ``pulsar+ssl://`` client, from the options the reference clients use."""

from __future__ import annotations

import os
import ssl

from mqwire.common.errors import ConfigurationError


def _check_file(option: str, path: object) -> str:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"option {option} must be a path, not {type(path).__name__}")
    text = os.fspath(path)
    assert isinstance(text, str)
    if not os.path.isfile(text):
        raise ConfigurationError(f"option {option}: no such file {text!r}")
    return text


def tls_context(
    *,
    ca_file: str | None,
    cert_file: str | None,
    key_file: str | None,
    validate_hostname: bool,
    allow_insecure: bool,
) -> ssl.SSLContext:
    """A client context: the system CAs (or ``ca_file``), hostname verification unless turned off."""
    cafile = None if ca_file is None else _check_file("tls_ca_file", ca_file)
    try:
        context = ssl.create_default_context(cafile=cafile)
    except ssl.SSLError as exc:
        raise ConfigurationError(f"option tls_ca_file: cannot load {cafile!r}: {exc}") from exc
    if allow_insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif not validate_hostname:
        context.check_hostname = False
    if cert_file is not None:
        certificate = _check_file("tls_cert_file", cert_file)
        key = None if key_file is None else _check_file("tls_key_file", key_file)
        try:
            context.load_cert_chain(certificate, key)
        except ssl.SSLError as exc:
            raise ConfigurationError(f"option tls_cert_file: cannot load the client certificate: {exc}") from exc
    elif key_file is not None:
        raise ConfigurationError("option tls_key_file needs option tls_cert_file")
    return context
