"""pulsarwire's options follow the convention of the three packages: public ``*Options`` TypedDicts, frozen
``*Config`` inside, an unknown name a ConfigurationError with the closest known one."""

from __future__ import annotations

import dataclasses

import pytest

import pulsarwire
import pulsarwire.options
from mqwire.common.errors import ConfigurationError, UnknownOptionError
from pulsarwire.options import ConsumerConfig, ProducerConfig
from pulsarwire.schema import StringSchema


def test_the_public_option_names_match_the_other_packages() -> None:
    import kafkawire
    import tubemqwire

    for name in ("ClientOptions", "ProducerOptions", "ConsumerOptions"):
        assert name in pulsarwire.__all__ and name in kafkawire.__all__ and name in tubemqwire.__all__
    for name in ("ReaderOptions", "AdminOptions", "TableViewOptions"):
        assert name in pulsarwire.__all__


def test_the_earlier_names_are_the_same_typeddicts_and_not_listed_twice() -> None:
    earlier = {
        "AdminConfig": "AdminOptions",
        "ClientConfig": "ClientOptions",
        "ConsumerConfig": "ConsumerOptions",
        "ProducerConfig": "ProducerOptions",
        "ReaderConfig": "ReaderOptions",
        "TableViewConfig": "TableViewOptions",
    }
    for old, new in earlier.items():
        assert getattr(pulsarwire, old) is getattr(pulsarwire, new)
        assert old not in pulsarwire.__all__


def test_the_internal_configs_are_frozen_and_not_exported() -> None:
    producer = ProducerConfig.build({})
    consumer = ConsumerConfig.build({"group": "g"})
    for config in (producer, consumer):
        assert dataclasses.is_dataclass(config)
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.crypto_failure_action = "SEND"  # type: ignore[misc]
    assert "ProducerConfig" not in pulsarwire.options.__all__
    assert "ConsumerConfig" not in pulsarwire.options.__all__


@pytest.mark.parametrize(
    ("make", "text"),
    [
        (lambda c: c.producer("t", batching_max_mesages=1), r"producer: unknown option 'batching_max_mesages' "
         r"\(did you mean batching_max_messages\?\)"),
        (lambda c: c.consumer("t", group="g", recevier_queue_size=1), r"consumer: unknown option "
         r"'recevier_queue_size' \(did you mean receiver_queue_size\?\)"),
        (lambda c: c.reader("t", start_inclusiv=True), r"'start_inclusiv' \(did you mean start_inclusive\?\)"),
        (lambda c: c.admin(timeout=5), r"admin: unknown option 'timeout'"),
    ],
)
def test_an_unknown_option_is_a_configuration_error_naming_the_closest(make: object, text: str) -> None:
    client = pulsarwire.connect("pulsar://localhost")
    with pytest.raises(UnknownOptionError, match=text) as raised:
        make(client)  # type: ignore[operator]
    assert isinstance(raised.value, ConfigurationError) and isinstance(raised.value, TypeError)


def test_connect_names_an_unknown_option() -> None:
    with pytest.raises(UnknownOptionError, match=r"'operation_timeout_ms' \(did you mean operation_timeout\?\)"):
        pulsarwire.connect("pulsar://localhost", operation_timeout_ms=5)  # type: ignore[call-arg]


def test_connect_checks_its_options_into_one_frozen_config_with_one_default_each() -> None:
    from mqwire.common.options import build_config, defaults
    from pulsarwire.options import ClientConfig

    assert set(defaults(ClientConfig)) == set(pulsarwire.ClientOptions.__optional_keys__)
    config = build_config(ClientConfig, "connect", {})
    assert (config.operation_timeout, config.connect_timeout, config.max_lookup_redirects) == (30.0, 10.0, 20)
    assert config.client_version.startswith("mqwire-pulsar-")
    session = pulsarwire.connect("pulsar://localhost", keepalive_interval=5)._session
    assert (session.keepalive_interval, session.operation_timeout, session.admin_timeout) == (5.0, 30.0, 30.0)
    with pytest.raises(ConfigurationError, match="max_backoff_interval must not be below"):
        pulsarwire.connect("pulsar://localhost", initial_backoff_interval=5, max_backoff_interval=1)
    with pytest.raises(ConfigurationError, match="exclude each other"):
        pulsarwire.connect("pulsar+ssl://localhost", auth_token="t", tls_authentication=True)


def test_reader_options_are_checked_once_into_a_frozen_config() -> None:
    from mqwire.common.options import build_config, defaults
    from pulsarwire.message import EARLIEST, LATEST, MessageId
    from pulsarwire.options import ReaderConfig

    assert set(defaults(ReaderConfig)) == set(pulsarwire.ReaderOptions.__optional_keys__)
    assert build_config(ReaderConfig, "reader", {}).start == LATEST
    assert build_config(ReaderConfig, "reader", {"start": "EARLIEST"}).start == EARLIEST
    assert build_config(ReaderConfig, "reader", {"start": MessageId(1, 2)}).start == MessageId(1, 2)
    client = pulsarwire.connect("pulsar://localhost")
    reader = client.reader("t", start="earliest", reader_name="r", crypto_failure_action="discard")
    assert reader._start == EARLIEST and reader.options.consumer_name == "r"
    assert reader.options.crypto_failure_action == "DISCARD"
    assert reader.options.subscription.startswith("reader-")
    with pytest.raises(ConfigurationError, match="option start must be"):
        client.reader("t", start="beginning")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="receiver_queue_size"):
        client.reader("t", receiver_queue_size=0)
    with pytest.raises(ValueError, match="give option schema or value_deserializer"):
        client.reader("t", schema=StringSchema(), value_deserializer=bytes)


