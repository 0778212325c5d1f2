"""An async client of the schema registry REST API: register and look up schemas, fetch them by id, cached.

HTTP goes through the small HTTP/1.1 client the Pulsar admin API uses (``mqwire.common.http``). A registry
that does not answer fails the call at once with :class:`RegistryUnreachableError` naming its URL (credentials
are never part of a message); error statuses become :class:`RegistryError` with the registry's own message.
"""

from __future__ import annotations

import base64
import json
import ssl as _ssl
import urllib.parse
from dataclasses import dataclass
from typing import Any, Literal

from mqwire.common import bounded_json
from mqwire.common.errors import (
    ConfigurationError,
    ConnectError,
    ConnectionLostError,
    ProtocolError,
    RequestTimeoutError,
)
from mqwire.common.http import HttpEndpoint, Response, request
from mqwire.common.options import check_positive
from mqwire.registry.errors import RegistryError, RegistryUnreachableError, SchemaNotFoundError

__all__ = ["RegisteredSchema", "RegistryClient", "SchemaType"]

SchemaType = Literal["AVRO", "JSON", "PROTOBUF"]

# The registry's error codes for something that is not there (subject, version, schema).
_NOT_FOUND = {40401, 40402, 40403}


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it: its global ``schema_id``, text and type (and subject/version if known)."""

    schema_id: int
    schema: str
    schema_type: SchemaType = "AVRO"
    subject: str | None = None
    version: int | None = None


def canonical(schema: str, schema_type: SchemaType) -> str:
    """A form of ``schema`` for cache keys: JSON schemas without formatting differences."""
    if schema_type == "PROTOBUF":
        return schema
    try:
        return json.dumps(json.loads(schema), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return schema  # an Avro primitive name such as "string" is not JSON text


class RegistryClient:
    """A client of one registry at ``url`` (``http(s)://[user:password@]host:port[/prefix]``).

    ``basic_auth`` is ``"user:password"`` (or give the user info in the URL); ``timeout`` bounds each request
    in seconds; ``ssl`` is the context of ``https://`` URLs.
    """

    def __init__(
        self,
        url: str,
        *,
        basic_auth: str | None = None,
        timeout: float = 10.0,
        ssl: _ssl.SSLContext | None = None,
    ) -> None:
        if not isinstance(url, str):
            raise TypeError(f"option url must be a str, not {type(url).__name__}")
        parts = urllib.parse.urlsplit(url)
        userinfo = None
        if parts.username is not None:
            userinfo = urllib.parse.unquote(parts.username) + ":" + urllib.parse.unquote(parts.password or "")
            host = parts.hostname or ""
            netloc = f"[{host}]" if ":" in host else host
            if parts.port is not None:
                netloc += f":{parts.port}"
            url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        if basic_auth is not None and userinfo is not None:
            raise ConfigurationError("give the registry's credentials in option basic_auth or in the URL, not both")
        credentials = basic_auth if basic_auth is not None else userinfo
        if credentials is not None and (not isinstance(credentials, str) or ":" not in credentials):
            raise ConfigurationError("option basic_auth must be a str 'user:password'")
        self.url = url  # without credentials: safe to show
        self._endpoint = HttpEndpoint.parse(url, "url")
        self._headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        if credentials is not None:
            self._headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
        self._timeout = check_positive("timeout", timeout)
        self._ssl = ssl
        self._by_id: dict[int, RegisteredSchema] = {}
        self._ids: dict[tuple[str, str], RegisteredSchema] = {}

    # ------------------------------------------------------------------------------------ requests
    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            response = await request(
                self._endpoint, method, path, body=body, headers=self._headers, timeout=self._timeout, ssl=self._ssl
            )
        except (ConnectError, ConnectionLostError, RequestTimeoutError) as exc:
            raise RegistryUnreachableError(
                f"schema registry at {self.url} did not answer {method} {path}: {exc}"
            ) from None
        if response.ok:
            return response.json()
        raise _error(response, method, path)

    # ------------------------------------------------------------------------------------- schemas
    async def register(self, subject: str, schema: str, schema_type: SchemaType = "AVRO") -> RegisteredSchema:
        """Register ``schema`` under ``subject`` (or find it there already); its id is cached."""
        key = (subject, canonical(schema, schema_type))
        cached = self._ids.get(key)
        if cached is not None:
            return cached
        answer = await self._call("POST", f"/subjects/{_quote(subject)}/versions", _body(schema, schema_type))
        registered = RegisteredSchema(int(answer["id"]), schema, schema_type, subject)
        self._ids[key] = registered
        self._by_id.setdefault(registered.schema_id, registered)
        return registered

    async def lookup(self, subject: str, schema: str, schema_type: SchemaType = "AVRO") -> RegisteredSchema:
        """The id and version ``schema`` has under ``subject``; SchemaNotFoundError when it is not registered."""
        key = (subject, canonical(schema, schema_type))
        cached = self._ids.get(key)
        if cached is not None and cached.version is not None:
            return cached
        answer = await self._call("POST", f"/subjects/{_quote(subject)}", _body(schema, schema_type))
        found = RegisteredSchema(int(answer["id"]), schema, schema_type, subject, int(answer["version"]))
        self._ids[key] = found
        self._by_id.setdefault(found.schema_id, found)
        return found

    async def latest(self, subject: str) -> RegisteredSchema:
        """The latest version registered under ``subject``."""
        return await self.version(subject, "latest")

    async def version(self, subject: str, version: int | Literal["latest"]) -> RegisteredSchema:
        """Version ``version`` of ``subject``."""
        answer = await self._call("GET", f"/subjects/{_quote(subject)}/versions/{version}")
        found = RegisteredSchema(
            int(answer["id"]), answer["schema"], answer.get("schemaType", "AVRO"), subject, int(answer["version"])
        )
        self._by_id.setdefault(found.schema_id, found)
        return found

    async def versions(self, subject: str) -> list[int]:
        """The version numbers registered under ``subject`` (SchemaNotFoundError for an unknown subject)."""
        return [int(v) for v in await self._call("GET", f"/subjects/{_quote(subject)}/versions")]

    async def subjects(self) -> list[str]:
        """Every subject the registry knows."""
        return [str(s) for s in await self._call("GET", "/subjects")]

    async def schema(self, schema_id: int) -> RegisteredSchema:
        """The schema of global id ``schema_id`` (cached: ids never change their schema)."""
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        answer = await self._call("GET", f"/schemas/ids/{int(schema_id)}")
        found = RegisteredSchema(schema_id, answer["schema"], answer.get("schemaType", "AVRO"))
        self._by_id[schema_id] = found
        return found

    def cached(self, schema_id: int) -> RegisteredSchema | None:
        """The schema of ``schema_id`` if this client has seen it (no request)."""
        return self._by_id.get(schema_id)


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _body(schema: str, schema_type: SchemaType) -> dict[str, str]:
    # AVRO is the registry's default type; older registries reject an explicit schemaType for it.
    return {"schema": schema} if schema_type == "AVRO" else {"schema": schema, "schemaType": schema_type}


def _error(response: Response, method: str, path: str) -> RegistryError:
    code = None
    message = response.body[:500].decode(errors="replace")
    try:
        payload = bounded_json.loads(response.body)
    except ProtocolError:  # not JSON (a proxy's page, say), or nested too deep: shown as text
        payload = None
    if isinstance(payload, dict):
        code = payload.get("error_code")
        message = str(payload.get("message", message))
    text = f"schema registry: {method} {path}: HTTP {response.status}: {message}"
    if response.status == 404 or code in _NOT_FOUND:
        return SchemaNotFoundError(text, status=response.status, code=code)
    return RegistryError(text, status=response.status, code=code)
