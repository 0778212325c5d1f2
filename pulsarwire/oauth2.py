"""OAuth 2.0 client credentials: access tokens from an identity provider, for ``auth_token``.

The Java client's ``AuthenticationOAuth2`` (client credentials flow): the token endpoint is found in the
issuer's OpenID metadata, a ``client_credentials`` grant is posted with the client id and secret (from a
credentials file or given), and the access token is presented to the broker as a ``token``. A token is
fetched again once ``early_token_refresh_percent`` of its lifetime has passed, in the background while it
is in use, so that the broker's challenge at its expiry is answered at once with a fresh one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import ssl as _ssl
import time
import urllib.parse
from dataclasses import dataclass

from mqwire.common import bounded_json
from mqwire.common.errors import AuthenticationError, ConfigurationError, MqwireError, ProtocolError
from mqwire.common.http import HttpEndpoint, request
from mqwire.common.lifecycle import OwnedTasks
from mqwire.common.options import check_bool, check_positive, check_str

__all__ = ["OAuth2ClientCredentials"]

log = logging.getLogger(__name__)

WELL_KNOWN_METADATA_PATH = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class _Token:
    value: str
    fetched_at: float
    # None: the provider said nothing of its lifetime, so it is used until the broker asks for another.
    expires_at: float | None
    refresh_at: float | None


class OAuth2ClientCredentials:
    """An async callable giving OAuth 2.0 access tokens: ``connect(url, auth_token=OAuth2ClientCredentials(...))``.

    - ``issuer_url`` — the identity provider; its token endpoint comes from the OpenID metadata at
      ``issuer_url`` + ``/.well-known/openid-configuration`` (Java ``issuerUrl``).
    - ``private_key`` — the credentials file: a path, a ``file://`` URL or a ``data:application/json;base64,``
      URL of JSON with ``client_id`` and ``client_secret`` (Java ``privateKey``); or give ``client_id`` and
      ``client_secret`` instead.
    - ``audience``, ``scope`` — sent with the grant when given (Java ``audience``, ``scope``).
    - ``early_token_refresh_percent`` — the part of a token's lifetime (``expires_in``) after which a new one
      is fetched, while the old one is still valid; between 0 and 1, default 0.8 (Java
      ``earlyTokenRefreshPercent``, whose default 1 refreshes only at expiry).
    - ``token_endpoint`` — use this endpoint instead of the one in the issuer's metadata; default None.
    - ``request_timeout`` — seconds each request to the identity provider may take; default 10.
    - ``ssl_context`` — the TLS context for ``https://`` endpoints; default None, the system's CAs.
    - ``allow_insecure_http`` — accept ``http://`` for the issuer and the token endpoint (the one given or
      the one the issuer's metadata names); default False: the client secret and the tokens travel over
      ``https://`` only, and an ``http://`` URL is a ConfigurationError (named in an AuthenticationError
      when the metadata names it).

    Tokens are fetched on first use; a failed early refresh keeps the current token while it is valid.
    """

    def __init__(
        self,
        issuer_url: str,
        *,
        private_key: str | os.PathLike[str] | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        audience: str | None = None,
        scope: str | None = None,
        early_token_refresh_percent: float = 0.8,
        token_endpoint: str | None = None,
        request_timeout: float = 10.0,
        ssl_context: _ssl.SSLContext | None = None,
        allow_insecure_http: bool = False,
    ) -> None:
        self.allow_insecure_http = check_bool("allow_insecure_http", allow_insecure_http)
        self.issuer_url = check_str("issuer_url", issuer_url).rstrip("/")
        self._secured(self.issuer_url, "issuer_url")
        if private_key is not None:
            if client_id is not None or client_secret is not None:
                raise ValueError("give option private_key or options client_id and client_secret, not both")
            client_id, client_secret = _read_credentials(private_key)
        if client_id is None or client_secret is None:
            raise ValueError("OAuth2 client credentials need option private_key, or client_id and client_secret")
        self.client_id = check_str("client_id", client_id)
        self._secret = check_str("client_secret", client_secret)
        self.audience = None if audience is None else check_str("audience", audience)
        self.scope = None if scope is None else check_str("scope", scope)
        percent = check_positive("early_token_refresh_percent", early_token_refresh_percent)
        if percent > 1:
            raise ValueError(f"option early_token_refresh_percent must be in (0, 1], got {percent!r}")
        self.early_token_refresh_percent = float(percent)
        self._endpoint_url = None if token_endpoint is None else check_str("token_endpoint", token_endpoint)
        if self._endpoint_url is not None:
            self._secured(self._endpoint_url, "token_endpoint")
        self.request_timeout = check_positive("request_timeout", request_timeout)
        if ssl_context is not None and not isinstance(ssl_context, _ssl.SSLContext):
            raise TypeError(f"option ssl_context must be an ssl.SSLContext, not {type(ssl_context).__name__}")
        self._ssl = ssl_context
        self._token: _Token | None = None
        self._tasks = OwnedTasks("OAuth2 client credentials")
        self._fetching: asyncio.Future[_Token] | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._used_at = 0.0
        #: How many tokens were fetched from the provider.
        self.fetched = 0

    def _secured(self, url: str, option: str) -> HttpEndpoint:
        """``url`` parsed; an ``http://`` one is refused unless ``allow_insecure_http``."""
        endpoint = HttpEndpoint.parse(url, option)
        if not endpoint.tls and not self.allow_insecure_http:
            raise ConfigurationError(
                f"option {option} is an http:// URL, which would carry the client secret or the tokens in clear:"
                " use https://, or pass allow_insecure_http=True"
            )
        return endpoint

    def __repr__(self) -> str:
        return f"OAuth2ClientCredentials(issuer_url={self.issuer_url!r}, client_id={self.client_id!r})"

    async def __call__(self) -> str:
        """A valid access token: the cached one, or a fresh one once the current is due for refresh."""
        self._used_at = time.monotonic()
        token = self._token
        if token is None or _due(token, self._used_at):
            try:
                token = await self._fetch()
            except MqwireError:
                current = self._token
                if current is None or (current.expires_at is not None and current.expires_at <= time.monotonic()):
                    raise
                log.warning("refreshing the OAuth2 token failed; the current one is still valid", exc_info=True)
                token = current
        return token.value

    async def aclose(self) -> None:
        """Stop refreshing in the background (the refresh also stops by itself once tokens go unused)."""
        task, self._refresher = self._refresher, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # ------------------------------------------------------------------------------ fetching
    async def _fetch(self) -> _Token:
        token = await asyncio.shield(self._fetching_now())
        self._token = token
        self._schedule_refresh(token)
        return token

    async def _request_token(self) -> _Token:
        url = self._endpoint_url or await self._discover()
        try:
            endpoint = self._secured(url, "token_endpoint")
        except ValueError as exc:  # named by the issuer's metadata: the provider's answer, not an option
            raise AuthenticationError(f"the OAuth2 metadata of {self.issuer_url}: {exc}") from None
        form = {"grant_type": "client_credentials", "client_id": self.client_id, "client_secret": self._secret}
        if self.audience is not None:
            form["audience"] = self.audience
        if self.scope is not None:
            form["scope"] = self.scope
        started = time.monotonic()
        response = await request(endpoint, "POST", "", form=form, timeout=self.request_timeout, ssl=self._ssl)
        answer = _json_object(response.body)
        if not response.ok:
            error = answer.get("error", "")
            described = answer.get("error_description", "")
            raise AuthenticationError(f"the OAuth2 token endpoint refused the client credentials of "
                                      f"{self.client_id!r}: HTTP {response.status} {error} {described}".rstrip())
        value = answer.get("access_token")
        if not isinstance(value, str) or not value:
            raise AuthenticationError("the OAuth2 token endpoint answered without an access_token")
        expires_in = answer.get("expires_in")
        self.fetched += 1
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0:
            # Counted from when the request was sent: the lifetime began no earlier.
            return _Token(value, started, started + expires_in,
                          started + expires_in * self.early_token_refresh_percent)
        return _Token(value, started, None, None)

    async def _discover(self) -> str:
        """The token endpoint named in the issuer's OpenID metadata (looked up again for each token)."""
        endpoint = self._secured(self.issuer_url, "issuer_url")
        response = await request(endpoint, "GET", WELL_KNOWN_METADATA_PATH, timeout=self.request_timeout,
                                 ssl=self._ssl)
        if not response.ok:
            raise AuthenticationError(f"no OAuth2 metadata at {self.issuer_url}{WELL_KNOWN_METADATA_PATH}: "
                                      f"HTTP {response.status}")
        url = _json_object(response.body).get("token_endpoint")
        if not isinstance(url, str):
            raise AuthenticationError(f"the OAuth2 metadata of {self.issuer_url} names no token_endpoint")
        return url

    # ------------------------------------------------------------------------------ refreshing
    def _schedule_refresh(self, token: _Token) -> None:
        if token.refresh_at is None or token.expires_at is None or token.refresh_at >= token.expires_at:
            return
        if self._refresher is None or self._refresher.done():
            self._refresher = self._tasks.spawn(self._refresh_while_used(), name="refresh")

    async def _refresh_while_used(self) -> None:
        """Fetch each token before it expires, as long as tokens are asked for."""
        while True:
            token = self._token
            if token is None or token.refresh_at is None:
                return
            await asyncio.sleep(max(0.0, token.refresh_at - time.monotonic()))
            if self._token is not token:
                continue  # fetched meanwhile by a caller
            assert token.expires_at is not None
            # Connections ask again at each expiry (the broker's challenge): none asking for two lifetimes
            # means none is left, and the next call fetches anew.
            if time.monotonic() - self._used_at > 2 * (token.expires_at - token.fetched_at):
                return
            try:
                fresh = await asyncio.shield(self._fetching_now())
            except MqwireError as exc:
                log.warning("refreshing the OAuth2 token early failed (%s); trying again at its use", exc)
                return
            self._token = fresh

    def _fetching_now(self) -> asyncio.Future[_Token]:
        # Concurrent callers (connections opening together, the background refresh) share one request.
        if self._fetching is None or self._fetching.done():
            self._fetching = self._tasks.spawn(self._request_token(), name="token request", awaited=True)
        return self._fetching


