"""The contract's cases again, through the blocking API (``kafkawire.sync``, ``pulsarwire.sync``,
``tubemqwire.sync``) against the same real brokers.

The test functions are test_contract's own, imported unchanged; only the ``system`` and ``client`` fixtures
differ: the client is the blocking one seen through ``blocking_facade``, each awaited call running the
blocking call in a worker thread. Run on asyncio's loop only: the blocking clients run on a loop of their own,
whatever loop the test's thread has.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mqwire.common.contract import Client
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from tests.contract.systems import BLOCKING_PACKAGES, System
from tests.contract.test_contract import (  # noqa: F401  (collected here, with this module's fixtures)
    test_a_failing_deserializer_holds_its_message_until_the_application_skips_it,
    test_a_misspelled_option_fails_at_the_call_and_names_itself,
    test_a_restarted_group_member_resumes_where_it_stopped,
    test_a_str_without_a_serializer_is_refused_and_nothing_is_sent,
    test_closing_a_producer_delivers_what_it_buffered,
    test_receive_and_getmany_time_out_alike,
    test_seek_to_beginning_reads_again_and_seek_to_end_skips,
    test_serializers_both_ways,
    test_start_defaults_to_latest,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio_loop_only]


@pytest.fixture(params=["kafka", "pulsar", "tubemq"])
def system(request: pytest.FixtureRequest) -> System:
    name: str = request.param
    broker: KafkaBroker | PulsarBroker | TubeMQBroker = request.getfixturevalue(f"{name}_broker")
    return System(name, BLOCKING_PACKAGES[name], broker.url, blocking=True)


@pytest_asyncio.fixture(loop_scope="function")
async def client(system: System) -> AsyncIterator[Client[Any]]:
    async with system.connect() as connected:
        yield connected
