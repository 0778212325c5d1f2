"""Topic administration over the broker's admin REST API (``/admin/v2``), as ``pulsar-admin topics`` does it.

``async with client.admin() as admin`` (the client needs ``admin_url``, e.g. ``http://host:8080``, or pass
it to ``admin()``). Every call is one HTTP request on its own connection (see ``mqwire.common.http``), so an admin
holds nothing open between calls.
"""

from __future__ import annotations

import ssl as _ssl
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypedDict

from mqwire.common.errors import BrokerError, ConfigurationError, ProtocolError
from mqwire.common.http import HttpEndpoint, Response, request
from mqwire.common.lifecycle import Lifecycle
from mqwire.common.options import check_bool, check_int_range, check_positive, check_str, defaults, option, options_of
from pulsarwire.errors import AdminError, RetriableAdminError, TopicAlreadyExistsError, TopicNotFoundError
from pulsarwire.options import ClientConfig
from pulsarwire.topics import DEFAULT_NAMESPACE, complete_name

__all__ = ["Admin", "AdminOptions"]

_MAX_PARTITIONS = 100_000


class AdminOptions(TypedDict, total=False):
    """The options of ``client.admin``; each defaults to the client's option of the same name.

    - ``admin_url`` — the broker's admin REST API, ``http://host:8080`` or ``https://...``; required here
      when the client has none (Java admin's ``serviceHttpUrl``, pulsar-admin's ``--admin-url``).
    - ``admin_timeout`` — seconds each admin request may take; default the client's, itself 30 by default.
    - ``admin_allow_insecure_http`` — send the token to an ``http://`` admin URL although the brokers are
      reached over TLS (``pulsar+ssl://``); default the client's, itself False: that is an error.
    """

    admin_url: str | None
    admin_timeout: float
    admin_allow_insecure_http: bool


_CLIENT = defaults(ClientConfig)


def _admin_url(name: str, value: object) -> str:
    if value is None:
        raise ConfigurationError(f"client.admin() needs option {name} (the broker's admin API, http://host:8080)")
    return check_str(name, value)


@options_of(AdminOptions)
@dataclass(frozen=True)
class AdminConfig:
    """The checked options of ``client.admin`` (``admin_timeout`` in seconds). The client passes its own
    options of the same names as the defaults, so these are the client's defaults too."""

    admin_url: str = option(_CLIENT["admin_url"], _admin_url)
    admin_timeout: float = option(_CLIENT["admin_timeout"], check_positive)
    admin_allow_insecure_http: bool = option(_CLIENT["admin_allow_insecure_http"], check_bool)


def check_admin_url(admin_url: str, *, brokers_tls: bool, sends_token: bool, allow_insecure_http: bool) -> None:
    """Refuse an ``http://`` admin URL that would carry a token in clear to a cluster reached over TLS, unless
    ``allow_insecure_http`` (a ConfigurationError naming the options)."""
    endpoint = HttpEndpoint.parse(admin_url)
    if brokers_tls and sends_token and not endpoint.tls and not allow_insecure_http:
        raise ConfigurationError(
            "option admin_url is http:// while the brokers use TLS (pulsar+ssl://): the auth_token would cross in"
            " clear; use an https:// admin_url, or pass admin_allow_insecure_http=True"
        )


