"""Checks of the names the servers accept, run when a producer or consumer is built.

A name of the wrong type raises ``OptionTypeError``, one the servers would refuse ``ConfigurationError`` (both
in the shared hierarchy, and still a ``TypeError`` and a ``ValueError``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from mqwire.common.errors import ConfigurationError, OptionTypeError
from tubemqwire.protocol.constants import MAX_BOOKED_TOPIC_COUNT, MAX_MSG_TYPE_LENGTH, MAX_TOPIC_NAME_LENGTH

# The patterns of the master's web API and of the Java client's configuration checks.
_TOPIC = re.compile(r"[a-zA-Z]\w+", re.ASCII)
_GROUP = re.compile(r"[a-zA-Z][\w-]+", re.ASCII)
_MAX_GROUP_LENGTH = 1024
# A message-type filter is matched against the stored type; these characters would break its encoding.
_FILTER_FORBIDDEN = frozenset(",=#:@$")
_MAX_FILTER_COUNT = 500
_MAX_FILTER_LENGTH = 256


def check_topic(topic: object, option: str = "topic") -> str:
    if not isinstance(topic, str):
        raise OptionTypeError(f"{option} must be a str, not {type(topic).__name__}")
    name = topic.strip()
    if not _TOPIC.fullmatch(name) or len(name) > MAX_TOPIC_NAME_LENGTH:
        raise ConfigurationError(
            f"{option} {topic!r} must start with a letter, hold only letters, digits and '_', "
            f"and be 2 to {MAX_TOPIC_NAME_LENGTH} characters"
        )
    return name


def check_topics(topics: object, option: str = "topics") -> tuple[str, ...]:
    """One topic name or an iterable of them, as a sorted tuple without duplicates."""
    if isinstance(topics, str):
        names = [check_topic(topics, option)]
    elif isinstance(topics, Iterable) and not isinstance(topics, bytes | bytearray):
        names = [check_topic(item, option) for item in topics]
    else:
        raise OptionTypeError(f"{option} must be a str or an iterable of str, not {type(topics).__name__}")
    if not names:
        raise ConfigurationError(f"{option} must name at least one topic")
    if len(set(names)) > MAX_BOOKED_TOPIC_COUNT:
        raise ConfigurationError(f"{option} may name at most {MAX_BOOKED_TOPIC_COUNT} topics")
    return tuple(sorted(set(names)))


def check_group(group: object) -> str:
    if not isinstance(group, str):
        raise OptionTypeError(f"group must be a str, not {type(group).__name__}")
    name = group.strip()
    if not _GROUP.fullmatch(name) or len(name) > _MAX_GROUP_LENGTH:
        raise ConfigurationError(
            f"group {group!r} must start with a letter, hold only letters, digits, '_' and '-', "
            f"and be 2 to {_MAX_GROUP_LENGTH} characters"
        )
    return name


def check_msg_types(msg_types: object, option: str = "msg_types") -> frozenset[str]:
    """The message types a consumer filters on (an empty set means no filter)."""
    if msg_types is None:
        return frozenset()
    if isinstance(msg_types, str):
        msg_types = [msg_types]
    if not isinstance(msg_types, Iterable) or isinstance(msg_types, bytes | bytearray):
        raise OptionTypeError(f"{option} must be a str or an iterable of str, not {type(msg_types).__name__}")
    result = set()
    for item in msg_types:
        if not isinstance(item, str):
            raise OptionTypeError(f"{option} items must be str, not {type(item).__name__}")
        text = item.strip()
        if not text or len(text) > min(_MAX_FILTER_LENGTH, MAX_MSG_TYPE_LENGTH):
            raise ConfigurationError(f"{option} item {item!r} must be 1 to {MAX_MSG_TYPE_LENGTH} characters")
        if any(ch in _FILTER_FORBIDDEN or ch.isspace() for ch in text):
            raise ConfigurationError(f"{option} item {item!r} must not hold white space or any of , = # : @ $")
        result.add(text)
    if len(result) > _MAX_FILTER_COUNT:
        raise ConfigurationError(f"{option} may hold at most {_MAX_FILTER_COUNT} types")
    return frozenset(result)
