"""The stock of spare TubeMQ topics a test session deploys at start (``mqwire_tubemq_spare_topics``)."""

from __future__ import annotations

import pytest

from mqwire.testing.tubemq_spares import parse_spares, spare_topic_names


def test_partitions_and_counts_are_read_and_named_once_each() -> None:
    spares = parse_spares(" 1:2, 3:1 ,1:1,")
    assert spares == {1: 3, 3: 1}
    names = spare_topic_names(spares)
    assert names == {"spare1p_00": 1, "spare1p_01": 1, "spare1p_02": 1, "spare3p_00": 3}
    assert parse_spares("") == {} and parse_spares(None) == {}


@pytest.mark.parametrize("text", ["2", "x:1", "2:y", "0:3", "-1:2", "2:"])
def test_a_malformed_entry_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="PARTITIONS:COUNT"):
        parse_spares(text)
