"""A REST-subset schema registry for the tests: NOT a real registry server, a small stand-in named as such.

No Apache-licensed registry server could be run on this machine from a package index it reaches (see
brokers/VERSIONS.md): Karapace is not on PyPI, Apicurio Registry's runnable build is not on Maven Central.
So the registry tests use this stand-in, which implements the part of the registry REST API that the
serializers of mqwire and of confluent-kafka call, in memory:

- ``POST /subjects/{subject}/versions`` registers a schema (the same schema keeps its global id everywhere);
- ``POST /subjects/{subject}`` looks a schema up under a subject;
- ``GET /subjects``, ``GET /subjects/{subject}/versions``, ``GET /subjects/{subject}/versions/{n|latest}``;
- ``GET /schemas/ids/{id}`` (query parameters such as ``subject`` and ``format`` are ignored);
- optional HTTP basic authentication (401 without it).

It checks no compatibility and stores schemas as given (JSON schemas compared without formatting). The wire
format is proven against confluent-kafka's own serializers through it, both ways (tests/integration).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["RestSubsetRegistry"]

_JSON = "application/vnd.schemaregistry.v1+json"


@dataclass
class _Store:
    schemas: list[tuple[str, str, str]] = field(default_factory=list)  # by id - 1: (type, text, canonical)
    subjects: dict[str, list[int]] = field(default_factory=dict)  # subject -> ids by version - 1
    lock: threading.Lock = field(default_factory=threading.Lock)


def _canonical(text: str, kind: str) -> str:
    if kind == "PROTOBUF":
        return text
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return text


class RestSubsetRegistry:
    """The stand-in registry on ``127.0.0.1`` (a free port unless ``port``); ``url`` once started.

    ``basic_auth`` (``"user:password"``) makes every request need those credentials.
    """

    def __init__(self, *, port: int = 0, basic_auth: str | None = None) -> None:
        self._store = _Store()
        expected = None if basic_auth is None else "Basic " + base64.b64encode(basic_auth.encode()).decode()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self._store, expected))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> RestSubsetRegistry:
        """Serve in a daemon thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, name="rest-subset-registry", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> RestSubsetRegistry:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _handler(store: _Store, expected_auth: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the tests report what matters

        def _reply(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", _JSON)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, code: int, message: str) -> None:
            self._reply(status, {"error_code": code, "message": message})

        def _authorized(self) -> bool:
            if expected_auth is not None and self.headers.get("Authorization") != expected_auth:
                self._error(401, 401, "Unauthorized")
                return False
            return True

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"{}")

        def do_GET(self) -> None:
            if not self._authorized():
                return
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).rstrip("/")
            with store.lock:
                if path == "/subjects":
                    return self._reply(200, sorted(store.subjects))
                m = re.fullmatch(r"/schemas/ids/(\d+)", path)
                if m:
                    index = int(m.group(1)) - 1
                    if not 0 <= index < len(store.schemas):
                        return self._error(404, 40403, "Schema not found")
                    kind, text, _ = store.schemas[index]
                    return self._reply(200, {"schema": text, "schemaType": kind})
                m = re.fullmatch(r"/subjects/(.+)/versions", path)
                if m:
                    ids = store.subjects.get(m.group(1))
                    if ids is None:
                        return self._error(404, 40401, "Subject not found")
                    return self._reply(200, list(range(1, len(ids) + 1)))
                m = re.fullmatch(r"/subjects/(.+)/versions/(latest|-1|\d+)", path)
                if m:
                    subject, ids = m.group(1), store.subjects.get(m.group(1))
                    if ids is None:
                        return self._error(404, 40401, "Subject not found")
                    number = len(ids) if m.group(2) in ("latest", "-1") else int(m.group(2))
                    if not 1 <= number <= len(ids):
                        return self._error(404, 40402, "Version not found")
                    return self._reply(200, self._version(subject, number, ids[number - 1]))
            self._error(404, 404, f"not part of the REST subset: GET {path}")

        def _version(self, subject: str, number: int, schema_id: int) -> dict[str, Any]:
            kind, text, _ = store.schemas[schema_id - 1]
            return {"subject": subject, "version": number, "id": schema_id, "schema": text, "schemaType": kind}

        def do_POST(self) -> None:
            if not self._authorized():
                return
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).rstrip("/")
            try:
                body = self._body()
                text, kind = body["schema"], body.get("schemaType") or "AVRO"
            except (ValueError, KeyError, TypeError):
                return self._error(422, 42201, "Invalid schema")
            canonical = _canonical(text, kind)
            with store.lock:
                existing = next(
                    (i + 1 for i, s in enumerate(store.schemas) if s[0] == kind and s[2] == canonical), None
                )
                m = re.fullmatch(r"/subjects/(.+)/versions", path)
                if m:
                    if existing is None:
                        store.schemas.append((kind, text, canonical))
                        existing = len(store.schemas)
                    ids = store.subjects.setdefault(m.group(1), [])
                    if existing not in ids:
                        ids.append(existing)
                    return self._reply(200, {"id": existing})
                m = re.fullmatch(r"/subjects/(.+)", path)
                if m:
                    subject, known = m.group(1), store.subjects.get(m.group(1))
                    if known is None:
                        return self._error(404, 40401, "Subject not found")
                    if existing is None or existing not in known:
                        return self._error(404, 40403, "Schema not found")
                    return self._reply(200, self._version(subject, known.index(existing) + 1, existing))
            self._error(404, 404, f"not part of the REST subset: POST {path}")

    return Handler
