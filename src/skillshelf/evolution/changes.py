"""The values a change to a skill is made of: the plan (what will be written, checked and
composed before anything is), the metadata it stamps, the result a caller gets, and what
evolution needs of the library (``Ports``)."""

from __future__ import annotations

import re
from collections.abc import Callable
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
    findability: dict | None = None   # the skill's evals before and after the change (``Ports.findability``)

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
    meta.update(keep_author_version(meta))
    meta["version"] = str(version)
    return meta


def keep_author_version(meta: dict[str, str]) -> dict[str, str]:
    """``metadata.version`` is the number of the skill's version here (the history, ``rollback``
    and the outcomes per version read it), so a change writes its own number there. A version
    its author wrote that is not such a number (``1.1.0``) is not dropped: it is kept as
    ``metadata.author-version`` (an upstream merge moves it on). One written where skillshelf
    writes its number, beside an older ``author-version``, is the author's newer: it takes that
    place (the older stays in the history). Returns the key to add."""
    v = (meta.get("version") or "").strip()
    if not v or meta.get("author-version") == v or str(skillmod.parse_version(v) or "") == v:
        return {}
    return {"author-version": v}


def same_content(a: skillmod.Skill, b: skillmod.Skill) -> bool:
    """Equal but for the bookkeeping a write always changes (version, last-modified, and
    who wrote it)."""
    skip = ("version", "last-modified", "author")
    return a.replace(metadata={k: v for k, v in a.metadata.items() if k not in skip}) == \
        b.replace(metadata={k: v for k, v in b.metadata.items() if k not in skip})


MAX_MERGE_SOURCES = 10     # a merge names a few skills; thousands would hold every writer while refused


def merge_sources(a: dict[str, Any]) -> list[str]:
    """A MERGE's source references, checked for count (2 to ``MAX_MERGE_SOURCES``)."""
    srcs = a.get("source_skill_names") or []
    if isinstance(srcs, str):
        srcs = [s.strip() for s in re.split(r"[,\n]", srcs[:100_000]) if s.strip()]
    if not isinstance(srcs, list) or not all(isinstance(s, str) for s in srcs):
        raise ValidationError("source_skill_names must be names", fix="pass e.g. 'skill-a, skill-b'")
    if len(srcs) < 2:
        raise ValidationError("MERGE needs at least two source_skill_names", fix="pass e.g. 'skill-a, skill-b'")
    if len(srcs) > MAX_MERGE_SOURCES:
        raise ValidationError(f"MERGE names {len(srcs):,} sources; at most {MAX_MERGE_SOURCES} can be merged at once",
                              fix="merge a few skills at a time")
    return srcs


@dataclass(frozen=True)
class Ports:
    """What evolution needs of the library: ``get`` (a name, id or path to its record), ``sync``,
    ``rows_by_name`` (in precedence), ``embedder`` (() -> (model or None, reason)), ``searcher``
    (near-duplicate checks), ``config``, ``overlays`` (decisions on read-only roots' skills),
    ``may_use`` ((ids, action) -> None: refuses a change whose inputs may not be read, e.g. a
    skill held back from agents; the read gate's ``check_inputs``)."""

    get: Callable[[str], Any]
    sync: Callable[..., Any]
    rows_by_name: Callable[[str], list]
    embedder: Callable[[], tuple]
    searcher: Any
    config: Any
    overlays: Any
    may_use: Callable[[list[str], str], None] | None = None
    copies: Callable[[str], list] | None = None    # a name to every copy's row (same name key), in precedence
    # (the ids of the skills a change comes from, the SKILL.md it would write, action, the name written) ->
    # their evals before and after, on a copy of the index (None: none keeps evals); raises PolicyError
    # when ``evolution.findability = "block"`` refuses it
    findability: Callable[[list[str], str, str, str], dict | None] | None = None
    hidden: Callable[[], Any] | None = None     # the skill ids held back from agents (``supply.hidden_ids``)


# an upstream merge into a source's workspace copy may set these (``supply.upstream_merge`` reads the same
# ``skill.UPSTREAM_TOP``); the copy's own keys (``skill.OWN_KEYS``: its version, dates, lineage and
# lifecycle) are never set from upstream
UPSTREAM_TOP = skillmod.UPSTREAM_TOP
OWN_KEYS = skillmod.OWN_KEYS


def from_upstream(cur: skillmod.Skill, kind: str, a: dict[str, Any],
                  get: Callable[[str], Any]) -> tuple[dict[str, Any], dict[str, str | None]]:
    """What a FIX made by ``sources update`` sets besides the text of a source's workspace copy
    ``cur`` (``kind``: its record's kind; ``get``: a skill id -> its record): ``upstream_keys``, the
    frontmatter upstream changed (``license``, ``compatibility``, ``allowed-tools``, ``metadata.KEY``;
    None removes it), ``follow_origin``, the id upstream moved the original to (same source,
    same name), and ``origin_gone``, what upstream did to the original when it renamed or removed
    it (``metadata.origin-gone``: the copy stays, and is not merged with upstream any more).
    Returns (top-level fields, metadata keys); both empty when none is asked."""
    keys, follow, gone = a.get("upstream_keys"), a.get("follow_origin"), a.get("origin_gone")
    if not keys and not follow and not gone:
        return {}, {}
    origin = cur.metadata.get("origin") or ""
    if kind != "workspace" or ":" not in origin:
        raise ValidationError("upstream's keys and moves apply only to a workspace copy of a source's skill",
                              fix="leave out upstream_keys, follow_origin and origin_gone")
    top: dict[str, Any] = {}
    meta: dict[str, str | None] = {}
    if gone:
        if not isinstance(gone, str) or len(gone) > 1024 or "\n" in gone:
            raise ValidationError("origin_gone is not one line of at most 1,024 characters",
                                  fix="say in one line what upstream did to the original")
        meta[skillmod.ORIGIN_GONE] = gone
    if follow:
        rec = get(follow) if isinstance(follow, str) else None
        if rec is None or rec.kind == "workspace" or rec.id.split(":", 1)[0] != origin.split(":", 1)[0] \
                or rec.name != cur.name:
            raise ValidationError(f"{str(follow)[:200]!r} is not {cur.name} moved within the source of {origin}",
                                  fix="follow_origin names the same skill at its new path in the same source")
        meta["origin"] = rec.id
    if not isinstance(keys, dict):
        keys = {}
    for key, value in keys.items():
        if value is not None and (not isinstance(value, str) or len(value) > 1024):
            raise ValidationError(f"upstream's {str(key)[:60]} is not text of at most 1,024 characters",
                                  fix="pass text, or None to remove the key")
        if key in UPSTREAM_TOP:
            top[UPSTREAM_TOP[key]] = value or None
        elif isinstance(key, str) and key.startswith("metadata.") and key[9:] and key[9:] not in OWN_KEYS:
            meta[key[9:]] = value
        else:
            raise ValidationError(f"upstream's key {str(key)[:60]!r} is not one a merge sets",
                                  fix="license, compatibility, allowed-tools or metadata.KEY (not the copy's own: "
                                      + ", ".join(OWN_KEYS) + ")")
    return top, meta
