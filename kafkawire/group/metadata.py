"""What a consumer tells others about its group membership (a transactional producer commits with it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GroupMetadata:
    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
