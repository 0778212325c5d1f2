"""SASL: SaslHandshake (17) picks the mechanism, SaslAuthenticate (36) carries its tokens."""

from __future__ import annotations

from kafkawire.protocol.schema import BYTES, INT16, INT64, STRING, Array, Request, Response, field


class SaslHandshakeRequest(Request, api_key=17, versions="0-1"):
    mechanism: str = field(STRING)


class SaslHandshakeResponse(Response, api_key=17, versions="0-1"):
    error_code: int = field(INT16)
    mechanisms: list[str] = field(Array(STRING))


class SaslAuthenticateRequest(Request, api_key=36, versions="0-2", flexible="2+"):
    auth_bytes: bytes = field(BYTES)

    def __repr__(self) -> str:
        # The bytes are a password (PLAIN), a proof (SCRAM) or a token (OAUTHBEARER): their size only.
        return f"SaslAuthenticateRequest(auth_bytes=<{len(self.auth_bytes)} bytes>)"


class SaslAuthenticateResponse(Response, api_key=36, versions="0-2", flexible="2+"):
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+")
    auth_bytes: bytes = field(BYTES)
    # v1+: re-authenticate before this many milliseconds have passed (0: never required).
    session_lifetime_ms: int = field(INT64, "1+", default=0)