def test_a_table_view_reads_from_the_earliest_message_of_the_compacted_topic() -> None:
    from pulsarwire.message import EARLIEST

    client = pulsarwire.connect("pulsar://localhost")
    view = client.table_view("t", receiver_queue_size=10)
    reader = view._reader
    assert reader._start == EARLIEST and reader.options.read_compacted
    assert reader.options.receiver_queue_size == 10 and reader.options.subscription.startswith("tableview-")
    with pytest.raises(UnknownOptionError, match="table_view: unknown option 'start'"):
        client.table_view("t", start="latest")  # type: ignore[call-arg]


def test_producer_options_have_one_default_each_in_the_checked_config() -> None:
    from mqwire.common.options import defaults

    assert set(defaults(ProducerConfig)) == set(pulsarwire.ProducerOptions.__optional_keys__)
    config = ProducerConfig.build({})
    assert (config.send_timeout, config.batching_max_publish_delay, config.auto_update_partitions_interval) == (
        30.0, 0.01, 60.0
    )
    assert (config.compression_type, config.compression, config.access_mode, config.properties) == ("NONE", 0, 0, {})
    assert ProducerConfig.build({"compression": "zstd"}).compression_type == "ZSTD"
    with pytest.raises(ConfigurationError, match="needs option crypto_key_reader"):
        ProducerConfig.build({"encryption_keys": ["k"]})
    with pytest.raises(ConfigurationError, match="cannot both be on"):
        ProducerConfig.build({"chunking_enabled": True})


def test_consumer_options_have_one_default_each_in_the_checked_config() -> None:
    from mqwire.common.options import defaults

    assert set(defaults(ConsumerConfig)) == set(pulsarwire.ConsumerOptions.__optional_keys__)
    config = ConsumerConfig.build({"subscription": "s"})
    assert (config.subscription, config.subscription_type_name, config.ack_group_time, config.ack_timeout) == (
        "s", "Exclusive", 0.1, 0.0
    )
    assert ConsumerConfig.build({"group": "g", "subscription_type": "shared"}).subscription_type_name == "Shared"
    with pytest.raises(TypeError, match="needs option group"):
        ConsumerConfig.build({})
    with pytest.raises(ConfigurationError, match="name the same thing"):
        ConsumerConfig.build({"group": "a", "subscription": "b"})
    with pytest.raises(ConfigurationError, match="ack_timeout_ms must be 0"):
        ConsumerConfig.build({"group": "g", "ack_timeout_ms": 50})
    with pytest.raises(ConfigurationError, match="read_compacted works with"):
        ConsumerConfig.build({"group": "g", "subscription_type": "Shared", "read_compacted": True})


def test_a_table_view_checks_its_options_once_into_a_frozen_config_holding_its_readers() -> None:
    from mqwire.common.options import build_config, defaults
    from pulsarwire.options import ReaderConfig
    from pulsarwire.table_view import TableViewConfig

    assert set(defaults(TableViewConfig)) == set(pulsarwire.TableViewOptions.__optional_keys__)
    # The queue's default is the reader's own, not a second one.
    assert defaults(TableViewConfig)["receiver_queue_size"] == defaults(ReaderConfig)["receiver_queue_size"]
    config = build_config(TableViewConfig, "table_view", {"refresh_poll_interval": 0.5})
    assert config.refresh_poll_interval == 0.5 and config.reader.read_compacted
    assert config.reader.subscription_role_prefix == "tableview"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.refresh_poll_interval = 1.0  # type: ignore[misc]
    client = pulsarwire.connect("pulsar://localhost")
    assert client.table_view("t", refresh_poll_interval=0.2)._poll == 0.2
    with pytest.raises(ConfigurationError, match="refresh_poll_interval"):
        client.table_view("t", refresh_poll_interval=0)
    with pytest.raises(ConfigurationError, match="receiver_queue_size"):
        client.table_view("t", receiver_queue_size=0)


def test_an_admin_checks_its_options_into_a_frozen_config_defaulting_to_the_clients() -> None:
    from mqwire.common.errors import OptionTypeError
    from mqwire.common.options import build_config
    from pulsarwire.admin import AdminConfig

    client = pulsarwire.connect("pulsar://localhost", admin_url="http://127.0.0.1:8080", admin_timeout=7)
    admin = client.admin()
    assert (admin.admin_url, admin._timeout) == ("http://127.0.0.1:8080", 7.0)
    other = client.admin(admin_url="http://127.0.0.1:9090", admin_timeout=2)
    assert (other.admin_url, other._timeout) == ("http://127.0.0.1:9090", 2.0)
    with pytest.raises(ConfigurationError, match="admin_timeout"):
        client.admin(admin_timeout=0)
    with pytest.raises(OptionTypeError, match="admin_url"):
        client.admin(admin_url=5)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="needs option admin_url"):
        pulsarwire.connect("pulsar://localhost").admin()
    config = build_config(AdminConfig, "admin", {"admin_url": "https://h:8443"})
    assert (config.admin_timeout, config.admin_allow_insecure_http) == (30.0, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.admin_timeout = 1.0  # type: ignore[misc]