def _due(token: _Token, now: float) -> bool:
    return token.refresh_at is not None and now >= token.refresh_at


def _json_object(body: bytes) -> dict[str, object]:
    try:
        value = bounded_json.loads(body) if body else {}
    except ProtocolError:
        raise AuthenticationError(f"the OAuth2 provider answered something other than JSON: {body[:80]!r}") from None
    if not isinstance(value, dict):
        raise AuthenticationError("the OAuth2 provider answered JSON that is not an object")
    return value


def _read_credentials(location: str | os.PathLike[str]) -> tuple[str, str]:
    """client_id and client_secret from a credentials file (a path, ``file://`` or ``data:`` URL)."""
    if not isinstance(location, str | os.PathLike):
        raise TypeError(f"option private_key must be a path or URL, not {type(location).__name__}")
    text = os.fspath(location)
    try:
        if text.startswith("data:"):
            header, _, payload = text.partition(",")
            raw = base64.b64decode(payload) if header.endswith(";base64") else urllib.parse.unquote(payload).encode()
        else:
            path = urllib.parse.urlsplit(text).path if text.startswith("file:") else text
            with open(path, "rb") as file:
                raw = file.read()
        data = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"option private_key: cannot read the credentials file: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigurationError("option private_key: the credentials file must hold a JSON object")
    client_id, secret = data.get("client_id"), data.get("client_secret")
    if not isinstance(client_id, str) or not isinstance(secret, str):
        raise ConfigurationError("option private_key: the credentials file needs client_id and client_secret")
    return client_id, secret
