"""``compression`` (the name all three packages share) and ``compression_type`` (the Pulsar clients' name)."""

import pytest

from pulsarwire.options import ProducerOptions


def test_both_names_choose_the_codec() -> None:
    assert ProducerOptions.build({"compression": "lz4"}).compression == ProducerOptions.build(
        {"compression_type": "LZ4"}
    ).compression
    assert ProducerOptions.build({}).compression == ProducerOptions.build({"compression_type": "NONE"}).compression


def test_giving_both_or_a_wrong_codec_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="not both"):
        ProducerOptions.build({"compression": "lz4", "compression_type": "LZ4"})
    with pytest.raises(ValueError, match="compression"):
        ProducerOptions.build({"compression": "brotli"})
