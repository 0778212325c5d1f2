"""SASL GSSAPI (RFC 4752): Kerberos through the ``gssapi`` package over the system's MIT Kerberos (the
``kerberos`` extra), which is imported only when a client asks for GSSAPI.

The exchange: the client's AP-REQ and the broker's AP-REP travel as GSS tokens until the security context
is established; then the broker sends a wrapped offer of security layers and its maximum buffer size, and
the client answers, wrapped too, that it takes none (Kafka's TLS or nothing protects the connection) with
its authorization identity. The first token is the only step that talks to the KDC (for the client's
ticket-granting ticket and the broker's service ticket): it runs in a worker thread, bounded by the request
timeout. Errors name the client's principal and the cause, never a key.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import struct
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkawire.sasl_mechanism import Mechanism
from mqwire.common.errors import AuthenticationError, ConfigurationError

# RFC 4752 section 3.3: the security layers, one bit each, in the first octet of the wrapped messages.
LAYER_NONE = 1
# The token exchange of Kerberos takes two steps; a server that asks for many more is not speaking it.
MAX_CONTEXT_STEPS = 8


@dataclass(frozen=True)
class KerberosSettings:
    """The GSSAPI options: the broker's service name and host, the client's principal and keytab."""

    service_name: str = "kafka"
    principal: str | None = None
    keytab: str | None = None
    domain_name: str | None = None
    # One in-memory credential cache per configured client, so that a keytab login neither reads nor
    # overwrites the user's default cache and its ticket serves every connection of the client.
    ccache: str = field(default_factory=lambda: f"MEMORY:mqwire-{secrets.token_hex(8)}", repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("service_name", "principal", "keytab", "domain_name"):
            value = getattr(self, name)
            if (value is not None or name == "service_name") and (not isinstance(value, str) or not value):
                raise ConfigurationError(f"option sasl_kerberos_{name} must be a non-empty str")
        if self.keytab is not None and self.principal is None:
            raise ConfigurationError("option sasl_kerberos_keytab needs sasl_kerberos_principal (whose keys it holds)")


class GssContext(Protocol):
    """What the mechanism needs of a ``gssapi.SecurityContext`` (a fake one in tests)."""

    @property
    def complete(self) -> bool: ...

    def step(self, token: bytes | None = None) -> bytes | None: ...

    def wrap(self, message: bytes, encrypt: bool) -> Any: ...

    def unwrap(self, message: bytes) -> Any: ...


class Gssapi(Mechanism):
    """The client side of RFC 4752 over an initiating security context whose first step is already done."""

    def __init__(self, context: GssContext, first_token: bytes, principal: str, authzid: str = "") -> None:
        self._context = context
        self._first = first_token
        self._principal = principal
        self._authzid = authzid.encode()
        self._steps = 1
        self._answered_layers = False

    def first(self) -> bytes:
        return self._first

    @property
    def said_last(self) -> bool:
        return self._answered_layers

    def answer(self, challenge: bytes) -> bytes | None:
        if self._answered_layers:
            return None
        if not self._context.complete:
            self._steps += 1
            if self._steps > MAX_CONTEXT_STEPS:
                raise AuthenticationError(f"SASL GSSAPI for {self._principal}: the broker never completes the context")
            token = self._gss(lambda: self._context.step(challenge), "the broker's token was refused")
            # An established context still gets an (empty) answer: the broker's security-layer offer is the reply.
            return token or b""
        return self._layers(challenge)

    def _layers(self, challenge: bytes) -> bytes:
        offer = self._gss(lambda: bytes(self._context.unwrap(challenge).message), "unreadable security-layer offer")
        if len(offer) != 4:
            raise AuthenticationError(
                f"SASL GSSAPI for {self._principal}: the security-layer offer is {len(offer)} bytes, not 4"
            )
        if not offer[0] & LAYER_NONE:
            raise AuthenticationError(
                f"SASL GSSAPI for {self._principal}: the broker insists on a security layer (offer {offer[0]:#04x});"
                " only 'none' is supported, with TLS for privacy"
            )
        # No security layer, so no buffer size to announce: RFC 4752 wants 0 then.
        reply = struct.pack(">B3s", LAYER_NONE, b"\0\0\0") + self._authzid
        wrapped: bytes = self._gss(lambda: bytes(self._context.wrap(reply, False).message), "could not wrap the answer")
        self._answered_layers = True
        return wrapped

    def finish(self, final: bytes) -> None:
        if not self._answered_layers:
            raise AuthenticationError(f"SASL GSSAPI for {self._principal}: the broker ended before the security layer")

    def _gss(self, call: Any, what: str) -> Any:
        try:
            return call()
        except AuthenticationError:
            raise
        except Exception as exc:  # gssapi's errors share no base class with the raw ones on every version
            raise AuthenticationError(f"SASL GSSAPI for {self._principal}: {what}: {_cause(exc)}") from None


def _cause(exc: BaseException) -> str:
    """gssapi's own text of the failure (major and minor status), one line."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def load_binding() -> Any:
    """The ``gssapi`` module, or a ConfigurationError that says which extra to install."""
    try:
        import gssapi
    except ImportError:
        raise ConfigurationError(
            "sasl_mechanism GSSAPI needs the gssapi package over MIT Kerberos: pip install mqwire[kerberos]"
        ) from None
    return gssapi


