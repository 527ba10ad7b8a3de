"""What the MCP adapter asks ``Library.supply`` (the audit and the pins): each skill's risk
for search hits and ``get_skill``, and the refusal of a resource read of a skill held back
from agents. Nothing heavier than the standard library at import time."""

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
