"""DescribeConfigs (key 32): configuration of topics, brokers and other resources."""

from __future__ import annotations

from kafkawire.protocol.schema import BOOL, INT8, INT16, INT32, STRING, Array, Request, Response, Struct, field

# DescribeConfigsResource.resource_type values.
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
BROKER_LOGGER_RESOURCE = 8


class DescribeConfigsResource(Struct):
    resource_type: int = field(INT8)
    resource_name: str = field(STRING)
    # None describes every key.
    configuration_keys: list[str] | None = field(Array(STRING), nullable="0+")


class DescribeConfigsRequest(Request, api_key=32, versions="1-4", flexible="4+"):
    resources: list[DescribeConfigsResource] = field(Array(DescribeConfigsResource))
    include_synonyms: bool = field(BOOL, "1+", default=False)
    include_documentation: bool = field(BOOL, "3+", default=False)


class DescribeConfigsSynonym(Struct):
    name: str = field(STRING)
    value: str | None = field(STRING, nullable="0+")
    source: int = field(INT8)


class DescribeConfigsResourceResult(Struct):
    name: str = field(STRING)
    value: str | None = field(STRING, nullable="0+")
    read_only: bool = field(BOOL)
    config_source: int = field(INT8, "1+", default=-1)
    is_sensitive: bool = field(BOOL)
    synonyms: list[DescribeConfigsSynonym] = field(Array(DescribeConfigsSynonym), "1+")
    config_type: int = field(INT8, "3+", default=0)
    documentation: str | None = field(STRING, "3+", nullable="0+")


class DescribeConfigsResult(Struct):
    error_code: int = field(INT16)
    error_message: str | None = field(STRING, nullable="0+")
    resource_type: int = field(INT8)
    resource_name: str = field(STRING)
    configs: list[DescribeConfigsResourceResult] = field(Array(DescribeConfigsResourceResult))


class DescribeConfigsResponse(Response, api_key=32, versions="1-4", flexible="4+"):
    throttle_time_ms: int = field(INT32)
    results: list[DescribeConfigsResult] = field(Array(DescribeConfigsResult))