def _context(gssapi: Any, settings: KerberosSettings, host: str) -> tuple[GssContext, str]:
    """The initiating context for the broker at ``host``, and the client principal's name for messages."""
    service = f"{settings.service_name}@{settings.domain_name or host}"
    target = gssapi.Name(service, name_type=gssapi.NameType.hostbased_service)
    if settings.principal is None:
        # The default credential cache, whoever holds it (kinit); its principal is only known once read.
        credentials = gssapi.Credentials(usage="initiate")
        principal = str(credentials.name)
    else:
        principal = settings.principal
        name = gssapi.Name(principal, name_type=gssapi.NameType.kerberos_principal)
        store = None
        if settings.keytab is not None:
            store = {"client_keytab": settings.keytab, "ccache": settings.ccache}
        credentials = gssapi.Credentials(name=name, usage="initiate", store=store)
    flags = gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.integrity
    context = gssapi.SecurityContext(
        name=target, creds=credentials, usage="initiate", mech=gssapi.MechType.kerberos, flags=flags
    )
    return context, principal


def _who(settings: KerberosSettings) -> str:
    """The principal, or the credential cache whose principal it is, for messages."""
    if settings.principal is not None:
        return settings.principal
    cache = os.environ.get("KRB5CCNAME")
    return f"the principal of the credential cache {cache or '(the default one)'}"


def _first_step(gssapi: Any, settings: KerberosSettings, host: str) -> tuple[GssContext, bytes, str]:
    principal = _who(settings)
    try:
        context, principal = _context(gssapi, settings, host)
        token = context.step()
    except Exception as exc:
        service = f"{settings.service_name}@{settings.domain_name or host}"
        raise AuthenticationError(f"SASL GSSAPI for {principal}: no ticket for {service}: {_cause(exc)}") from None
    return context, token or b"", principal


async def start_gssapi(settings: KerberosSettings, host: str, timeout: float) -> Gssapi:
    """A GSSAPI mechanism for the broker at ``host`` with its first token made: the credentials acquired and
    the service ticket fetched from the KDC in a worker thread, within ``timeout`` seconds."""
    gssapi = load_binding()
    work = asyncio.get_running_loop().run_in_executor(None, _first_step, gssapi, settings, host)
    try:
        context, token, principal = await asyncio.wait_for(work, timeout)
    except TimeoutError:
        raise AuthenticationError(
            f"SASL GSSAPI for {_who(settings)}: the KDC did not answer within {timeout:g} s"
            f" (a ticket for {settings.service_name}@{settings.domain_name or host})"
        ) from None
    return Gssapi(context, token, principal, authzid=principal)
