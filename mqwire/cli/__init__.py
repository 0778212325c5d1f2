"""``mqwire``: produce, consume, inspect and measure topics on Kafka, Pulsar and TubeMQ from a shell.

mqwire produce kafka://127.0.0.1:9092 orders < lines.txt
mqwire consume pulsar://127.0.0.1:6650 orders --from earliest --count 10 --format '{offset} {value}'
mqwire topics create kafka://127.0.0.1:9092 orders --partitions 4
mqwire bench produce tubemq://127.0.0.1:8715 orders --count 100000 --size 100
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

try:
    import rich  # noqa: F401  (checked before the commands import it, to name the extra that brings it)
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a venv without the extra
    if exc.name != "rich":
        raise
    raise ModuleNotFoundError(
        "the mqwire command needs the 'cli' extra (rich is not installed): pip install 'mqwire[cli]'",
        name="rich",
    ) from None  # the one line that matters, without the chained traceback

from mqwire.cli import commands
from mqwire.cli.formats import DEFAULT_TEMPLATE, INPUT_FORMATS, TEMPLATE_FIELDS, Template, parse_header
from mqwire.cli.systems import SECRET_VARIABLES, UnsupportedError, UsageError, configure
from mqwire.common.errors import MqwireError
from mqwire.connect_options import read_config

log = logging.getLogger("mqwire.cli")

EPILOG = f"""URLs: kafka://host:port[,host:port], kafka+ssl://..., pulsar://host:port, pulsar+ssl://...,
tubemq://master:port[,master:port], tubemq+ssl://...
Kafka: security.protocol=SSL or SASL_SSL turns TLS on for a kafka:// URL too (with kafka+ssl:// it must be one
of those two).

