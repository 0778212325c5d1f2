"""What a consumer tells others about its group membership (a transactional producer commits with it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GroupMetadata:
    """A consumer's group membership: group id, generation (-1: none), member id (empty: none) and static
    instance id. A transactional producer commits offsets with it, so a fenced member cannot."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
