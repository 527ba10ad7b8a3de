"""The ``Library`` methods for onboarding: export, import, pick.

A mixin, so that ``library.py`` only names it as a base class; the work is done in
:mod:`skillshelf.archive` and :mod:`skillshelf.pick`, imported when a method is called
(neither is needed to open a library or to search it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:   # pragma: no cover
    from .archive import ExportReport, ImportReport, SkillFiles
    from .pick import PickResult


class OnboardingMixin:
    """Export and import of skill folders and archives, and picking the skills worth
    installing directly in a client for one project."""

    def export_skills(self, names: list[str] | tuple[str, ...] = (), *, all_skills: bool = False,
                      to: str | Path) -> "ExportReport":
        """Write the named skills (or ``all_skills``: every name, the skill a lookup by name
        finds) to a folder, a ``.zip`` or a ``.tar.gz``, with ``manifest.json`` (names, ids,
        versions, the sha256 of every file)."""
        from .archive import export_skills

        return export_skills(self, list(names), all_skills=all_skills, to=to)

    def import_skills(self, source: str | Path, *, mode: str = "copy", replace: bool = False,
                      dry_run: bool = False) -> "ImportReport":
        """Import the skills of a folder, ``.zip`` or ``.tar.gz``: ``mode='copy'`` into the
        workspace (a name already taken is skipped unless ``replace``, which makes the
        imported text a new version through FIX), ``mode='root'`` as a read-only root.
        Unsafe archives are refused as a whole before anything is written."""
        from .archive import import_skills

        return import_skills(self, source, mode=mode, replace=replace, dry_run=dry_run)

    def pick(self, project: str | Path, *, limit: int = 8) -> "PickResult":
        """The few skills worth installing directly in a client for this project, each with
        the signal or the outcome that chose it."""
        from .pick import pick

        return pick(self, project, limit=limit)

    def skill_folder(self, name_or_id: str) -> tuple[Any, "SkillFiles"]:
        """A skill and its files read into memory (``SKILL.md`` and the others), for copying."""
        from .archive import skill_files

        rec = self.get(name_or_id)  # type: ignore[attr-defined]
        return rec, skill_files(rec.folder, Path(rec.path).name)
