"""``python -m mqwire.testing``: fetch class paths, start, inspect and stop the brokers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mqwire.testing import classpath
from mqwire.testing.cluster import CLUSTER_NAMES, ClusterLauncher, ClusterStatus
from mqwire.testing.endpoints import summary, to_json
from mqwire.testing.errors import BrokerError
from mqwire.testing.launcher import BrokerStatus, Launcher
from mqwire.testing.paths import BROKER_NAMES, DEFAULT_BROKERS, default_state_dir


def _names(values: Sequence[str], default: Sequence[str] = BROKER_NAMES) -> list[str]:
    names = list(dict.fromkeys(values)) or list(default)
    unknown = [n for n in names if n not in BROKER_NAMES and n not in CLUSTER_NAMES]
    if unknown:
        choices = ", ".join((*BROKER_NAMES, *CLUSTER_NAMES))
        raise SystemExit(f"unknown broker(s): {', '.join(unknown)}; choose from {choices}")
    return names


def _split(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Single brokers and clusters."""
    return [n for n in names if n not in CLUSTER_NAMES], [n for n in names if n in CLUSTER_NAMES]


def _node_target(args: argparse.Namespace) -> str | None:
    """The one cluster a ``--node`` applies to (None without ``--node``)."""
    if not getattr(args, "node", None):
        return None
    if len(args.names) != 1 or args.names[0] not in CLUSTER_NAMES:
        raise SystemExit(f"--node needs exactly one cluster name: {', '.join(CLUSTER_NAMES)}")
    return str(args.names[0])


def _topic_spec(value: str) -> tuple[str, int]:
    name, _, count = value.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"expected NAME[:PARTITIONS], got {value!r}")
    return name, int(count or 1)


def _report(
    statuses: Sequence[BrokerStatus], state_dir: Path, clusters: Sequence[ClusterStatus] = ()
) -> dict[str, Any]:
    running = {s.name: s.endpoint for s in statuses if s.alive}
    out = summary(running)
    out.update({c.name: c.url for c in clusters if c.alive})
    out["state_dir"] = str(state_dir)
    out["brokers"] = {
        s.name: {
            **to_json(s.endpoint),
            "pids": s.pids,
            "alive": s.alive,
            "java": s.java,
            **({"start_seconds": s.start_seconds} if s.start_seconds is not None else {}),
            **({"already_running": True} if s.already_running else {}),
        }
        for s in statuses
    }
    out["brokers"].update({c.name: c.to_json() for c in clusters})
    return out


