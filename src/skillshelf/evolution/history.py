"""Every version of a workspace skill, in full, and its changelog.

:class:`History` is what evolution needs from wherever versions are kept: read and write a
version's full text, list the versions kept, append to and read the changelog, forget a
skill. :class:`FileHistory` keeps them as files beside the workspace, in
``<home>/history/<name>/`` (``v1.md``, ``v2.md``, …, ``changelog.jsonl``), so deleting the
database keeps them; a shared team store keeps them in its database behind the same methods.

A name that is not a plain spec name (see :func:`guards.name_dir`) has no history.
"""

from __future__ import annotations

import difflib
import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NotFoundError, ValidationError, WriteError
from ..files import MAX_SKILL_BYTES, append_line, atomic_write, is_disk_full, read_text_bounded
from .guards import name_dir

MAX_CHANGELOG_BYTES = 20_000_000


@dataclass
class ChangelogEntry:
    at: str
    action: str
    name: str
    from_version: int | None
    to_version: int
    trigger: str
    reason: str
    sources: list[str] = field(default_factory=list)
    author: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ChangelogEntry:
        """An entry from what was stored (keys it does not know are ignored). Raises
        ``TypeError`` for data that is not an entry."""
        if not isinstance(data, dict):
            raise TypeError("a changelog entry is an object")
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


class History:
    """Where the versions and changelogs of workspace skills are kept.

    Implementations provide ``versions``, ``read_version``, ``write_version``,
    ``append_changelog``, ``changelog`` and ``remove``; a write that fails raises ``OSError``
    (a file) or ``StoreError`` (a database), and leaves what was kept as it was. ``where``
    names the place for error messages."""

    where: str = "the history"

    def versions(self, name: str) -> list[int]:
        """The version numbers kept for ``name``, ascending (empty when none are)."""
        raise NotImplementedError

    def read_version(self, name: str, version: int) -> str:
        """The full SKILL.md text of a kept version; ``NotFoundError`` naming the versions
        kept when there is no such version."""
        raise NotImplementedError

    def write_version(self, name: str, version: int, text: str) -> None:
        """Keep ``text`` as version ``version`` of ``name`` (atomically; a version written
        again is replaced whole)."""
        raise NotImplementedError

    def append_changelog(self, entry: ChangelogEntry) -> None:
        raise NotImplementedError

    def changelog(self, name: str) -> list[ChangelogEntry]:
        """The changelog of ``name``, oldest first (entries torn by a crash are skipped)."""
        raise NotImplementedError

    def remove(self, name: str) -> None:
        """Forget every version and the changelog of ``name``."""
        raise NotImplementedError

    # derived from the above ------------------------------------------------------------------
    def keep(self, name: str, version: int, text: str) -> None:
        """:meth:`write_version`, whose failure to write a file (permissions, a full disk) is
        one :class:`WriteError` naming the fix; nothing was changed."""
        try:
            self.write_version(name, version, text)
        except OSError as exc:
            fix = "free some disk space and try again" if is_disk_full(exc) else f"check that {self.where} is writable"
            raise WriteError(f"cannot write the history of {name}: {exc.strerror or exc}; nothing was changed",
                             fix=fix) from None

    def latest(self, name: str) -> int | None:
        kept = self.versions(name)
        return kept[-1] if kept else None

    def diff(self, name: str, v1: int, v2: int) -> str:
        """A unified diff from version ``v1`` to ``v2``."""
        a, b = self.read_version(name, v1), self.read_version(name, v2)
        return "".join(difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                            fromfile=f"{name}/v{v1}", tofile=f"{name}/v{v2}"))

    def text(self, name: str, version: int) -> str:
        """The same as :meth:`read_version` (the name older callers use)."""
        return self.read_version(name, version)

    @staticmethod
    def missing(name: str, version: int, kept: list[int]) -> NotFoundError:
        have = ", ".join(f"v{v}" for v in kept) or "none"
        return NotFoundError(f"{name} has no version {version}", fix=f"versions kept: {have}")


class FileHistory(History):
    """``<home>/history/<name>/``: ``vN.md`` per version and ``changelog.jsonl``. Every path
    is built by :func:`name_dir`."""

    def __init__(self, home: Path):
        self.base = Path(home) / "history"
        self.where = str(self.base)

    def dir(self, name: str) -> Path:
        return name_dir(self.base, name)

    def _existing(self, name: str) -> Path | None:
        try:
            d = self.dir(name)
        except ValidationError:
            return None
        return d if d.is_dir() else None

    def versions(self, name: str) -> list[int]:
        d = self._existing(name)
        if d is None:
            return []
        return sorted(int(p.stem[1:]) for p in d.glob("v*.md") if p.stem[1:].isdigit() and len(p.stem) < 12)

    def read_version(self, name: str, version: int) -> str:
        d = self._existing(name)
        p = d / f"v{int(version)}.md" if d is not None else None
        if p is None or not p.is_file():
            raise self.missing(name, version, self.versions(name))
        return read_text_bounded(p, MAX_SKILL_BYTES)

    def write_version(self, name: str, version: int, text: str) -> None:
        atomic_write(self.dir(name) / f"v{int(version)}.md", text)

    def append_changelog(self, entry: ChangelogEntry) -> None:
        append_line(self.dir(entry.name) / "changelog.jsonl", json.dumps(entry.as_dict(), ensure_ascii=False))

    def changelog(self, name: str) -> list[ChangelogEntry]:
        d = self._existing(name)
        if d is None or not (d / "changelog.jsonl").is_file():
            return []
        out = []
        for line in read_text_bounded(d / "changelog.jsonl", MAX_CHANGELOG_BYTES).splitlines():
            try:
                out.append(ChangelogEntry.from_dict(json.loads(line)))
            except (ValueError, TypeError, AttributeError):
                continue  # a line torn by a crash, or edited by hand: skipped, the rest is kept
        return out

    def remove(self, name: str) -> None:
        d = self._existing(name)
        if d is not None:
            shutil.rmtree(d)
