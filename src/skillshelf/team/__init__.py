"""The team workspace: several servers, one PostgreSQL database.

The database holds the truth of the team workspace — each skill's SKILL.md and other files,
every version, the changelog, the drafts (``store.pg_workspace``). Each server keeps a copy of
the workspace in its home (``<home>/team/workspace``, with ``<home>/team/drafts``) that its
library indexes as its workspace root, so search and every read stay as they are; the copy
follows the database's change stream (``Mirror``). Writes go through the same evolution code
as a local library, with three parts swapped in:

- ``lock``: an advisory lock per skill name, across every server (``TeamLock``);
- ``shared_commit``: the commit point, one transaction (``TeamWorkspace``);
- ``shared_history`` and ``drafts``: versions, changelogs and drafts in the database
  (``PgHistory``, ``PgDrafts``).

A library in team mode is built with :meth:`Team.open` and closed with :meth:`Team.close`.

May use: ``evolution`` (the same write path), ``store`` and the core values."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..store.pg_workspace import PgWorkspace
from .drafts import PgDrafts
from .mirror import Mirror
from .shared_commit import TeamLock, TeamWorkspace
from .shared_history import PgHistory

__all__ = ["Mirror", "PgDrafts", "PgHistory", "Team", "TeamLock", "TeamWorkspace", "team_paths"]


def team_paths(home: Path) -> dict[str, Path]:
    """Where a server keeps its copy of the team workspace, in its home."""
    base = Path(home) / "team"
    return {"workspace": base / "workspace", "drafts": base / "drafts", "set_aside": base / "set-aside"}


class Team:
    """The team parts of one library (see the module's text). ``pg``: the team store's
    ``PgStore`` when the library has one open already (it is then not closed here);
    ``index(paths)``: called with the skill folders a change from another server rewrote
    (None: the whole folder was compared again and something changed: sync everything);
    ``follow``: follow the change stream (a server), or only bring everything in now."""

    def __init__(self, config: Any, *, pg: Any = None, index: Callable[[list[Path] | None], None] | None = None,
                 follow: bool = True):
        from ..store.postgres import PgStore

        self._own = pg is None
        self.pg = pg if pg is not None else PgStore(config.store)
        try:
            self.store = PgWorkspace(self.pg)
            paths = team_paths(config.home)
            self.mirror = Mirror(self.store, workspace=config.workspace, drafts=config.drafts,
                                 set_aside=paths["set_aside"], index=index)
            self.workspace = TeamWorkspace(self.store, self.mirror)
            self.lock = TeamLock(self.store, on_release=self.workspace.forget)
            self.history = PgHistory(self.store)
            self.drafts = PgDrafts(self.store, self.mirror, self.lock)
            self.mirror.start(follow=follow)
        except BaseException:
            self.close()
            raise

    @classmethod
    def open(cls, config: Any, **kw: Any) -> Team:
        return cls(config, **kw)

    def subscribe(self, kind: str, fn: Callable[[list[str] | None], object]) -> None:
        """Call ``fn(keys)`` when other servers commit changes of ``kind`` (e.g. "overlay",
        with the skill ids: ``PgOverlays.refresh``), and ``fn(None)`` when this server fell
        behind the pruned part of the change stream (read every key of the kind again)."""
        self.mirror.subscribe(kind, fn)

    def adopt(self, names: list[str], *, author: str = "", reason: str = "") -> dict[str, int | None]:
        """Add folders written into this server's copy (an import, the samples of ``init``) to
        the store, each as a new skill with its files: {name: its version, or None when the
        store has that name already (the next pull replaces the folder with the store's)}."""
        out: dict[str, int | None] = {}
        for name in names:
            with self.lock("skill:" + name):
                out[name] = self.workspace.adopt(name, author=author, reason=reason)
        return out

    def evolver_parts(self) -> dict[str, Any]:
        """The keyword arguments of ``Evolver`` for this team."""
        return {"history": self.history, "lock": self.lock, "workspace": self.workspace}

    def status(self) -> dict[str, Any]:
        """For ``doctor``: whether this server follows the change stream, the last change it
        has seen, how long ago it last read the stream, and how often it fell behind the
        stream's pruned part and brought everything in again."""
        seen = self.mirror.last_seen
        return {"following": self.mirror.following, "last_change": self.mirror._last,
                "seconds_since_read": None if not seen else round(time.monotonic() - seen, 1),
                "resyncs": self.mirror.resyncs}

    def close(self) -> None:
        mirror = getattr(self, "mirror", None)
        if mirror is not None:
            mirror.close()
        store = getattr(self, "store", None)
        if store is not None:
            store.close()
        if self._own and getattr(self, "pg", None) is not None:
            self.pg.close()
