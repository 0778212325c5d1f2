"""What a client shows the master and the brokers: an optional user signature, and the tokens the master
hands out in its answers.

Without a user name the client sends no certificate to the master; brokers still get the master's visit
token, which tells them the client came through the master. With one, the first request (and any request
after the master asks for it again) carries a signature of the user name made with the password; the
others carry the authorized token the master returned.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import urllib.parse

from tubemqwire.protocol.broker import VISIT_TOKEN_UNDEFINED, authorized_info
from tubemqwire.protocol.broker_service_pb2 import AuthorizedInfo
from tubemqwire.protocol.master_service_pb2 import AuthenticateInfo, MasterCertificateInfo

_NONCE_LIMIT = 2**31 - 1


def signature(user: str, password: str, timestamp_ms: int, nonce: int) -> str:
    """URL-encoded base64 of HMAC-SHA1(password, user + timestamp + nonce), as the servers check it."""
    digest = hmac.new(password.encode(), f"{user}{timestamp_ms}{nonce}".encode(), hashlib.sha1).digest()
    return urllib.parse.quote_plus(base64.b64encode(digest).decode("ascii"), safe="")


class Credentials:
    """Tokens of one registration (a producer or a consumer), and the user signature when configured."""

    __slots__ = ("_password", "_user", "auth_token", "require_auth", "visit_token")

    def __init__(self, user: str | None = None, password: str | None = None) -> None:
        self._user = user
        self._password = password or ""
        self.visit_token = VISIT_TOKEN_UNDEFINED
        self.auth_token = ""
        # The master asked for a fresh signature with the next request.
        self.require_auth = False

    @property
    def enabled(self) -> bool:
        return bool(self._user)

    def update(self, visit_token: int | None, auth_token: str | None, require_auth: bool = False) -> None:
        if visit_token is not None:
            self.visit_token = visit_token
        if auth_token:
            self.auth_token = auth_token
        if require_auth:
            self.require_auth = True

    def reset(self) -> None:
        """Forget the tokens (a new registration gets new ones)."""
        self.visit_token = VISIT_TOKEN_UNDEFINED
        self.auth_token = ""

    def master_certificate(self, *, force: bool = False) -> MasterCertificateInfo | None:
        """None without a user; otherwise a signature (on register, close or demand) or the token."""
        if not self._user:
            return None
        if force or self.require_auth or not self.auth_token:
            self.require_auth = False
            timestamp, nonce = self._stamp()
            info = AuthenticateInfo(
                userName=self._user,
                timestamp=timestamp,
                nonce=nonce,
                othParams="",
                signature=signature(self._user, self._password, timestamp, nonce),
            )
            return MasterCertificateInfo(authInfo=info)
        return MasterCertificateInfo(authorizedToken=self.auth_token)

    def producer_broker_auth(self) -> AuthorizedInfo:
        """What a producer shows a broker with every message: the visit and the authorized token."""
        return authorized_info(self.visit_token, self.auth_token or None)

    def consumer_broker_auth(self, *, sign: bool = False) -> AuthorizedInfo:
        """What a consumer shows a broker; with a user, ``sign`` adds a broker signature."""
        token = None
        if sign and self._user:
            timestamp, nonce = self._stamp()
            token = f"{self._user} {timestamp} {nonce} {signature(self._user, self._password, timestamp, nonce)}"
        return authorized_info(self.visit_token, token)

    @staticmethod
    def _stamp() -> tuple[int, int]:
        return int(time.time() * 1000), secrets.randbelow(_NONCE_LIMIT)
