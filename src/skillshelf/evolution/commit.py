"""The commit point of a change to a workspace skill: where its SKILL.md (and its other
files) is written or deleted, with the versions and the changelog entry that go with it.

:class:`Workspace` is what evolution needs at that moment. :class:`FileWorkspace` is the local
library's: the versions into the history first (an extra version is harmless), then SKILL.md
atomically (the commit point), then the changelog, whose failure is reported beside "saved"
and never instead of it. A team store's workspace (``team.TeamWorkspace``) commits all of it in
one database transaction and then writes this server's copy of the folder.

Every operation calls :meth:`Workspace.refresh` with the skills' locks held, before it plans:
the files it plans from are the latest committed ones."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ..errors import SkillshelfError, WriteError
from ..files import MAX_RESOURCE_BYTES, contained, write_file
from .guards import name_dir
from .history import ChangelogEntry, History


def after_write(step: Callable[[], object]) -> list[str]:
    """Run a step that follows a write that happened: its failure (a busy or damaged
    database, a full disk) is reported beside the success, never instead of it. An agent
    told "failed" would write again; the index catches up at the next sync."""
    try:
        step()
    except (SkillshelfError, OSError, sqlite3.Error) as exc:
        return [f"the index will catch up at the next sync ({type(exc).__name__}: {str(exc)[:200]})"]
    return []


def check_files(files: Mapping[str, bytes] | None) -> dict[str, bytes] | None:
    """The other files of a skill folder, checked: relative '/'-separated paths inside the
    folder (no '..', no hidden parts, not SKILL.md), each at most ``MAX_RESOURCE_BYTES``."""
    from ..errors import ValidationError

    if files is None:
        return None
    out: dict[str, bytes] = {}
    for path, data in files.items():
        parts = path.split("/") if isinstance(path, str) else []
        if not parts or any(p in ("", ".", "..") or p.startswith(".") or "\\" in p or "\x00" in p for p in parts) \
                or path == "SKILL.md":
            raise ValidationError(f"{str(path)[:120]!r} cannot be a file of a skill folder",
                                  fix="use a relative path like references/notes.md")
        if len(data) > MAX_RESOURCE_BYTES:
            raise ValidationError(f"{path} is {len(data):,} bytes; the limit is {MAX_RESOURCE_BYTES:,}",
                                  fix="split it into smaller files")
        out[path] = bytes(data)
    return out


class Workspace:
    """Where workspace skills are committed (see the module's text)."""

    def refresh(self, names: Iterable[str]) -> bool:
        """Bring this process's files of the skills ``names`` up to date with where they are
        kept, their locks held. Returns whether a file changed (the index then needs a sync)."""
        raise NotImplementedError

    def write(self, name: str, text: str, version: int, *, keep: Iterable[tuple[int, str]] = (),
              entry: ChangelogEntry | None = None, files: Mapping[str, bytes] | None = None) \
            -> tuple[Path, list[str]]:
        """Commit ``text`` as the SKILL.md of ``name`` and as its ``version``, the versions of
        ``keep`` the history lacks (the text being replaced), the changelog ``entry`` and, when
        given, ``files`` (its other files: the whole set). Raises before the commit point with
        nothing changed; returns the SKILL.md path and notes on what failed after it."""
        raise NotImplementedError

    def delete(self, name: str, folder: Path, *, forget: bool) -> None:
        """Delete the skill whose folder is ``folder`` (``forget``: its versions and
        changelog too)."""
        raise NotImplementedError


class FileWorkspace(Workspace):
    """The local library's workspace folder, its history beside it (``FileHistory``)."""

    def __init__(self, base: Path | Callable[[], Path], history: History):
        self._base = base if callable(base) else (lambda: Path(base))
        self.history = history

    def refresh(self, names: Iterable[str]) -> bool:
        return False            # the files are the truth: nothing to bring in

    def write(self, name, text, version, *, keep=(), entry=None, files=None):
        files = check_files(files)
        for v, t in keep:
            if v not in self.history.versions(name):
                self.history.keep(name, v, t)
        self.history.keep(name, version, text)
        folder = name_dir(self._base(), name)
        for rel, data in sorted((files or {}).items()):
            write_file(contained(folder, folder / rel), data)
        path = folder / "SKILL.md"
        write_file(path, text)                  # the commit point
        notes = after_write(lambda: self.history.append_changelog(entry)) if entry is not None else []
        return path, notes

    def delete(self, name: str, folder: Path, *, forget: bool) -> None:
        try:
            shutil.rmtree(folder)
        except OSError as exc:
            raise WriteError(f"cannot delete {folder}: {exc.strerror or exc}",
                             fix=f"check that {folder.parent} is writable") from None
        if forget:
            self.history.remove(name)