secrets: a command line is visible to every user of the machine (ps, /proc), so -X sasl.password=...,
-X authParams=token:... and the like give the secret away. Put secrets in a file only you can read (-F FILE)
or in the environment (-F and -X win over it):
{"".join(f"  {name:<24} {system} {option}{chr(10)}" for name, (system, option) in SECRET_VARIABLES.items())}
exit codes: {commands.OK} done; {commands.FAILED} the broker or the network failed (the message says why);
{commands.USAGE} the command line is wrong; {commands.UNSUPPORTED} the system cannot do that;
{commands.INCOMPLETE} fewer messages than --count arrived in time."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mqwire", description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "-X",
        dest="client_options",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a client option, as kcat takes them (security.protocol=SASL_SSL, sasl.mechanism=PLAIN, "
        "sasl.username=..., ssl.ca.location=ca.pem; Pulsar authParams=token:..., tlsTrustCertsFilePath=...; "
        "TubeMQ username=..., tls.ca.file=...); repeatable, after any -F. Visible to ps: give secrets "
        "with -F or MQWIRE_* variables instead (see below)",
    )
    parser.add_argument(
        "-F",
        dest="config",
        metavar="FILE",
        help="client options from a file of NAME=VALUE lines (the place for secrets: keep it readable by you only)",
    )
    parser.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="the event loop the command runs on (default asyncio; uvloop needs the 'uvloop' extra)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log to stderr what the command and the client do (-v: the main steps, -vv: everything)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    produce = sub.add_parser("produce", help="send messages read from stdin or a file")
    produce.add_argument("url")
    produce.add_argument("topic")
    produce.add_argument("--file", help="read from this file instead of stdin")
    produce.add_argument(
        "--input",
        choices=INPUT_FORMATS,
        default="lines",
        help='lines: one message per line; jsonl: {"value", "key", "headers"} per line; '
        "raw: the whole input is one message (default: lines)",
    )
    produce.add_argument("--key", help="key of every message (Kafka key, Pulsar partition key, TubeMQ routing)")
    produce.add_argument("--header", action="append", default=[], metavar="NAME=VALUE", help="repeatable")
    produce.add_argument("--rate", type=float, help="at most this many messages per second")
    produce.add_argument("--quiet", action="store_true", help="no summary table")
    produce.add_argument("--stats", action="store_true", help="print the producer's statistics to stderr at the end")

    consume = sub.add_parser("consume", help="print messages to stdout")
    consume.add_argument("url")
    consume.add_argument("topic")
    consume.add_argument(
        "--group",
        help="consumer group (Kafka, TubeMQ) or subscription (Pulsar); "
        "acknowledges what it prints. Default: none for Kafka, a throwaway one otherwise",
    )
    consume.add_argument(
        "--from",
        dest="start",
        choices=("earliest", "latest"),
        default="earliest",
        help="where to start when the group has no position (default: earliest)",
    )
    consume.add_argument("--count", type=int, help="stop after this many messages")
    consume.add_argument("--follow", action="store_true", help="keep waiting for new messages")
    consume.add_argument(
        "--idle-timeout",
        type=float,
        default=5.0,
        help="without --follow, stop after this many seconds without a message (default 5)",
    )
    consume.add_argument(
        "--format",
        default=DEFAULT_TEMPLATE,
        help=f"output line, fields {', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)} (default {DEFAULT_TEMPLATE!r})",
    )
    consume.add_argument("--quiet", action="store_true", help="no summary table")
    consume.add_argument(
        "--stats", action="store_true", help="print the consumer's statistics (with its lag) to stderr at the end"
    )

    topics = sub.add_parser("topics", help="list, create, delete or describe topics (Kafka, Pulsar)")
    topics.add_argument("action", choices=("list", "create", "delete", "describe"))
    topics.add_argument("url")
    topics.add_argument("names", nargs="*", metavar="TOPIC")
    topics.add_argument("--partitions", type=int, default=1)
    topics.add_argument("--admin-url", help="Pulsar: the broker's admin URL, e.g. http://127.0.0.1:8080")

    groups = sub.add_parser("groups", help="list or describe Kafka consumer and share groups, or show their lag")
    groups.add_argument("action", choices=("list", "describe", "lag"))
    groups.add_argument("url")
    groups.add_argument("names", nargs="*", metavar="GROUP")
    groups.add_argument("--topic", action="append", default=[], help="lag: only these topics (default: all)")

    bench = sub.add_parser("bench", help="producer or consumer throughput")
    bench.add_argument("phase", choices=("produce", "consume"))
    bench.add_argument("url")
    bench.add_argument("topic")
    bench.add_argument("--count", type=int, default=100_000)
    bench.add_argument("--size", type=int, default=100, help="bytes per message (default 100)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(
            level=logging.INFO if args.verbose == 1 else logging.DEBUG,
            format="mqwire: %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
    try:
        run = loop_runner(args.loop)
        configure(client_options_of(args.config, args.client_options))
        return run(_run(args))
    except UsageError as exc:
        print(f"mqwire: {exc}", file=sys.stderr)
        return commands.USAGE
    except UnsupportedError as exc:
        print(f"mqwire: {exc}", file=sys.stderr)
        return commands.UNSUPPORTED
    except (MqwireError, OSError, ValueError, TypeError) as exc:
        print(f"mqwire: {type(exc).__name__}: {exc}", file=sys.stderr)
        return commands.FAILED
    except KeyboardInterrupt:
        return 130


def loop_runner(name: str) -> Callable[[Coroutine[Any, Any, int]], int]:
    """What runs the command's coroutine for ``--loop name``: ``asyncio.run`` or ``uvloop.run``; a missing
    uvloop is a UsageError naming the extra that brings it."""
    if name == "asyncio":
        return asyncio.run
    try:
        import uvloop
    except ModuleNotFoundError as exc:
        if exc.name != "uvloop":
            raise
        raise UsageError(
            "--loop uvloop needs the 'uvloop' extra (uvloop is not installed): pip install 'mqwire[uvloop]'"
        ) from None
    run: Callable[[Coroutine[Any, Any, int]], int] = uvloop.run
    return run


def client_options_of(config: str | None, pairs: list[str]) -> dict[str, str]:
    """The options of ``-F config`` then each ``-X name=value`` (a later one wins)."""
    options = read_config(config) if config else {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"-X takes name=value, got {pair.split('=', 1)[0]!r}")
        options[name.strip()] = value
    return options


async def _run(args: argparse.Namespace) -> int:
    loop = type(asyncio.get_running_loop())
    log.info("event loop %s.%s", loop.__module__, loop.__qualname__)
    if args.command == "produce":
        headers = dict(parse_header(h) for h in args.header)
        key = args.key.encode() if args.key is not None else None
        if args.rate is not None and args.rate <= 0:
            raise UsageError("--rate must be positive")
        if args.file:
            with open(args.file, "rb") as source:
                return await commands.produce(
                    args.url, args.topic, source, args.input, key, headers, args.rate, args.quiet, args.stats
                )
        return await commands.produce(
            args.url, args.topic, sys.stdin.buffer, args.input, key, headers, args.rate, args.quiet, args.stats
        )
    if args.command == "consume":
        if args.count is not None and args.count < 1:
            raise UsageError("--count must be at least 1")
        return await commands.consume(
            args.url,
            args.topic,
            args.group,
            args.start,
            args.count,
            args.follow,
            Template(args.format),
            args.idle_timeout,
            sys.stdout,
            args.quiet,
            args.stats,
        )
    if args.command == "topics":
        if args.action != "list" and not args.names:
            raise UsageError(f"topics {args.action} needs at least one topic name")
        return await commands.topics(args.url, args.action, args.names, args.partitions, args.admin_url, sys.stdout)
    if args.command == "groups":
        if args.action != "list" and not args.names:
            raise UsageError(f"groups {args.action} needs at least one group id")
        return await commands.groups(args.url, args.action, args.names, args.topic, sys.stdout)
    if args.count < 1 or args.size < 0:
        raise UsageError("--count must be at least 1 and --size not negative")
    return await commands.bench(args.url, args.phase, args.topic, args.count, args.size)


if __name__ == "__main__":
    sys.exit(main())
