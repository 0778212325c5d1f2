"""TubeMQ master web API (``/webapi.htm``) calls the launcher, the tests and the command line need."""

from __future__ import annotations

import time
from typing import Any

from mqwire.testing import rest
from mqwire.testing.errors import BrokerError

OPERATOR = "mqwire"


class TubeMQAdminError(BrokerError):
    pass


def webapi(admin_url: str, method: str, modify: bool = False, timeout: float = 10.0, **params: Any) -> Any:
    """Call one web API method; returns the decoded JSON or raises ``TubeMQAdminError``."""
    query: dict[str, str | int | bool] = {"type": "op_modify" if modify else "op_query", "method": method}
    query.update({k: v for k, v in params.items() if v is not None})
    reply = rest.get(f"{admin_url}/webapi.htm", params=query, timeout=timeout)
    if not reply.ok:
        raise TubeMQAdminError(f"tubemq {method}: HTTP {reply.status}: {reply.text()[:500]}")
    answer = reply.json()
    if not isinstance(answer, dict) or not answer.get("result"):
        raise TubeMQAdminError(f"tubemq {method} failed: {reply.text()[:500]}")
    if modify:
        failed = [item for item in answer.get("data") or [] if not item.get("success", True)]
        if failed:
            raise TubeMQAdminError(f"tubemq {method} failed: {failed}")
    return answer


def master_ready(admin_url: str) -> bool:
    """The master answers its web API and its metadata store is writable."""
    try:
        answer = webapi(admin_url, "admin_query_master_group_info", timeout=3.0)
    except (OSError, ValueError, TubeMQAdminError):
        return False
    return str(answer.get("groupStatus", "")).startswith("Running-ReadWrite")


def add_broker(
    admin_url: str,
    token: str,
    broker_id: int,
    host: str,
    port: int,
    web_port: int,
    tls_port: int | None = None,
    memory_cache_flush_ms: int | None = None,
) -> None:
    """Register a broker's configuration; a broker with TLS must be registered with its TLS port, or the
    master refuses its registration. ``memory_cache_flush_ms`` sets its topics' ``memCacheFlushIntvl`` (the
    server's default is 20 s, its minimum 4 s)."""
    extra: dict[str, int] = {} if tls_port is None else {"brokerTLSPort": tls_port}
    if memory_cache_flush_ms is not None:
        extra["memCacheFlushIntvl"] = memory_cache_flush_ms
    webapi(
        admin_url,
        "admin_add_broker_configure",
        modify=True,
        brokerId=broker_id,
        brokerIp=host,
        brokerPort=port,
        brokerWebPort=web_port,
        createUser=OPERATOR,
        confModAuthToken=token,
        **extra,
    )


def online_broker(admin_url: str, token: str, broker_id: int) -> None:
    webapi(
        admin_url,
        "admin_online_broker_configure",
        modify=True,
        brokerId=broker_id,
        modifyUser=OPERATOR,
        confModAuthToken=token,
    )


def reload_broker(admin_url: str, token: str, broker_id: int) -> None:
    webapi(
        admin_url,
        "admin_reload_broker_configure",
        modify=True,
        brokerId=broker_id,
        modifyUser=OPERATOR,
        confModAuthToken=token,
    )


def broker_status(admin_url: str, broker_id: int) -> dict[str, Any] | None:
    """The master's view of one broker (``runStatus``, ``subStatus``, ``isBrokerOnline``...)."""
    answer = webapi(admin_url, "admin_query_broker_run_status", brokerId=broker_id, timeout=3.0)
    data = answer.get("data") or []
    return dict(data[0]) if data else None


def broker_online(admin_url: str, broker_id: int) -> bool:
    """Registered with the master and online (its topics may still be on their way)."""
    try:
        status = broker_status(admin_url, broker_id)
    except (OSError, ValueError, TubeMQAdminError):
        return False
    return bool(
        status
        and status.get("runStatus") == "running"
        and str(status.get("isBrokerOnline")) == "true"
    )


def broker_settled(admin_url: str, broker_id: int) -> bool:
    """Online and done with the master's configuration state machine.

    Until then a newly added topic waits for the running pass to end and then for a pass of
    its own, about a minute instead of about 30 s.
    """
    try:
        status = broker_status(admin_url, broker_id)
    except (OSError, ValueError, TubeMQAdminError):
        return False
    return bool(
        status
        and status.get("runStatus") == "running"
        and str(status.get("isBrokerOnline")) == "true"
        and status.get("subStatus") == "idle"
    )


def add_topic(
    admin_url: str, token: str, broker_id: int, topic: str, partitions: int, exist_ok: bool = True
) -> None:
    """Deploy ``topic`` on one broker (the method formerly named ``admin_add_new_topic_record``)."""
    try:
        webapi(
            admin_url,
            "admin_add_topic_deploy_info",
            modify=True,
            topicName=topic,
            brokerId=broker_id,
            numPartitions=partitions,
            createUser=OPERATOR,
            confModAuthToken=token,
        )
    except TubeMQAdminError as err:
        # The master answers errCode 402 "Existed record found" for a topic already deployed there.
        if not (exist_ok and "'errCode': 402" in str(err)):
            raise


def topic_info(admin_url: str, topic: str) -> dict[str, Any] | None:
    """The master's topic record with its run state, or None when the topic is unknown."""
    answer = webapi(admin_url, "admin_query_topic_info", topicName=topic, timeout=5.0)
    for item in answer.get("data") or []:
        if item.get("topicName") == topic:
            return dict(item)
    return None


def topic_names(admin_url: str, internal: bool = False) -> list[str]:
    """Topics deployed through the master; ``internal`` adds the broker's own ``__``-prefixed ones."""
    answer = webapi(admin_url, "admin_query_topic_info")
    names = [str(item["topicName"]) for item in answer.get("data") or [] if "topicName" in item]
    return names if internal else [n for n in names if not n.startswith("__")]


def topic_publishable(admin_url: str, topic: str) -> bool:
    """The master tells producers about every configured partition of ``topic``."""
    try:
        info = topic_info(admin_url, topic)
    except (OSError, ValueError, TubeMQAdminError):
        return False
    return bool(
        info
        and info.get("isSrvAcceptPublish")
        and info.get("totalRunNumPartCount", 0) >= info.get("totalCfgNumPart", 1) > 0
    )


def wait_topic_publishable(admin_url: str, topic: str, timeout: float) -> None:
    # A topic added to a running broker goes through the master's broker state machine,
    # which holds new publish routes back for about 30 s (it lets consumers see them first).
    deadline = time.monotonic() + timeout
    while not topic_publishable(admin_url, topic):
        if time.monotonic() >= deadline:
            raise TubeMQAdminError(f"tubemq topic {topic!r} not publishable after {timeout:.0f}s")
        time.sleep(0.5)
