"""Drafts of the team workspace, kept in PostgreSQL behind :class:`review.Drafts`: every
curator sees one queue, whichever server they ask. Each server keeps a copy of each draft
(``<drafts>/<name>/SKILL.md`` and ``draft.json``, as a local library does) for a person to
open; the database is what the queue reads."""

from __future__ import annotations

import contextlib
import json
import sys

from .. import skill as skillmod
from ..errors import NotFoundError, SkillshelfError
from ..evolution.guards import name_dir
from ..evolution.review import Drafts
from ..store.pg_workspace import PgWorkspace
from .mirror import Mirror


class PgDrafts(Drafts):
    def __init__(self, ws: PgWorkspace, mirror: Mirror, lock=None):
        self.ws = ws
        self.mirror = mirror
        self._lock = lock or ws.locked      # the team's lock (``TeamLock``): one session per operation

    def lock(self, name: str):
        return self._lock("draft:" + name)

    def names(self) -> list[str]:
        return [n for n in self.ws.draft_names() if skillmod.NAME_RE.match(n)]

    def record(self, name: str) -> dict | None:
        got = self.ws.draft(name) if isinstance(name, str) else None
        if got is None:
            return None
        try:
            data = json.loads(got[1])
        except ValueError:
            return None
        return data if isinstance(data, dict) and isinstance(data.get("args"), dict) else None

    def text(self, name: str) -> str:
        got = self.ws.draft(name)
        if got is None:
            raise NotFoundError(f"no draft named {str(name)[:80]!r}", fix="`skillshelf review list` shows the drafts")
        return got[0].decode("utf-8-sig")

    def location(self, name: str) -> str:
        return str(name_dir(self.mirror.drafts, name) / "SKILL.md")

    def put(self, name: str, text: str, record: dict) -> None:
        name_dir(self.mirror.drafts, name)          # a plain spec name, or ValidationError
        data, rec = text.encode("utf-8"), json.dumps(record, indent=2)
        self.ws.put_draft(name, data, rec)
        self._copy(lambda: self.mirror.put_draft(name, data, rec))

    def remove(self, name: str) -> None:
        if isinstance(name, str):
            self.ws.remove_draft(name)
            self._copy(lambda: self.mirror.drop_draft(name))

    def log_rejection(self, record: dict) -> None:
        self.ws.log_rejection(str(record.get("name", "")), json.dumps(record))

    @staticmethod
    def _copy(step) -> None:
        """This server's copy of a draft: the database has it already, a failure is only said."""
        with contextlib.suppress(ValueError):
            try:
                step()
            except (OSError, SkillshelfError) as exc:
                print(f"skillshelf: the copy of a draft on this server could not be written ({exc})", file=sys.stderr)