class Admin:
    """Lists, creates, deletes and describes topics through ``admin_url``; see ``Client.admin``."""

    def __init__(
        self,
        config: AdminConfig,
        *,
        ssl: _ssl.SSLContext | None = None,
        token: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        self._endpoint = HttpEndpoint.parse(config.admin_url)
        self.admin_url = config.admin_url
        self._timeout = config.admin_timeout
        self._ssl = ssl
        self._token = token
        self._life = Lifecycle(f"Pulsar admin of {config.admin_url}")

    async def __aenter__(self) -> Admin:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Refuse further calls (nothing is held open between calls)."""
        await self._life.close()

    # ------------------------------------------------------------------------------------------ topics
    async def list_topics(self, namespace: str = DEFAULT_NAMESPACE) -> list[str]:
        """The persistent topics of ``tenant/namespace``: each topic without partitions and each partition."""
        reply = await self._call("GET", f"/admin/v2/persistent/{_namespace(namespace)}", f"list topics of {namespace}")
        return [str(name) for name in reply.json() or []]

    async def list_partitioned_topics(self, namespace: str = DEFAULT_NAMESPACE) -> list[str]:
        """The partitioned topics of ``tenant/namespace`` (their own names, not their partitions')."""
        path = f"/admin/v2/persistent/{_namespace(namespace)}/partitioned"
        reply = await self._call("GET", path, f"list partitioned topics of {namespace}")
        return [str(name) for name in reply.json() or []]

    async def create_topic(self, topic: str, partitions: int = 0, *, exist_ok: bool = False) -> str:
        """Create ``topic`` with ``partitions`` (0: a topic without partitions); returns its complete name.

        An existing topic raises TopicAlreadyExistsError unless ``exist_ok``.
        """
        check_int_range("partitions", partitions, 0, _MAX_PARTITIONS)
        name = complete_name(topic)
        path = _topic_path(name)
        if partitions > 0:
            reply = await self._call("PUT", f"{path}/partitions", f"create {name}", body=partitions, conflict=exist_ok)
        else:
            reply = await self._call("PUT", path, f"create {name}", conflict=exist_ok)
        del reply
        return name

    async def delete_topic(self, topic: str, *, force: bool = False) -> None:
        """Delete ``topic`` (with its partitions); ``force`` deletes it even with producers or subscriptions."""
        name = complete_name(topic)
        path = _topic_path(name)
        params = {"force": "true" if force else "false"}
        if await self.partitions(name) > 0:
            await self._call("DELETE", f"{path}/partitions", f"delete {name}", params=params)
        else:
            await self._call("DELETE", path, f"delete {name}", params=params)

    async def partitions(self, topic: str) -> int:
        """The partition count of ``topic`` (0 for a topic without partitions, and for one that does not exist)."""
        name = complete_name(topic)
        reply = await self._call("GET", f"{_topic_path(name)}/partitions", f"partitions of {name}")
        data = reply.json()
        count = data.get("partitions") if isinstance(data, dict) else None
        if isinstance(count, bool) or not isinstance(count, int):
            raise AdminError(f"partitions of {name}: unexpected answer {reply.text(200)!r}", code=reply.status)
        return count

    # ------------------------------------------------------------------------------------------ requests
    async def _call(
        self,
        method: str,
        path: str,
        what: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        conflict: bool = False,
    ) -> Response:
        self._life.check_open()
        headers = {}
        if self._token is not None:
            token = await self._token()
            if token:
                headers["Authorization"] = f"Bearer {token}"
        reply = await request(
            self._endpoint, method, path, body=body, params=params, headers=headers, timeout=self._timeout,
            ssl=self._ssl,
        )
        if reply.ok or (conflict and reply.status == 409):
            return reply
        raise _error(reply, what)


def _error(reply: Response, what: str) -> BrokerError:
    data = None
    try:
        data = reply.json()
    except ProtocolError:  # a body that is not JSON is shown as text
        data = None
    reason = data.get("reason") if isinstance(data, dict) else None
    text = f"{what}: HTTP {reply.status}: {reason or reply.text(300)}"
    if reply.status == 404:
        return TopicNotFoundError(text, code=reply.status)
    if reply.status == 409:
        return TopicAlreadyExistsError(text, code=reply.status)
    if reply.status >= 500 or reply.status == 429:
        return RetriableAdminError(text, code=reply.status)
    return AdminError(text, code=reply.status)


def _namespace(namespace: str) -> str:
    parts = namespace.split("/")
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"a namespace is tenant/namespace, got {namespace!r}")
    return "/".join(urllib.parse.quote(part, safe="") for part in parts)


def _topic_path(name: str) -> str:
    """``persistent://tenant/ns/topic`` -> ``/admin/v2/persistent/tenant/ns/topic`` (each part quoted)."""
    domain, rest = name.split("://", 1)
    parts = rest.split("/")
    if len(parts) != 3:
        raise ValueError(f"the admin API needs a tenant/namespace/topic name, got {name!r}")
    return f"/admin/v2/{domain}/" + "/".join(urllib.parse.quote(part, safe="") for part in parts)
