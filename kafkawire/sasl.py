"""SASL mechanisms for Kafka, sans-IO: PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, 7677), OAUTHBEARER
(RFC 7628), and GSSAPI (RFC 4752, Kerberos, in ``kafkawire.sasl_gssapi`` on the ``kerberos`` extra). Each
mechanism turns the server's challenges into the client's answers; the connection carries them in
SaslAuthenticate requests.

Secrets never appear in a repr, a log line or an exception message.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kafkawire.sasl_gssapi import KerberosSettings, load_binding, start_gssapi
from kafkawire.sasl_mechanism import Mechanism
from mqwire.common.errors import AuthenticationError

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
# Fewer iterations let whoever answers in the broker's place test passwords offline cheaply (RFC 7677
# asks for 4096 at least, as the Java client does); more than the ceiling is a CPU cost the server imposes.
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 1_000_000
# Above this, the key derivation runs in a worker thread so the event loop goes on meanwhile.
SCRAM_INLINE_ITERATIONS = 16384
TokenProvider = Callable[[], "str | Awaitable[str]"]


@dataclass(frozen=True)
class SaslSettings:
    """What ``connect(..., sasl_mechanism=...)`` configures."""

    mechanism: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token_provider: TokenProvider | None = field(default=None, repr=False)
    kerberos: KerberosSettings | None = None

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"option sasl_mechanism must be one of {', '.join(MECHANISMS)}")
        if self.mechanism == "GSSAPI":
            if self.kerberos is None:
                object.__setattr__(self, "kerberos", KerberosSettings())
        elif self.mechanism == "OAUTHBEARER":
            if self.token_provider is None or not callable(self.token_provider):
                raise ValueError("sasl_mechanism OAUTHBEARER needs sasl_oauth_token_provider (a callable)")
        elif not self.username or self.password is None:
            raise ValueError(f"sasl_mechanism {self.mechanism} needs sasl_plain_username and sasl_plain_password")


def kerberos_settings(config: Any) -> KerberosSettings | None:
    """The GSSAPI settings of a client's config (its ``sasl_kerberos_*`` options), None for other mechanisms."""
    if config.sasl_mechanism != "GSSAPI":
        return None
    load_binding()  # a missing extra is a configuration error when the client is made, not at its first connection
    return KerberosSettings(
        config.sasl_kerberos_service_name,
        config.sasl_kerberos_principal,
        config.sasl_kerberos_keytab,
        config.sasl_kerberos_domain_name,
    )


class Plain(Mechanism):
    def __init__(self, username: str, password: str) -> None:
        self._message = b"\0" + username.encode() + b"\0" + password.encode()

    def first(self) -> bytes:
        return self._message


class OAuthBearer(Mechanism):
    def __init__(self, token: str) -> None:
        self._message = b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01"

    def first(self) -> bytes:
        return self._message


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


class Scram(Mechanism):
    """The client side of SCRAM without channel binding."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        self._hash = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
        self._password = password.encode()
        self._nonce = nonce or base64.b64encode(secrets.token_bytes(24)).decode()
        self._first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def first(self) -> bytes:
        return ("n,," + self._first_bare).encode()

    def _server_first(self, challenge: bytes) -> tuple[str, str, bytes, int]:
        """The server-first message, its nonce, salt and iteration count, once checked."""
        try:
            server_first = challenge.decode()
            fields = dict(item.split("=", 1) for item in server_first.split(","))
            nonce, salt, iterations = fields["r"], base64.b64decode(fields["s"]), int(fields["i"])
        except (ValueError, KeyError) as exc:
            raise AuthenticationError(f"SCRAM: unreadable server-first message ({type(exc).__name__})") from None
        # The server's nonce is ours followed by its own part: equal would let it replay an earlier exchange.
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise AuthenticationError("SCRAM: the server's nonce does not extend the client's")
        if iterations < SCRAM_MIN_ITERATIONS:
            raise AuthenticationError(
                f"SCRAM: the server asks for {iterations} iterations, fewer than the {SCRAM_MIN_ITERATIONS} required"
            )
        if iterations > SCRAM_MAX_ITERATIONS:
            raise AuthenticationError(
                f"SCRAM: the server asks for {iterations} iterations, more than the {SCRAM_MAX_ITERATIONS} accepted"
            )
        return server_first, nonce, salt, iterations

    def heavy(self, challenge: bytes) -> bool:
        """Whether the server's iteration count makes the key derivation worth a worker thread (a malformed
        challenge raises here already)."""
        return self._server_first(challenge)[3] > SCRAM_INLINE_ITERATIONS

    def answer(self, challenge: bytes) -> bytes | None:
        server_first, nonce, salt, iterations = self._server_first(challenge)
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self._hash)
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{server_first},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, self._hash)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self._hash)
        self._server_signature = hmac.digest(server_key, auth_message, self._hash)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def finish(self, final: bytes) -> None:
        text = final.decode(errors="replace")
        if text.startswith("e="):
            raise AuthenticationError(f"SCRAM: the server refused: {text[2:]}")
        if not text.startswith("v=") or self._server_signature is None:
            raise AuthenticationError("SCRAM: no server signature in the final message")
        try:
            received = base64.b64decode(text[2:].split(",", 1)[0])
        except ValueError:
            raise AuthenticationError("SCRAM: unreadable server signature") from None
        if not hmac.compare_digest(received, self._server_signature):
            raise AuthenticationError("SCRAM: the server's signature does not match (not the real server?)")


async def answer_challenge(mechanism: Mechanism, challenge: bytes) -> bytes | None:
    """``mechanism.answer(challenge)``, in a worker thread when it is heavy (a large SCRAM iteration count)."""
    if mechanism.heavy(challenge):
        return await asyncio.to_thread(mechanism.answer, challenge)
    return mechanism.answer(challenge)


async def mechanism_for(settings: SaslSettings, host: str = "localhost", timeout: float = 30.0) -> Mechanism:
    """The mechanism of ``settings``, ready for its first message (an OAUTHBEARER token is fetched here, a
    Kerberos service ticket for ``host`` too, within ``timeout`` seconds)."""
    if settings.mechanism == "GSSAPI":
        assert settings.kerberos is not None
        return await start_gssapi(settings.kerberos, host, timeout)
    if settings.mechanism == "PLAIN":
        assert settings.username is not None and settings.password is not None
        return Plain(settings.username, settings.password)
    if settings.mechanism == "OAUTHBEARER":
        assert settings.token_provider is not None
        token = settings.token_provider()
        if not isinstance(token, str):
            token = await token
        return OAuthBearer(token)
    assert settings.username is not None and settings.password is not None
    return Scram(settings.mechanism, settings.username, settings.password)
