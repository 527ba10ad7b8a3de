"""What the MCP adapter asks ``Library.supply`` (the audit and the pins): each skill's risk
for search hits and ``get_skill``; the refusal of a resource read of a skill held back from
agents, and the listings without it. Nothing heavier than the standard library at import time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

RISKS = ("none", "low", "medium", "high")


def risks_of(lib: Any, items: Iterable[Any]) -> dict[str, str]:
    """Skill id -> its audit risk (none|low|medium|high) for search hits or records: the
    item's own ``risk`` where it carries one, else the library's audit (none when the skill
    has not been audited)."""
    got = {x.id: getattr(x, "risk", None) for x in items}
    missing = [sid for sid, r in got.items() if r not in RISKS]
    if missing:
        got |= lib.supply.risks(missing)
    return {sid: r if r in RISKS else "none" for sid, r in got.items()}


def hidden_refusal(lib: Any, uri: str) -> str | None:
    """The refusal of a ``skill://`` URI that names a file of a skill hidden from agents (held
    since its collection was pinned, or blocked by ``trust.block``), None otherwise. Only a
    URI under a hidden skill's folder is resolved (``skill_manifest`` names its skill: skills
    can nest), so with nothing hidden this costs a dictionary read."""
    hidden = lib.supply.hidden()
    if not hidden:
        return None
    under = [sid for sid in hidden if uri.startswith(lib.skill_uri(sid, ""))]
    if not under:
        return None
    try:
        owner = lib.skill_manifest(uri)["uri"]
    except Exception:  # noqa: BLE001 — the read itself then says what is wrong with the URI
        return None
    for sid in under:
        if lib.skill_uri(sid) == owner:
            return lib.supply.refusal(sid)
    return None


def unhidden(lib: Any, listing: tuple[list[dict[str, Any]], str | None]) -> tuple[list[dict[str, Any]], str | None]:
    """A page of resources/list or skills/list without the entries of skills hidden from agents
    (an entry under a hidden skill's folder: a skill nested in it is left out too, which is
    the side to err on); the cursor of the next page is unchanged, so a page may be short."""
    page, nxt = listing
    hidden = lib.supply.hidden()
    if not hidden:
        return page, nxt
    prefixes = tuple(lib.skill_uri(sid, "") for sid in hidden)
    return [e for e in page if not str(e.get("uri", "")).startswith(prefixes)], nxt