def _print(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    sys.stdout.flush()


def cmd_fetch(args: argparse.Namespace) -> int:
    failed = 0
    # A cluster runs from its single broker's class path.
    for name in dict.fromkeys(n.split("-")[0] for n in _names(args.names)):
        try:
            entries = classpath.cached(name) or classpath.resolve(name)
        except classpath.ClasspathError as err:
            print(err, file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: {len(entries)} class path entries", file=sys.stderr)
    return 1 if failed else 0


def cmd_images(args: argparse.Namespace) -> int:
    from mqwire.testing import images

    names = [n.strip() for n in (args.only or "").split(",") if n.strip()] or list(images.IMAGE_NAMES)
    tags = images.build(names)
    _print(tags)
    return 0


def cmd_engine(args: argparse.Namespace) -> int:
    from mqwire.testing import engine

    done = engine.ensure(args.run_dir) if args.action == "start" else engine.stop(args.run_dir)
    print(done, file=sys.stderr)
    return 0


def _clusters(launcher: Launcher) -> ClusterLauncher:
    return ClusterLauncher(state_dir=launcher.state.root)


def cmd_start(args: argparse.Namespace, launcher: Launcher) -> int:
    target = _node_target(args)
    if target is not None:
        seconds = _clusters(launcher).start_node(target, args.node)
        print(f"{target} {args.node}: ready in {seconds}s", file=sys.stderr)
        return cmd_status(args, launcher)
    topics = dict(args.tubemq_topic or [])
    singles, clusters = _split(_names(args.names, DEFAULT_BROKERS))
    options: dict[str, Any] = {}
    if args.tubemq_mem_store is not None:
        options["mem_store"] = args.tubemq_mem_store == "on"
    cluster_started: dict[str, ClusterStatus] = {}
    cluster_failed: dict[str, BaseException] = {}
    for name in clusters:
        try:
            cluster_started[name] = _clusters(launcher).start(name, options)
        except BrokerError as problem:
            cluster_failed[name] = problem
    started, failed = launcher.start_many(
        singles,
        topics,
        tubemq_authentication=args.tubemq_authentication,
        tubemq_tls=args.tubemq_tls,
    )
    for name, cluster in cluster_started.items():
        if cluster.already_running:
            print(f"{name}: already running (pids {cluster.pids})", file=sys.stderr)
        else:
            print(f"{name}: ready in {cluster.start_seconds}s", file=sys.stderr)
    failed.update(cluster_failed)
    for name, status in started.items():
        if status.already_running:
            print(f"{name}: already running (pids {status.pids})", file=sys.stderr)
        else:
            print(f"{name}: ready in {status.start_seconds}s", file=sys.stderr)
    for name, err in failed.items():
        print(f"{name}: {err}", file=sys.stderr)
    everything = {s.name: s for s in launcher.status()}
    everything.update(started)
    clusters_now = {c.name: c for c in _clusters(launcher).status()}
    clusters_now.update(cluster_started)
    _print(_report(list(everything.values()), launcher.state.root, list(clusters_now.values())))
    return 1 if failed else 0


def cmd_status(args: argparse.Namespace, launcher: Launcher) -> int:
    _print(_report(launcher.status(), launcher.state.root, _clusters(launcher).status()))
    return 0


def cmd_stop(args: argparse.Namespace, launcher: Launcher) -> int:
    target = _node_target(args)
    if target is not None:
        _clusters(launcher).stop_node(target, args.node)
        print(f"{target} {args.node}: stopped (`start {target} --node {args.node}` brings it back)", file=sys.stderr)
        return 0
    for name in _names(args.names, (*BROKER_NAMES, *CLUSTER_NAMES)):
        stopper = _clusters(launcher) if name in CLUSTER_NAMES else launcher
        if stopper.stop(name, keep_data=args.keep_data):
            print(f"{name}: stopped", file=sys.stderr)
    return 0


def cmd_restart(args: argparse.Namespace, launcher: Launcher) -> int:
    target = _node_target(args)
    if target is None:
        raise SystemExit("restart needs a cluster name and --node NODE")
    seconds = _clusters(launcher).restart_node(target, args.node)
    print(f"{target} {args.node}: stopped and ready again in {seconds}s", file=sys.stderr)
    return cmd_status(args, launcher)


def cmd_kill(args: argparse.Namespace, launcher: Launcher) -> int:
    target = _node_target(args)
    if target is not None:
        _clusters(launcher).kill_node(target, args.node)
        print(f"{target} {args.node}: killed (`start {target} --node {args.node}` brings it back)", file=sys.stderr)
        return 0
    for name in _names(args.names, (*BROKER_NAMES, *CLUSTER_NAMES)):
        killer = _clusters(launcher) if name in CLUSTER_NAMES else launcher
        if killer.kill(name):
            print(f"{name}: killed (state and data kept; `start {name}` brings it back)", file=sys.stderr)
        else:
            print(f"{name}: not known", file=sys.stderr)
    return 0


def cmd_create_topic(args: argparse.Namespace, launcher: Launcher) -> int:
    created = launcher.create_topic(args.broker, args.topic, args.partitions)
    _print({"broker": args.broker, "topic": created, "partitions": args.partitions})
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mqwire.testing", description=__doc__)
    p.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help=f"run state folder (default $MQWIRE_STATE_DIR or {default_state_dir()})",
    )
    sub = p.add_subparsers(dest="command", required=True)
    names_help = "brokers to act on: kafka, pulsar, tubemq, kafka3, or a cluster (default: all)"
    node_help = "one node of the named cluster (e.g. kafka-2, master-1, broker-2)"

    fetch = sub.add_parser("fetch", help="resolve and cache the class paths with Maven")
    fetch.add_argument("names", nargs="*", help=names_help)

    start = sub.add_parser("start", help="start brokers in the background and print their URLs as JSON")
    start.add_argument(
        "names",
        nargs="*",
        help="brokers to start (default: kafka, pulsar, tubemq; kafka3 and the clusters by name: "
        + ", ".join(CLUSTER_NAMES)
        + ")",
    )
    start.add_argument("--node", help=node_help + " to start again")
    start.add_argument(
        "--tubemq-mem-store",
        choices=("on", "off"),
        default=None,
        help="tubemq-cluster: the brokers' memory store (enableMemStore; default on, the server's default)",
    )
    start.add_argument(
        "--tubemq-topic",
        action="append",
        type=_topic_spec,
        metavar="NAME[:PARTITIONS]",
        help="TubeMQ topic to deploy while starting (fast; a later create-topic takes ~30 s)",
    )
    start.add_argument(
        "--tubemq-authentication",
        action="store_true",
        help="a fresh TubeMQ master requires signed consumer registrations, and visit tokens",
    )
    start.add_argument(
        "--tubemq-tls",
        action="store_true",
        help="a fresh TubeMQ master and broker also listen with TLS (see tls_url and ssl_cafile in the JSON)",
    )

    sub.add_parser("status", help="print the URLs of the running brokers as JSON")

    stop = sub.add_parser("stop", help="stop brokers (SIGTERM, then SIGKILL) and delete their data")
    stop.add_argument("names", nargs="*", help=names_help)
    stop.add_argument("--keep-data", action="store_true", help="leave the work folders on disk")
    stop.add_argument("--node", help=node_help + " to stop cleanly (SIGTERM), keeping its data")

    restart = sub.add_parser("restart", help="stop one node of a cluster cleanly and start it again")
    restart.add_argument("names", nargs=1, help="the cluster", choices=CLUSTER_NAMES)
    restart.add_argument("--node", required=True, help=node_help)

    kill = sub.add_parser("kill", help="SIGKILL brokers but keep ports and data for `start`")
    kill.add_argument("names", nargs="*", help=names_help)
    kill.add_argument("--node", help=node_help + " to SIGKILL")

    image = sub.add_parser("images", help="container images of the brokers, built here (no image registry needed)")
    image.add_argument("action", choices=("build",), help="build what the Docker engine lacks (cached by content)")
    image.add_argument(
        "--only", metavar="NAME,...", help="images to build: kafka, kafka3, pulsar, tubemq, registry (default: all)"
    )

    engine = sub.add_parser("engine", help="a Docker engine for the containers: found, or installed and started")
    engine.add_argument("action", choices=("start", "stop"), help="start: only when none answers; stop: only ours")
    engine.add_argument(
        "--run-dir", type=Path, default=Path("build"), help="where dockerd's pid and log go (default: build)"
    )

    topic = sub.add_parser("create-topic", help="create a topic on a running broker")
    topic.add_argument("broker", choices=BROKER_NAMES)
    topic.add_argument("topic")
    topic.add_argument(
        "--partitions", type=int, default=1, help="partition count (Pulsar: 0 for a non-partitioned topic)"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "fetch":
        return cmd_fetch(args)
    if args.command in ("images", "engine"):
        try:
            return cmd_images(args) if args.command == "images" else cmd_engine(args)
        except (BrokerError, classpath.ClasspathError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    launcher = Launcher(state_dir=args.state_dir)
    commands = {
        "start": cmd_start,
        "status": cmd_status,
        "stop": cmd_stop,
        "kill": cmd_kill,
        "restart": cmd_restart,
        "create-topic": cmd_create_topic,
    }
    try:
        return commands[args.command](args, launcher)
    except (BrokerError, classpath.ClasspathError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
