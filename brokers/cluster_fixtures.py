"""pytest fixtures for clusters: ``kafka_cluster``, ``tubemq_cluster``, ``tubemq_cluster_no_mem_store``,
``pulsar_cluster``.

Each is a cluster of the session's own (whatever ``--brokers`` says: a cluster is always started here, in a
state folder of its own, and stopped at the end of the session), handed out as a ``RunningCluster`` whose
nodes a test kills, stops and starts again by name. A cluster that cannot be started fails the tests that
need it; it is never a skip.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest

from mqwire.testing.cluster import ClusterLauncher, RunningCluster
from mqwire.testing.errors import BrokerError
from mqwire.testing.procs import log_tails

LOG_TAIL_LINES = 30


def _cluster(
    factory: pytest.TempPathFactory, name: str, options: dict[str, Any] | None = None
) -> Iterator[RunningCluster]:
    root = factory.mktemp(name)
    launcher = ClusterLauncher(state_dir=root / "state", work_root=root / "work", owned=True)
    try:
        launcher.start(name, options)
    except (BrokerError, OSError) as err:
        launcher.stop(name)
        pytest.fail(f"{name} could not be started: {err}", pytrace=False)
    cluster = RunningCluster(launcher, name)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """Three KRaft nodes ``kafka-1``..``kafka-3`` (replication 3, min.insync.replicas 2)."""
    yield from _cluster(tmp_path_factory, "kafka-cluster")


@pytest.fixture(scope="module")
def tubemq_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """Masters ``master-1``..``master-3`` (one active) and brokers ``broker-1``, ``broker-2`` with the memory
    store off; the topics ``cluster_failover`` and ``cluster_durable`` (2 partitions on each broker) deployed.

    Module-scoped: the clusters of the different TubeMQ modules do not run at the same time.
    """
    topics = {"cluster_failover": 2, "cluster_durable": 2}
    yield from _cluster(tmp_path_factory, "tubemq-cluster", {"mem_store": False, "topics": topics})


@pytest.fixture(scope="module")
def tubemq_cluster_mem_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """The same cluster with the brokers' memory store on (the server's default), topic ``cluster_durable``."""
    yield from _cluster(tmp_path_factory, "tubemq-cluster", {"mem_store": True, "topics": {"cluster_durable": 2}})


@pytest.fixture(scope="module")
def pulsar_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """ZooKeeper (``zookeeper``), one bookie (``bookie``) and brokers ``broker-1``, ``broker-2``."""
    yield from _cluster(tmp_path_factory, "pulsar-cluster")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """A failed test that used a cluster gets the tail of every node's log in its report."""
    report = yield
    if report.failed:
        for name, value in getattr(item, "funcargs", {}).items():
            if isinstance(value, RunningCluster):
                files = list(getattr(value.endpoint, "log_files", ()))
                report.sections.append((f"{name} node log tails", log_tails(files, LOG_TAIL_LINES)))
    return report
