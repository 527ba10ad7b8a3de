"""A person's edit on a server's disk, in its copy of the team workspace, becomes a version in
the team store, as it does in a local library.

The copy (``Mirror``) knows the text it last wrote or found equal to the store for each skill
(its base). A SKILL.md that differs from its base — or, with no base known (the server was
restarted), from every version the store kept — was edited by a person. Under the skill's
lock across servers:

- if the store still holds the base (nobody changed the skill meanwhile; with no base known:
  the file names the store's version), the edit is committed as the next version (author
  "edited on disk on <host>", changelog action EDIT), its frontmatter renumbered so that no
  two texts share a version number, and every server brings it in through the change stream;
- otherwise the store has moved on: the edit is kept, never dropped — copied to
  ``<home>/team/set-aside/``, proposed in the review queue as a FIX (when no draft of that
  skill waits already), said on stderr and listed by ``doctor`` — and the copy takes the
  store's text."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..errors import SkillshelfError
from ..files import atomic_write
from ..store.pg_workspace import PgWorkspace, SkillRow, sha256


def author() -> str:
    return f"edited on disk on {socket.gethostname() or 'a server'}"


def based_on(data: bytes, row: SkillRow, base: str | None) -> bool:
    """Whether an edit was made on what the store holds now: its base is the store's text, or
    (no base known) the file's frontmatter names the store's version."""
    if row.deleted:
        return False
    if base is not None:
        return base == row.sha256
    try:
        cur = skillmod.parse_strict(data.decode("utf-8-sig"), folder_name=row.name)
    except (SkillshelfError, UnicodeDecodeError, ValueError):
        return False
    return cur.version == row.version


def commit(ws: PgWorkspace, md: Path, data: bytes, row: SkillRow) -> tuple[int, bytes]:
    """Commit the edited ``data`` of ``md`` as the next version of the skill ``row`` (its lock
    held), renumbered in its frontmatter; write the renumbered text back. Returns (version,
    the text committed). ``ConflictError`` when the row changed meanwhile (nothing written)."""
    from ..evolution.frontmatter import rewrite
    from ..evolution.guards import now_iso, today
    from ..evolution.history import ChangelogEntry

    text = data.decode("utf-8-sig")
    try:
        cur: skillmod.Skill | None = skillmod.parse_strict(text, folder_name=row.name, path=str(md))
    except SkillshelfError:
        cur = None          # no longer parses: kept as written, the text is the person's
    version = max([row.version, *ws.versions(row.name)]) + 1
    if cur is not None and cur.version is not None and cur.version > version:
        version = cur.version                       # the person numbered it above every kept version
    new = text if cur is None else rewrite(text, cur.with_metadata(version=str(version), last_modified=today()))
    out = new.encode("utf-8")
    who = author()
    entry = ChangelogEntry(now_iso(), "EDIT", row.name, row.version, version, "person",
                           "changed on disk, outside skillshelf", [f"workspace:{row.name}"], who)
    ws.commit(row.name, out, version, base=row.sha256, entry=json.dumps(entry.as_dict(), ensure_ascii=False),
              author=who)
    if out != data:
        atomic_write(md, out, durable=False)
    print(f"skillshelf: {md} was edited on disk: kept as v{version} of {row.name} in the team store",
          file=sys.stderr)
    return version, out


def set_aside(ws: PgWorkspace, md: Path, data: bytes, row: SkillRow | None, folder: Path,
              base: str | None = None) -> dict[str, Any]:
    """Keep an edit the store has moved past: a copy in ``folder`` (set-aside), a FIX draft in
    the review queue (unless one waits for that skill), a line on stderr. Returns the record
    ``doctor`` lists. The draft names the version the edit was made on (``base``: the sha256 of
    the text this server had; with none known, the version its frontmatter names): approving it
    merges the edit with what the store saved since (``evolution.review``)."""
    name = md.parent.name
    dest = folder / time.strftime("%Y%m%d-%H%M%S") / name / "SKILL.md"
    n = 1
    while dest.exists():
        dest = dest.parent.with_name(f"{name}.{n}") / "SKILL.md"
        n += 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(dest, data)
    now = "deleted" if row is None or row.deleted else f"v{row.version}"
    draft = False
    try:
        cur = skillmod.parse_strict(data.decode("utf-8-sig"), folder_name=name)
        if row is not None and not row.deleted and ws.draft(name) is None:
            args = {"action": "FIX", "target_skill_name": name, "body": cur.body, "replace_body": True,
                    "description": cur.description, "author": author(),
                    "reason": f"an edit made on disk while the team store moved on to {now} (kept in {dest})"}
            made_on = ws.kept_version(name, base) if base else cur.version
            ws.put_draft(name, data, json.dumps({"args": args, "proposed_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                                 "set_aside": str(dest), "store": now,
                                                 **({"base_version": made_on} if made_on else {})}, indent=2))
            draft = True
    except (SkillshelfError, UnicodeDecodeError, ValueError) as exc:
        print(f"skillshelf: the edit of {name} could not be proposed for review ({exc})", file=sys.stderr)
    print(f"skillshelf: {md} was edited on disk while the team store moved on to {now} of {name}: the edit is kept "
          f"in {dest}" + (" and waits in the review queue (`skillshelf review show " + name + "`)" if draft else "")
          + "; this server's copy now holds the store's text", file=sys.stderr)
    return {"name": name, "kept": str(dest), "store": now, "draft": draft, "at": time.strftime("%Y-%m-%d %H:%M:%S")}


def waiting(ws: PgWorkspace, folder: Path) -> list[dict[str, Any]]:
    """The edits kept in ``folder`` (this server's set-aside) whose draft still waits in the
    review queue, as ``set_aside`` returns them: kept before a restart too."""
    out = []
    for name, (_, rec) in sorted(ws.drafts().items()):
        try:
            data = json.loads(rec)
        except ValueError:
            continue
        kept = data.get("set_aside") if isinstance(data, dict) else None
        if isinstance(kept, str) and Path(kept).is_relative_to(folder):
            out.append({"name": name, "kept": kept, "store": str(data.get("store") or "a later version"),
                        "draft": True, "at": str(data.get("proposed_at") or "")})
    return out


__all__ = ["author", "based_on", "commit", "set_aside", "sha256", "waiting"]
