"""The CLI's input formats, output templates and argument checks, without a broker."""

from __future__ import annotations

import io

import pytest

from mqwire.cli import build_parser, main
from mqwire.cli.formats import InputRecord, Template, parse_header, read_records
from mqwire.cli.systems import Row, UsageError, consumer_group, system_of


def test_lines_and_jsonl_and_raw() -> None:
    assert list(read_records(io.BytesIO(b"a\nb\r\n"), "lines", b"k", {"h": b"1"})) == [
        InputRecord(b"a", b"k", {"h": b"1"}),
        InputRecord(b"b", b"k", {"h": b"1"}),
    ]
    jsonl = b'{"value": "v", "key": "x", "headers": {"n": 1}}\n\n{"value": {"a": 1}}\n'
    assert list(read_records(io.BytesIO(jsonl), "jsonl", None, {"h": b"1"})) == [
        InputRecord(b"v", b"x", {"h": b"1", "n": b"1"}),
        InputRecord(b'{"a":1}', None, {"h": b"1"}),
    ]
    assert list(read_records(io.BytesIO(b"all\nof it"), "raw", None, {})) == [InputRecord(b"all\nof it")]


@pytest.mark.parametrize("bad", [b"not json\n", b"[1]\n", b'{"key": "no value"}\n', b'{"value": 1, "headers": 3}\n'])
def test_bad_jsonl_is_a_usage_error_naming_the_line(bad: bytes) -> None:
    with pytest.raises(UsageError, match="line 1"):
        list(read_records(io.BytesIO(bad), "jsonl", None, {}))


def test_template_renders_bytes_as_text_or_base64() -> None:
    row = Row("t", 2, "17", None, b"\xff\x00", {"h": b"v"}, 1234)
    assert Template("{topic}:{partition}:{offset} [{key}] {value} {headers} {timestamp}").render(row) == (
        't:2:17 [] base64:/wA= {"h": "v"} 1234'
    )
    assert Template("{value}\\t{offset}").render(Row("t", 0, "1", b"k", b"v", {}, 0)) == "v\t1"
    with pytest.raises(UsageError, match="unknown field"):
        Template("{partiton}")


def test_headers_systems_and_options() -> None:
    assert parse_header("a=b=c") == ("a", b"b=c")
    with pytest.raises(UsageError):
        parse_header("novalue")
    assert system_of("kafka+ssl://h:1") == "kafka"
    with pytest.raises(UsageError):
        system_of("http://h")
    assert system_of("tubemq+ssl://h:1") == "tubemq"
    assert consumer_group("kafka", None) is None  # reads without committing
    assert consumer_group("pulsar", "s") == "s"
    group = consumer_group("tubemq", None)
    assert group is not None and group.startswith("mqwire-cli-")


def test_command_line_errors_exit_with_usage_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["consume"])
    assert exited.value.code == 2
    assert main(["consume", "kafka://127.0.0.1:1", "t", "--count", "0"]) == 2
    assert main(["bench", "produce", "gopher://x", "t"]) == 2
    assert "mqwire:" in capsys.readouterr().err
