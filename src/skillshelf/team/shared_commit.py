"""The commit point of the team workspace: one PostgreSQL transaction, then this server's
copy of the folder (:class:`TeamWorkspace`), and the locks writers of one skill take across
servers (:class:`TeamLock`)."""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .. import skill as skillmod
from ..errors import ValidationError, WriteError
from ..evolution.commit import Workspace, after_write, check_files
from ..evolution.guards import name_dir
from ..files import MAX_RESOURCE_BYTES, MAX_SKILL_BYTES, read_bounded, read_text_bounded
from ..store.pg_workspace import NEW, PgWorkspace, sha256
from .mirror import Mirror, _digest


def _plain(name: object) -> bool:
    return isinstance(name, str) and len(name) <= skillmod.MAX_NAME and bool(skillmod.NAME_RE.match(name))


class TeamLock:
    """``lock(*keys)``: the Evolver's lock for a team store. Session-level advisory locks on
    a connection the thread holds for the whole operation (``PgWorkspace.locked``); when the
    outermost one is released, ``on_release`` runs (the workspace forgets what it read)."""

    def __init__(self, ws: PgWorkspace, on_release: Callable[[], None] | None = None):
        self.ws = ws
        self.on_release = on_release

    @contextlib.contextmanager
    def __call__(self, *keys: str) -> Iterator[None]:
        outer = not self.ws.in_session()
        try:
            with self.ws.locked(*keys):
                yield
        finally:
            if outer and self.on_release is not None:
                self.on_release()


class TeamWorkspace(Workspace):
    """A change to a team skill is committed in the database (``PgWorkspace.commit``: the row,
    its files, the new version, the changelog entry and the change, in one transaction) and
    then written to this server's copy (``Mirror``). The row is replaced only if it still
    holds what the skill's files held when the change was planned: what :meth:`refresh` read
    under the lock (the lock alone could have gone with its connection)."""

    def __init__(self, ws: PgWorkspace, mirror: Mirror):
        self.ws = ws
        self.mirror = mirror
        self._local = threading.local()

    def _bases(self) -> dict[str, str | None]:
        bases = getattr(self._local, "bases", None)
        if bases is None:
            bases = self._local.bases = {}
        return bases

    def forget(self) -> None:
        """The operation ended (its locks are released): what it read is forgotten."""
        self._local.bases = {}

    def refresh(self, names: Iterable[str]) -> bool:
        changed = False
        locked = self.ws.in_session()
        for name in names:
            if not _plain(name):
                continue
            did, base = self.mirror.bring(name)
            if locked:              # what a change under these locks is planned from
                self._bases()[name] = base
            changed |= did
        return changed

    def _base(self, name: str) -> str | None:
        bases = self._bases()
        if name in bases:
            return bases[name]
        # not brought in by this operation: what this server's copy holds is what was planned from
        return _digest(self.mirror.workspace / name / "SKILL.md")

    def write(self, name, text, version, *, keep=(), entry=None, files=None):
        files = check_files(files)
        name_dir(self.mirror.workspace, name)           # a plain spec name, or ValidationError
        data = text.encode("utf-8")
        if len(data) > MAX_SKILL_BYTES:
            raise ValidationError(f"SKILL.md would be {len(data):,} bytes; the limit is {MAX_SKILL_BYTES:,}",
                                  fix="shorten the body or move detail into references/ files")
        base = self._base(name)
        self.ws.commit(name, data, int(version), base=NEW if base is None else base,
                       keep=[(int(v), t.encode("utf-8")) for v, t in keep],
                       entry=json.dumps(entry.as_dict(), ensure_ascii=False) if entry is not None else None,
                       files=files, author=(entry.author or entry.trigger) if entry is not None else "")
        # committed: whatever follows cannot turn the answer into "failed"
        self._bases()[name] = sha256(data)
        path = self.mirror.workspace / name / "SKILL.md"
        return path, after_write(lambda: self.mirror.write_committed(name, data, files))

    def adopt(self, name: str, *, author: str = "", reason: str = "") -> int | None:
        """Commit the folder ``name`` that this server's copy holds and the store does not
        (written here by an import or as a sample) as a new skill of the store, its locks held
        by the caller: its SKILL.md (the version its frontmatter says, else 1) and its other
        files (regular files only, within the caps). Returns the version, or None when the
        store has a skill of that name already (the folder is then this copy's to replace)."""
        from ..evolution.guards import now_iso
        from ..evolution.history import ChangelogEntry

        folder = name_dir(self.mirror.workspace, name)
        self.refresh_base(name)
        if self._bases().get(name) is not None:
            return None
        text = read_text_bounded(folder / "SKILL.md", MAX_SKILL_BYTES)
        files: dict[str, bytes] = {}
        for p in sorted(folder.rglob("*")):
            rel = p.relative_to(folder).as_posix()
            if rel == "SKILL.md" or p.is_symlink() or not p.is_file() or p.name.startswith(".tmp-"):
                continue
            files[rel] = read_bounded(p, MAX_RESOURCE_BYTES)
        parsed = skillmod.parse(text.encode("utf-8"), folder_name=name)
        if parsed.skill is None:
            bad = next(f for f in parsed.findings if f.severity == "fatal")
            raise ValidationError(f"{folder / 'SKILL.md'} is not a skill: {bad.message}",
                                  fix="fix the file, then add it again")
        version = parsed.skill.version or 1
        entry = ChangelogEntry(now_iso(), "IMPORT", name, None, version, "person",
                               reason or "added to the team store from a server's folder", [], author)
        self.write(name, text, version, entry=entry, files=files)
        return version

    def refresh_base(self, name: str) -> None:
        """Read what the store holds of ``name`` now as the base of a change (not the folder)."""
        row = self.ws.skill(name)
        self._bases()[name] = None if row is None or row.deleted else row.sha256

    def delete(self, name: str, folder: Path, *, forget: bool) -> None:
        key = folder.name
        base = self._base(key) if _plain(key) and folder.parent == self.mirror.workspace.resolve() else None
        if base is None:
            # not a skill of the store (a folder made here by hand): only this copy has it
            try:
                shutil.rmtree(folder)
            except OSError as exc:
                raise WriteError(f"cannot delete {folder}: {exc.strerror or exc}",
                                 fix=f"check that {folder.parent} is writable") from None
            return
        self.ws.delete(key, base=base, forget=forget)
        self._bases()[key] = None
        after_write(lambda: self.mirror.remove(key))    # the follower removes it too, at the next change
