"""``compression`` (the name all three packages share) and ``compression_type`` (the Pulsar clients' name)."""

import pytest

from pulsarwire.options import ProducerConfig


def test_both_names_choose_the_codec() -> None:
    assert ProducerConfig.build({"compression": "lz4"}).compression == ProducerConfig.build(
        {"compression_type": "LZ4"}
    ).compression
    assert ProducerConfig.build({}).compression == ProducerConfig.build({"compression_type": "NONE"}).compression


def test_giving_both_or_a_wrong_codec_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="not both"):
        ProducerConfig.build({"compression": "lz4", "compression_type": "LZ4"})
    with pytest.raises(ValueError, match="compression"):
        ProducerConfig.build({"compression": "brotli"})
