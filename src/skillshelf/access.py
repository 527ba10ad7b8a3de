"""Who may do what in a team library: four roles, each allowed what the one below it may
do and more.

    reader   searches, reads skills, lists resources and statistics
    agent    + reports outcomes and saves skills (as the write policy allows)
    curator  + approves and rejects drafts, edits directly, deprecates, restores, extends a
               TTL, rolls back, deletes
    admin    + manages tokens

A token (``store.tokens``) carries one role; every MCP tool, dashboard page and action names
the role it needs (``NEEDS``) and calls ``require`` before doing anything. A local library
has no tokens: its owner is admin."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ForbiddenError, ValidationError

ROLES: tuple[str, ...] = ("reader", "agent", "curator", "admin")


@dataclass(frozen=True)
class Caller:
    """Who is asking: the token's name (what usage, outcomes, drafts and changelog entries
    carry as client or author) and its role."""

    name: str
    role: str

@dataclass(frozen=True)
class Reader:
    """Who a skill's text is for. An agent's reader is refused skills held back from agents (held
    since their collection was pinned, or blocked by ``trust.block``); a person's sees them,
    marked. The MCP server always reads for agents; the CLI for its owner; the dashboard for the
    request's caller (``reader_for``)."""

    agent: bool


AGENT = Reader(agent=True)
PERSON = Reader(agent=False)


def reader_for(caller: Caller | None) -> Reader:
    """The reader a person's adapter (the dashboard) reads for: the owner of a local library
    (``None``) and a curator's or admin's token see held skills with their diff; a reader's or an
    agent's token gets what agents get."""
    return PERSON if caller is None or allows(caller.role, "curator") else AGENT


# what each action needs, by the name adapters give it (MCP tools, dashboard actions)
NEEDS: dict[str, str] = {
    "search": "reader", "read": "reader", "list": "reader", "resources": "reader", "stats": "reader",
    "report_outcome": "agent", "save_skill": "agent",
    "approve": "curator", "reject": "curator", "edit": "curator", "deprecate": "curator", "restore": "curator",
    "extend_ttl": "curator", "rollback": "curator", "delete": "curator", "reindex": "curator", "trust": "curator",
    "held": "curator",      # held skills' diffs show their unreviewed text: a person who may trust them reads them
    "run_evals": "curator",  # every skill's evals: one search per query, minutes on a large library
    "sources": "curator",   # fetching a source's upstream and moving the lock (add, update, remove)
    "tokens": "admin",
}


def check_role(role: str) -> str:
    """``role`` when it is one of ``ROLES``, else ``ValidationError`` naming them."""
    if role not in ROLES:
        raise ValidationError(f"{role!r} is not a role", fix=f"use one of: {', '.join(ROLES)}")
    return role


def allows(role_have: str | None, role_needed: str) -> bool:
    """Whether ``role_have`` may do what ``role_needed`` may (an unknown role may do nothing)."""
    if role_needed not in ROLES:
        raise ValueError(f"not a role: {role_needed!r}")
    return role_have in ROLES and ROLES.index(role_have) >= ROLES.index(role_needed)


def require(role_have: str | None, role_needed: str, what: str) -> None:
    """Raise ``ForbiddenError`` naming the role needed for ``what`` unless ``role_have``
    allows it."""
    if allows(role_have, role_needed):
        return
    have = f"the {role_have} role" if role_have in ROLES else "no role"
    raise ForbiddenError(f"{what} needs the {role_needed} role (this token has {have})", needed=role_needed,
                         fix=f"use a token with the {role_needed} role or above; an admin makes one with "
                             f"`skillshelf tokens add NAME --role {role_needed}`")


def needs(action: str) -> str:
    """The role ``action`` needs (``NEEDS``); an action not listed needs admin, so a new one
    is closed until it is given its role."""
    return NEEDS.get(action, "admin")


def authorize(caller: Caller | None, action: str, what: str | None = None) -> None:
    """Raise ``ForbiddenError`` naming the role needed unless ``caller`` may do ``action``
    (``NEEDS``). ``None`` is the owner of a local library: allowed everything."""
    if caller is None:
        return
    require(caller.role, needs(action), what or action.replace("_", " "))
