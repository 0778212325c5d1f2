"""ApiVersions (key 18): the first request on every connection; the broker lists the versions it accepts."""

from __future__ import annotations

from kafkawire.protocol.schema import BOOL, INT16, INT32, INT64, STRING, Array, Request, Response, Struct, field


class ApiVersionsRequest(Request, api_key=18, versions="0-4", flexible="3+"):
    client_software_name: str = field(STRING, "3+")
    client_software_version: str = field(STRING, "3+")


class ApiVersion(Struct):
    api_key: int = field(INT16)
    min_version: int = field(INT16)
    max_version: int = field(INT16)


class SupportedFeatureKey(Struct):
    name: str = field(STRING, "3+")
    min_version: int = field(INT16, "3+")
    max_version: int = field(INT16, "3+")


class FinalizedFeatureKey(Struct):
    name: str = field(STRING, "3+")
    max_version_level: int = field(INT16, "3+")
    min_version_level: int = field(INT16, "3+")


class ApiVersionsResponse(Response, api_key=18, versions="0-4", flexible="3+"):
    error_code: int = field(INT16)
    api_keys: list[ApiVersion] = field(Array(ApiVersion))
    throttle_time_ms: int = field(INT32, "1+")
    supported_features: list[SupportedFeatureKey] = field(Array(SupportedFeatureKey), "3+", tag=0)
    finalized_features_epoch: int = field(INT64, "3+", tag=1, default=-1)
    finalized_features: list[FinalizedFeatureKey] = field(Array(FinalizedFeatureKey), "3+", tag=2)
    zk_migration_ready: bool = field(BOOL, "3+", tag=3, default=False)
