"""Versions and changelogs of the team workspace's skills, kept in PostgreSQL (the
``history`` and ``changelog`` tables) behind :class:`history.History`."""

from __future__ import annotations

import json

from .. import skill as skillmod
from ..evolution.history import ChangelogEntry, History
from ..store.pg_workspace import PgWorkspace


def _plain(name: object) -> bool:
    return isinstance(name, str) and len(name) <= skillmod.MAX_NAME and bool(skillmod.NAME_RE.match(name))


class PgHistory(History):
    """A version is written once: the primary key (name, version) refuses a number given
    twice (``ConflictError``), across every server. A name that is not a plain spec name has
    no history, as in :class:`history.FileHistory`."""

    where = "the team store"

    def __init__(self, ws: PgWorkspace):
        self.ws = ws

    def versions(self, name: str) -> list[int]:
        return self.ws.versions(name) if _plain(name) else []

    def read_version(self, name: str, version: int) -> str:
        data = self.ws.version_text(name, int(version)) if _plain(name) else None
        if data is None:
            raise self.missing(name, version, self.versions(name))
        return data.decode("utf-8-sig")

    def write_version(self, name: str, version: int, text: str) -> None:
        from ..evolution.guards import check_new_name

        check_new_name(name)
        self.ws.add_version(name, int(version), text.encode("utf-8"))

    def append_changelog(self, entry: ChangelogEntry) -> None:
        self.ws.append_changelog(entry.name, json.dumps(entry.as_dict(), ensure_ascii=False))

    def changelog(self, name: str) -> list[ChangelogEntry]:
        if not _plain(name):
            return []
        out = []
        for line in self.ws.changelog(name):
            try:
                out.append(ChangelogEntry.from_dict(json.loads(line)))
            except (ValueError, TypeError, AttributeError):
                continue
        return out

    def remove(self, name: str) -> None:
        if _plain(name):
            self.ws.forget(name)
