"""Small JSON-over-HTTP helper on urllib, for the admin APIs of Pulsar and TubeMQ."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def request(
    method: str,
    url: str,
    body: Any = None,
    params: dict[str, str | int | bool] | None = None,
    timeout: float = 10.0,
) -> Reply:
    """Send one request; HTTP error statuses come back as a ``Reply``, network errors raise ``OSError``."""
    if params:
        query = urllib.parse.urlencode({k: _param(v) for k, v in params.items()})
        url = f"{url}{'&' if '?' in url else '?'}{query}"
    data = None
    headers = {"Accept": "application/json"}
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    # An empty proxy handler: a proxy set in the environment must never see loopback admin calls.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=timeout) as resp:
            return Reply(resp.status, resp.read())
    except urllib.error.HTTPError as err:
        return Reply(err.code, err.read())


def _param(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def get(url: str, params: dict[str, str | int | bool] | None = None, timeout: float = 10.0) -> Reply:
    return request("GET", url, params=params, timeout=timeout)


def answers(url: str, timeout: float = 2.0) -> Reply | None:
    """GET ``url``; None when nothing answers yet."""
    try:
        return get(url, timeout=timeout)
    except OSError:
        return None
