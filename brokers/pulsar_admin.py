"""Pulsar admin REST calls the tests and the command line need (urllib only)."""

from __future__ import annotations

from typing import Any

from mqwire.testing import rest
from mqwire.testing.errors import BrokerError

DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "public/default"


def topic_path(topic: str) -> str:
    """``name``, ``tenant/ns/name`` or ``persistent://tenant/ns/name`` into the REST path form."""
    domain = "persistent"
    if "://" in topic:
        domain, topic = topic.split("://", 1)
    parts = topic.split("/")
    if len(parts) == 1:
        parts = [*DEFAULT_NAMESPACE.split("/"), parts[0]]
    if len(parts) != 3:
        raise ValueError(f"not a Pulsar topic name: {topic!r}")
    return f"{domain}/{'/'.join(parts)}"


def _check(reply: rest.Reply, what: str, conflict_ok: bool = False) -> None:
    if reply.ok or (conflict_ok and reply.status == 409):
        return
    raise BrokerError(f"pulsar admin: {what} failed with HTTP {reply.status}: {reply.text()[:500]}")


def clusters(admin_url: str) -> list[str]:
    reply = rest.get(f"{admin_url}/admin/v2/clusters")
    _check(reply, "list clusters")
    return list(reply.json())


def tenants(admin_url: str) -> list[str]:
    reply = rest.get(f"{admin_url}/admin/v2/tenants")
    _check(reply, "list tenants")
    return list(reply.json())


def namespaces(admin_url: str, tenant: str = DEFAULT_TENANT) -> list[str]:
    reply = rest.get(f"{admin_url}/admin/v2/namespaces/{tenant}")
    if reply.status == 404:
        return []
    _check(reply, f"list namespaces of {tenant}")
    return list(reply.json())


def create_tenant(admin_url: str, tenant: str, allowed_clusters: list[str] | None = None) -> None:
    body: dict[str, Any] = {"adminRoles": [], "allowedClusters": allowed_clusters or clusters(admin_url)}
    reply = rest.request("PUT", f"{admin_url}/admin/v2/tenants/{tenant}", body=body)
    _check(reply, f"create tenant {tenant}", conflict_ok=True)


def create_namespace(admin_url: str, namespace: str) -> None:
    """Create ``tenant/namespace`` (and the tenant when missing); existing ones are fine."""
    tenant = namespace.split("/", 1)[0]
    if tenant not in tenants(admin_url):
        create_tenant(admin_url, tenant)
    reply = rest.request("PUT", f"{admin_url}/admin/v2/namespaces/{namespace}")
    _check(reply, f"create namespace {namespace}", conflict_ok=True)


def create_partitioned_topic(admin_url: str, topic: str, partitions: int) -> str:
    path = topic_path(topic)
    reply = rest.request("PUT", f"{admin_url}/admin/v2/{path}/partitions", body=partitions)
    _check(reply, f"create partitioned topic {path}", conflict_ok=True)
    return path.replace("/", "://", 1)


def create_topic(admin_url: str, topic: str) -> str:
    """A non-partitioned topic."""
    path = topic_path(topic)
    reply = rest.request("PUT", f"{admin_url}/admin/v2/{path}")
    _check(reply, f"create topic {path}", conflict_ok=True)
    return path.replace("/", "://", 1)


def partitions(admin_url: str, topic: str) -> int:
    """Partition count from the topic's partitioned metadata (0 for a non-partitioned topic)."""
    reply = rest.get(f"{admin_url}/admin/v2/{topic_path(topic)}/partitions")
    _check(reply, f"read partitions of {topic}")
    return int(reply.json()["partitions"])


def list_topics(admin_url: str, namespace: str = DEFAULT_NAMESPACE) -> list[str]:
    reply = rest.get(f"{admin_url}/admin/v2/persistent/{namespace}")
    _check(reply, f"list topics of {namespace}")
    return list(reply.json())


def healthy(admin_url: str) -> bool:
    """The broker's own health check: it writes to and reads from a heartbeat topic."""
    reply = rest.answers(f"{admin_url}/admin/v2/brokers/health", timeout=10.0)
    return reply is not None and reply.ok


def update_partitions(admin_url: str, topic: str, partitions: int) -> None:
    """Grow a partitioned topic to ``partitions`` (the broker refuses to shrink it)."""
    path = topic_path(topic)
    reply = rest.request("POST", f"{admin_url}/admin/v2/{path}/partitions", body=partitions)
    _check(reply, f"update partitions of {path}")


def set_namespace_deduplication(admin_url: str, namespace: str, enabled: bool) -> None:
    """Turn broker-side deduplication on or off for every topic of ``tenant/namespace``."""
    reply = rest.request("POST", f"{admin_url}/admin/v2/namespaces/{namespace}/deduplication", body=enabled)
    _check(reply, f"set deduplication of {namespace}")
