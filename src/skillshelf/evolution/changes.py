"""The values a change to a skill is made of: the plan (what will be written, checked and
composed before anything is), the metadata it stamps, and the result a caller gets."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .. import skill as skillmod
from ..errors import ValidationError
from .guards import today


@dataclass
class SaveResult:
    status: str                     # saved | draft
    action: str
    name: str
    version: int
    path: str
    changelog: dict | None
    duplicates: list[dict] = field(default_factory=list)
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    action: str
    name: str                       # the skill written
    skill: skillmod.Skill
    from_version: int | None
    sources: list[str]              # ids of the skills it came from
    deactivate: list[Any]           # records to mark merged
    previous_text: str | None       # text of the version being replaced (for history)
    origin: str | None = None


def build_metadata(base: dict[str, str], *, skill_type: str | None, tags: list[str] | None, repo: str | None,
                   ttl_days: int | None, display_name: str | None, author: str | None, version: int,
                   source: str | None = None) -> dict[str, str]:
    meta = dict(base)
    if skill_type:
        st = skill_type.strip().upper()
        if st not in skillmod.SKILL_TYPES:
            raise ValidationError(f"unknown skill_type {skill_type!r}", fix=f"use one of {', '.join(skillmod.SKILL_TYPES)}")
        meta["skill-type"] = st
    if tags is not None:
        meta["tags"] = ", ".join(tags)
        if not tags:
            meta.pop("tags")
    if repo:
        meta["repo"] = repo
    if ttl_days not in (None, 0, ""):
        try:
            ttl = int(ttl_days)
        except (TypeError, ValueError):
            raise ValidationError(f"ttl_days {ttl_days!r} is not a number", fix="pass a number of days") from None
        if ttl < 1 or ttl > 36500:
            raise ValidationError(f"ttl_days {ttl} is out of range", fix="use 1 to 36500 days")
        meta["ttl-days"] = str(ttl)
    if display_name:
        meta["display-name"] = " ".join(display_name.split())[:120]
    if author:
        meta["author"] = author[:120]
    if source:
        meta["source"] = source
    meta.setdefault("created", today())
    meta["last-modified"] = today()
    meta["version"] = str(version)
    return meta


def same_content(a: skillmod.Skill, b: skillmod.Skill) -> bool:
    """Equal but for the bookkeeping a write always changes (version, last-modified, and
    who wrote it)."""
    skip = ("version", "last-modified", "author")
    return a.replace(metadata={k: v for k, v in a.metadata.items() if k not in skip}) == \
        b.replace(metadata={k: v for k, v in b.metadata.items() if k not in skip})
