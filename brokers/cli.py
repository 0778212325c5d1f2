"""``python -m mqwire.testing``: fetch class paths, start, inspect and stop the brokers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mqwire.testing import classpath
from mqwire.testing.endpoints import summary, to_json
from mqwire.testing.errors import BrokerError
from mqwire.testing.launcher import BrokerStatus, Launcher
from mqwire.testing.paths import BROKER_NAMES, DEFAULT_BROKERS, default_state_dir


def _names(values: Sequence[str], default: Sequence[str] = BROKER_NAMES) -> list[str]:
    names = list(dict.fromkeys(values)) or list(default)
    unknown = [n for n in names if n not in BROKER_NAMES]
    if unknown:
        raise SystemExit(f"unknown broker(s): {', '.join(unknown)}; choose from {', '.join(BROKER_NAMES)}")
    return names


def _topic_spec(value: str) -> tuple[str, int]:
    name, _, count = value.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"expected NAME[:PARTITIONS], got {value!r}")
    return name, int(count or 1)


def _report(statuses: Sequence[BrokerStatus], state_dir: Path) -> dict[str, Any]:
    running = {s.name: s.endpoint for s in statuses if s.alive}
    out = summary(running)
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
    return out


def _print(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    sys.stdout.flush()


def cmd_fetch(args: argparse.Namespace) -> int:
    failed = 0
    for name in _names(args.names):
        try:
            entries = classpath.cached(name) or classpath.resolve(name)
        except classpath.ClasspathError as err:
            print(err, file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: {len(entries)} class path entries", file=sys.stderr)
    return 1 if failed else 0


def cmd_start(args: argparse.Namespace, launcher: Launcher) -> int:
    topics = dict(args.tubemq_topic or [])
    started, failed = launcher.start_many(
        _names(args.names, DEFAULT_BROKERS),
        topics,
        tubemq_authentication=args.tubemq_authentication,
        tubemq_tls=args.tubemq_tls,
    )
    for name, status in started.items():
        if status.already_running:
            print(f"{name}: already running (pids {status.pids})", file=sys.stderr)
        else:
            print(f"{name}: ready in {status.start_seconds}s", file=sys.stderr)
    for name, err in failed.items():
        print(f"{name}: {err}", file=sys.stderr)
    everything = {s.name: s for s in launcher.status()}
    everything.update(started)
    _print(_report(list(everything.values()), launcher.state.root))
    return 1 if failed else 0


def cmd_status(args: argparse.Namespace, launcher: Launcher) -> int:
    _print(_report(launcher.status(), launcher.state.root))
    return 0


def cmd_stop(args: argparse.Namespace, launcher: Launcher) -> int:
    for name in _names(args.names):
        if launcher.stop(name, keep_data=args.keep_data):
            print(f"{name}: stopped", file=sys.stderr)
    return 0


def cmd_kill(args: argparse.Namespace, launcher: Launcher) -> int:
    for name in _names(args.names):
        if launcher.kill(name):
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
    names_help = "brokers to act on: kafka, pulsar, tubemq, kafka3 (default: all)"

    fetch = sub.add_parser("fetch", help="resolve and cache the class paths with Maven")
    fetch.add_argument("names", nargs="*", help=names_help)

    start = sub.add_parser("start", help="start brokers in the background and print their URLs as JSON")
    start.add_argument("names", nargs="*", help="brokers to start (default: kafka, pulsar, tubemq; kafka3 by name)")
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

    kill = sub.add_parser("kill", help="SIGKILL brokers but keep ports and data for `start`")
    kill.add_argument("names", nargs="*", help=names_help)

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
    launcher = Launcher(state_dir=args.state_dir)
    commands = {
        "start": cmd_start,
        "status": cmd_status,
        "stop": cmd_stop,
        "kill": cmd_kill,
        "create-topic": cmd_create_topic,
    }
    try:
        return commands[args.command](args, launcher)
    except (BrokerError, classpath.ClasspathError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
