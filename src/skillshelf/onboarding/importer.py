"""Import of skills from a folder, a ``.zip`` or a ``.tar.gz`` (as :mod:`skillshelf.onboarding.export`
writes them, or any folder of skill folders).

What an import reads is read by :mod:`skillshelf.onboarding.unpack`: whole, into memory, under caps,
and refused as a whole before anything is written when it is unsafe. Each skill is then
read as sync reads it (a file that cannot be used at all is refused; any other finding, such
as a key the spec does not define, is reported and the file imported byte for byte) and
checked against the manifest. Each skill gets a folder of its own in the workspace: the one
the export chose, or its folder name, or a folder named from its path when that name is
taken. An import never overwrites silently: a skill whose name the library holds already is
skipped and reported; ``replace`` makes the imported text a new version of the existing
skill through the normal FIX path (its previous text kept in history), or refuses when FIX
cannot carry the change.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..errors import NotFoundError, SkillshelfError, ValidationError, WriteError
from ..files import atomic_write, locked
from . import unpack
from .export import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    ExportReport,
    _mkdtemp,
    _quiet,
    export_skills,
    folder_for,
    safe_folder_name,
    sha256,
)
from .unpack import (
    ArchiveRefused,
    SkillFiles,
    Source,
    member_path,
    read_source,
    skill_files,
)

__all__ = [
    "ArchiveRefused",
    "Candidate",
    "ExportReport",
    "ImportReport",
    "SkillFiles",
    "Source",
    "export_skills",
    "folder_for",
    "import_skills",
    "member_path",
    "preview_import",
    "read_source",
    "safe_folder_name",
    "sha256",
    "skill_files",
]

MAX_MANIFEST_BYTES = 20_000_000


# --- import --------------------------------------------------------------------------------------

@dataclass
class Candidate:
    folder: str                       # the skill's folder in the source ("" for the top)
    name: str                         # the skill's name (its frontmatter's; the folder's until it is read)
    files: dict[str, bytes]
    executable: set[str]
    skill_md: str = "SKILL.md"
    skill: skillmod.Skill | None = None
    status: str = ""                  # new | unchanged | clash | replace | invalid | refused | root | error
    message: str = ""
    existing: str | None = None       # the id it clashes with or replaces
    version: int | None = None        # the version written (replace)
    dest: str = ""                    # its folder in the workspace (or the unpacked root), relative
    # what sync would report about the file (spec errors, warnings): it is imported as it is
    findings: list[skillmod.Finding] = field(default_factory=list)
    path: str = ""                    # its SKILL.md in the library once taken in
    risk: str = ""                    # what the audit found there: medium | high ("" below)
    held: str = ""                    # why the export's library held it back from agents ("" : it did not)

    @property
    def folder_name(self) -> str:
        return self.folder.rpartition("/")[2]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "folder": self.folder or ".", "dest": self.dest, "status": self.status,
                "message": self.message, "existing": self.existing, "files": len(self.files),
                "version": self.version, "findings": [f.as_dict() for f in self.findings], "risk": self.risk,
                "held": self.held or None}


@dataclass
class ImportReport:
    source: str
    kind: str
    mode: str                         # copy | root
    dry_run: bool
    skills: list[Candidate]
    notes: list[str]
    root: str | None = None           # the folder registered as a root (mode root)

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.skills:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    @property
    def ok(self) -> bool:
        return all(c.status in ("new", "unchanged", "replace", "root") for c in self.skills)

    @property
    def with_findings(self) -> dict[str, int]:
        """Of the skills taken in (new, replace, root), how many have each kind of finding (an
        unknown key, a name that breaks the spec, ...): imported as they are, as sync reads them."""
        out: Counter[str] = Counter()
        for c in self.skills:
            if c.status in ("new", "replace", "root"):
                out.update({f.rule for f in c.findings if f.severity in ("error", "warning")})
        return dict(out.most_common())

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "kind": self.kind, "mode": self.mode, "dry_run": self.dry_run,
                "ok": self.ok, "counts": self.counts, "with_findings": self.with_findings, "root": self.root,
                "skills": [c.as_dict() for c in self.skills], "notes": self.notes}


def _manifest(src: Source) -> dict[str, dict[str, Any]] | None:
    """manifest.json at the top of the source, by skill folder; None when there is none."""
    raw = src.files.pop(MANIFEST, None)
    if raw is None:
        return None
    bad = ArchiveRefused(f"{src.path}: {MANIFEST} is not a skillshelf manifest",
                         fix="remove it to import the skill folders without checking them, or export again")
    if len(raw) > MAX_MANIFEST_BYTES:
        raise bad
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise bad from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("skills"), list):
        raise bad
    if not isinstance(data.get("format_version"), int) or data["format_version"] > FORMAT_VERSION:
        raise ArchiveRefused(f"{src.path} was written by a newer skillshelf (format "
                             f"{data.get('format_version')!r})", fix="upgrade skillshelf to import it")
    out: dict[str, dict[str, Any]] = {}
    for s in data["skills"]:
        if not isinstance(s, dict) or not isinstance(s.get("folder"), str) or not isinstance(s.get("files"), dict):
            raise bad
        for rel, meta in s["files"].items():
            if not isinstance(rel, str) or not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
                raise bad
        out[member_path(s["folder"], src.path)] = s
    return out


def candidates(src: Source) -> tuple[list[Candidate], dict[str, dict[str, Any]] | None, list[str]]:
    """The skill folders of a source (a folder holding SKILL.md, at any depth), each with the
    files below it that belong to no deeper skill; the manifest; notes."""
    manifest = _manifest(src)
    notes: list[str] = []
    folders: set[str] = set()
    for rel in src.files:
        head, _, base = rel.rpartition("/")
        if base in unpack.SKILL_FILES:
            folders.add(head)
    by_folder: dict[str, Candidate] = {}
    for folder in folders:
        name = folder.rpartition("/")[2] if folder else src.root_name
        md = "SKILL.md" if f"{folder}/SKILL.md".lstrip("/") in src.files else "skill.md"
        by_folder[folder] = Candidate(folder, name, {}, set(), md)
    stray = 0
    for rel, data in src.files.items():
        parts = rel.split("/")
        owner = None
        for i in range(len(parts) - 1, -1, -1):
            f = "/".join(parts[:i])
            if f in by_folder:
                owner = f
                break
        if owner is None:
            stray += 1
            continue
        inner = rel[len(owner) + 1:] if owner else rel
        c = by_folder[owner]
        c.files[inner] = data
        if rel in src.executable:
            c.executable.add(inner)
    if stray:
        notes.append(f"{stray} file(s) outside any skill folder were ignored")
    if not by_folder:
        raise ValidationError(f"{src.path} holds no skill (no folder with a SKILL.md)",
                              fix="pass a folder of skill folders, or an archive `skillshelf export` wrote")
    return [by_folder[f] for f in sorted(by_folder)], manifest, notes


def _validate(c: Candidate) -> None:
    """Read the skill as sync does: a file that cannot be used (no frontmatter, bad YAML, no
    description) is invalid; any other finding (an unknown key, a name against the spec) is
    kept with it, and the file is imported byte for byte."""
    parsed = skillmod.parse(c.files[c.skill_md], folder_name=c.folder_name or c.name)
    c.skill = parsed.skill
    if parsed.skill is None:
        e = next(f for f in parsed.findings if f.severity == "fatal")
        c.status, c.message = "invalid", f"{c.skill_md}: {e.message} ({e.rule})"
        return
    c.name = parsed.skill.name or c.name
    c.findings = [f for f in parsed.findings if f.severity in ("error", "warning")]


def _place(cands: list[Candidate], manifest: dict[str, dict[str, Any]] | None, root_name: str) -> None:
    """Each skill's folder in the workspace: the folder an export chose (its manifest lists
    it) when every part is a safe folder name, else the skill's own folder name when safe and
    free, else a folder of its own named from its path in the source (``folder_for``)."""
    used: set[str] = set()
    later = []
    if manifest is not None:
        for c in cands:
            parts = c.folder.split("/") if c.folder else []
            if 1 <= len(parts) <= 2 and all(safe_folder_name(p) for p in parts) and parts[0].lower() not in used:
                used.add(parts[0].lower())
                c.dest = c.folder
            else:
                later.append(c)
    else:
        later = list(cands)
    for c in later:
        c.dest = folder_for(c.folder or root_name, c.folder_name or root_name, c.name, used)


def _verify(c: Candidate, manifest: dict[str, dict[str, Any]], src: Source) -> None:
    entry = manifest.get(c.folder)
    if entry is None:
        c.status, c.message = "refused", f"not listed in {MANIFEST}: the archive was changed after export"
        return
    listed = entry["files"]
    missing = sorted(set(listed) - set(c.files))
    extra = sorted(set(c.files) - set(listed))
    if missing:
        c.status, c.message = "refused", f"{missing[0]} is listed in {MANIFEST} but missing"
        return
    if extra:
        c.status, c.message = "refused", f"{extra[0]} is not listed in {MANIFEST}: the archive was changed"
        return
    for rel, meta in listed.items():
        if sha256(c.files[rel]) != str(meta["sha256"]).lower():
            c.status, c.message = "refused", (f"the sha256 of {rel} does not match {MANIFEST}: the archive "
                                              "was changed or damaged")
            return


def _existing_files(rec: Any) -> dict[str, bytes]:
    return skill_files(rec.folder, Path(rec.path).name).files


def import_skills(lib: Any, source: str | Path, *, mode: str = "copy", replace: bool = False,
                  dry_run: bool = False) -> ImportReport:
    """Import skills from a folder or archive. ``mode='copy'`` copies them into the workspace;
    ``mode='root'`` registers the folder (or, for an archive, the folder it is unpacked to
    under ``<home>/imports/``) as a read-only root. Each skill is validated, checked against
    the manifest when there is one, and compared with the library's skills of its name."""
    if mode not in ("copy", "root"):
        raise ValidationError(f"unknown import mode {mode!r}", fix="use copy or root")
    if replace and mode == "root":
        raise ValidationError("--replace applies to copies only", fix="leave out --replace with --as-root")
    src = read_source(source)
    cands, manifest, notes = candidates(src)
    notes = src.notes + notes
    for c in cands:
        _validate(c)
        if not c.status and manifest is not None:
            _verify(c, manifest, src)
    _place(cands, manifest, src.root_name)
    if manifest is not None:
        present = {c.folder for c in cands}
        for folder in sorted(set(manifest) - present):
            notes.append(f"{MANIFEST} lists {folder}, which the source does not hold")
        for c in cands:
            why = (manifest.get(c.folder) or {}).get("held")
            if why and c.status != "refused":      # the archive's text, on one line
                c.held = " ".join(str(why).split())[:200] or "held"
    report = ImportReport(str(src.path), src.kind, mode, dry_run, cands, notes)
    lib._maybe_sync()   # compare with the files as they are now (an editor may have added one)
    if mode == "root":
        first: set[str] = set()
        return _held(lib, _audited(lib, _as_root(lib, src, report, first)), first)
    _plan_copies(lib, cands, replace)
    if dry_run:
        return _held(lib, report)
    ws = next((r.label for r in lib.roots if r.kind == "workspace"), "workspace")
    first = _hold_first(lib, {((c.existing or "") if c.status == "replace" else f"{ws}:{c.dest}"): c for c in cands
                              if c.held and c.status in ("new", "replace")})
    _apply_copies(lib, src, cands)
    if any(c.status in ("new", "replace") for c in cands):
        report.notes += [f"index: {n}" for n in lib.sync().notes]
    return _held(lib, _audited(lib, report), first)


def _hold_first(lib: Any, ids: dict[str, Candidate]) -> set[str]:
    """Hold the ids the skills an archive marked held will have, before their files are written:
    no reader (a server running alongside, a sync) sees one meanwhile, and an import stopped
    half way leaves it held. The ids held so that were not held before."""
    ids = {sid: c for sid, c in ids.items() if sid}
    if not ids or getattr(lib, "supply", None) is None:
        return set()
    before = lib.supply.held()
    lib.supply.hold_imported({sid: sid.partition(":")[0] for sid in ids})
    return set(ids) - set(before)


def _held(lib: Any, report: ImportReport, first: Iterable[str] = ()) -> ImportReport:
    """A skill the archive marks held (its library held it back from agents) is held in this
    library too, by the gate every reader asks, until a person trusts it here (with the key of
    its content and its name, now that its files are written); each is named. ``first``: ids
    held before the files were written (:func:`_hold_first`); one no skill took is let go."""
    took = ("new", "replace", "root")
    ids: dict[str, str] = {}
    for c in report.skills:
        if not c.held or c.status not in took or report.dry_run:
            continue
        try:
            ids[lib.get(c.path, reader=lib.PERSON).id] = c.name
        except SkillshelfError:
            c.held = ""             # not indexed (the sync's notes say why): nothing to hold
    if ids:
        lib.supply.hold_imported({sid: sid.partition(":")[0] for sid in ids})
    for sid in sorted(set(first) - set(ids)):
        lib.supply.pins.release(sid)
    for c in report.skills:
        if not c.held or c.status == "refused":
            continue
        where = f"held back from agents where it was exported ({c.held})"
        if c.status in took:
            verb = "would be held" if report.dry_run else "is held"
            report.notes.append(f"{c.name} was {where}: it {verb} here too, hidden from agents, until a person "
                                f"reviews it: `skillshelf trust {c.name}`")
        else:
            report.notes.append(f"{c.name} was {where}: not taken in ({c.status}); review it before an agent reads it")
    return report


def _finds(lib: Any, name: str, skill_id: str) -> bool:
    try:
        return lib.get(name, reader=lib.PERSON).id == skill_id
    except SkillshelfError:
        return False


def _audited(lib: Any, report: ImportReport) -> ImportReport:
    """What the library's audit found in the skills taken in (its sync audited them), at medium
    or above: each candidate's ``risk``, and a note naming them. A dry run took nothing in."""
    ids: dict[str, Candidate] = {}
    for c in report.skills:
        if c.path and c.status in ("new", "replace", "root") and not report.dry_run:
            try:
                ids[lib.get(c.path, reader=lib.PERSON).id] = c
            except SkillshelfError:
                continue            # not indexed (the sync's notes say why)
    if not ids or getattr(lib, "supply", None) is None:
        return report
    for r in lib.supply.audit(list(ids), min_severity="medium"):
        found = ids.get(r["id"])
        if found is not None and found.risk != "high":
            found.risk = r["severity"]
    for level in ("high", "medium"):
        # by name where the name finds that skill, else by id (another skill of the name wins a lookup)
        named = [c.name if _finds(lib, c.name, sid) else sid for sid, c in ids.items() if c.risk == level]
        if named:
            shown = ", ".join(named[:8]) + (" …" if len(named) > 8 else "")
            report.notes.append(f"audit: {len(named)} imported skill{'s' * (len(named) != 1)} {level} risk ({shown}): "
                                f"`skillshelf audit {named[0]}` says why; agents are warned, or kept from such "
                                'skills with [trust] block = "high" in config.toml')
    return report


def _rows(lib: Any, name: str) -> list[Any]:
    return lib._rows_by_name(name)


class _NoLibrary:
    """What a dry run compares with where the home holds no library yet: nothing."""

    def __init__(self, config: Any):
        self.config = config

    def _maybe_sync(self) -> None:
        return None

    def _rows_by_name(self, name: str) -> list[Any]:
        return []

    def configured_roots(self) -> list[str]:
        return []

    def get(self, name_or_id: str) -> Any:
        raise NotFoundError(f"no skill named {name_or_id!r}: there is no library at {self.config.home}")


def preview_import(config: Any, source: str | Path, *, mode: str = "copy", replace: bool = False) -> ImportReport:
    """``import --dry-run`` where the home holds no library yet (no database): the skills are
    read, checked and compared with an empty library, and nothing is created, the home
    included. ``config``: the settings of the library the import would go to."""
    report = import_skills(_NoLibrary(config), source, mode=mode, replace=replace, dry_run=True)
    report.notes.append(f"there is no library at {config.home} yet: compared with an empty one; "
                        "the import would create it")
    return report


def _plan_copies(lib: Any, cands: list[Candidate], replace: bool) -> None:
    first: dict[str, str] = {}        # name -> the folder in this source that has it first
    replaced: set[str] = set()
    ws = lib.config.workspace
    for c in cands:
        if c.status:
            continue
        twin = first.setdefault(c.name, c.folder or ".")
        rows = _rows(lib, c.name)
        if not rows:
            dest = ws / c.dest
            top = ws / c.dest.split("/")[0]
            if dest.exists() or dest.is_symlink():
                c.status, c.message = "clash", (f"{dest} exists but holds no skill named {c.name}: "
                                                "move it aside, then import again")
            elif "/" in c.dest and (top.is_symlink() or any((top / n).exists() for n in unpack.SKILL_FILES)):
                c.status, c.message = "clash", f"{top} is a skill or a link: move it aside, then import again"
            else:
                c.status = "new"
                if twin != (c.folder or "."):
                    c.message = (f"{twin} in this source has this name too: both are imported, a lookup by "
                                 "name takes one of them (use ids for the other)")
            continue
        recs = []
        for row in rows:
            try:
                recs.append(lib.get(row["id"], reader=lib.PERSON))
            except SkillshelfError:
                continue
        same = None
        for rec in recs:
            try:
                if _existing_files(rec) == c.files:
                    same = rec
                    break
            except (SkillshelfError, OSError):
                continue
        if same is not None:
            c.existing = same.id
            c.status, c.message = "unchanged", f"already in the library as {same.id}"
            continue
        if not recs:
            c.status, c.message = "error", f"the library's skills named {c.name} cannot be read: run sync"
            continue
        rec = recs[0]
        c.existing = rec.id
        if not replace:
            c.status, c.message = "clash", (f"{rec.id} has this name: skipped (pass --replace to make the "
                                            "imported text a new version of it)")
            continue
        if c.name in replaced:
            c.status, c.message = "clash", f"{twin} in this source replaces {rec.id} already: skipped"
            continue
        if c.skill_md != "SKILL.md":
            c.status, c.message = "clash", "its file is skill.md: rename it SKILL.md to replace a skill"
            continue
        old = _existing_files(rec) if rec.kind == "workspace" else {}
        differ = sorted(r for r, data in c.files.items() if r != c.skill_md and r in old and old[r] != data)
        if differ:
            c.status, c.message = "clash", (f"{rec.id}'s {differ[0]} differs, and a FIX versions only SKILL.md: "
                                            f"delete the old skill first (skillshelf delete {rec.id}) or rename one")
            continue
        replaced.add(c.name)
        c.status, c.message = "replace", f"a new version of {rec.id} (FIX; the old text stays in its history)"


def _stage(home: Path, files: dict[str, bytes], executable: set[str]) -> Path:
    """The files written into a new folder under ``<home>/.import-staging`` (same file system
    as the workspace: the move into place is a rename)."""
    base = home / ".import-staging"
    base.mkdir(parents=True, exist_ok=True)
    tmp = _mkdtemp("skill-", base)
    for rel, data in files.items():
        p = tmp / rel   # rel passed member_path: relative, no '..'
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if rel in executable:
            os.chmod(p, 0o755)
    return tmp


def _apply_copies(lib: Any, src: Source, cands: list[Candidate]) -> None:
    home = lib.config.home
    ws = lib.config.workspace
    for c in cands:
        if c.status == "new":
            dest = ws / c.dest     # c.dest: one or two safe folder names (_place)
            try:
                staged = _stage(home, c.files, c.executable)
                with locked(home, "skill:" + c.name, "folder:" + c.dest):
                    if dest.exists() or dest.is_symlink():
                        shutil.rmtree(staged, ignore_errors=True)
                        c.status, c.message = "clash", f"{dest} appeared while importing: skipped"
                        continue
                    if dest.parent != ws:
                        dest.parent.mkdir(exist_ok=True)
                        if dest.parent.is_symlink() or dest.parent.resolve().parent != ws.resolve():
                            shutil.rmtree(staged, ignore_errors=True)
                            c.status, c.message = "clash", f"{dest.parent} is a link: skipped"
                            continue
                    os.rename(staged, dest)
                c.path = str(dest / c.skill_md)
            except OSError as exc:
                c.status, c.message = "error", f"cannot write {dest}: {exc.strerror or exc}"
            continue
        if c.status == "replace":
            sk = c.skill
            assert sk is not None
            try:
                res = lib.save("FIX", target_skill_name=c.existing, body=sk.body, description=sk.description,
                               tags=", ".join(sk.tags), skill_type=sk.skill_type or "",
                               reason=f"imported from {src.path.name}", author="import", by="person")
            except ValidationError as exc:
                if "leaves" in exc.message:
                    c.status, c.message = "unchanged", f"{c.existing} holds this text already"
                else:
                    c.status, c.message = "error", exc.message
                continue
            except SkillshelfError as exc:
                c.status, c.message = "error", exc.message
                continue
            c.version = res.version
            c.path = res.path
            folder = Path(res.path).parent
            for rel, data in c.files.items():
                if rel == c.skill_md or (folder / rel).exists():
                    continue
                atomic_write(folder / rel, data)
                if rel in c.executable:
                    os.chmod(folder / rel, 0o755)
            c.message = f"{res.name} is now v{res.version} (FIX; the old text stays in its history)"
    if getattr(lib, "team", False):
        # a team store holds the workspace: the new folders join it (one skill per name there)
        new = [c for c in cands if c.status == "new"]
        flat = [c.name for c in new if c.dest == c.name]
        for c in new:
            if c.dest != c.name:
                c.status, c.message = "error", (f"a team store holds one skill per name; {c.name} is taken: "
                                                "rename it in the source and import again")
        for name, version in lib.adopt_folders(flat).items():
            if version is None:
                c = next(x for x in new if x.name == name)
                c.status, c.message = "clash", f"the team store has {name} already: skipped"
    staging = home / ".import-staging"
    with _quiet():
        staging.rmdir()


def _register_root(lib: Any, folder: Path) -> None:
    """Save ``folder`` as a root (config.toml) and use it in this library object too, so the
    sync that follows indexes it."""
    from ..catalog.roots import make_roots

    lib.add_root(folder)
    others = [r.path for r in lib.roots if r.kind == "other"]
    if all(p.resolve() != folder.resolve() for p in others):
        others.append(folder.resolve())
    lib.roots = make_roots(lib.config.workspace, others, include_clients=lib.config.client_roots)


def _root_label(lib: Any, folder: Path) -> str:
    """The label ``folder`` gets as a root of this library (:func:`_register_root` adds it)."""
    from ..catalog.roots import make_roots

    others = [r.path for r in lib.roots if r.kind == "other"]
    if all(p.resolve() != folder.resolve() for p in others):
        others.append(folder.resolve())
    return next((r.label for r in make_roots(lib.config.workspace, others) if r.path == folder.resolve()), "")


def _hold_in_root(lib: Any, folder: Path, cands: dict[str, Candidate]) -> set[str]:
    """Hold the skills an archive marked held (folder in ``folder`` -> candidate) by the ids
    they get there as a root, before it is registered (:func:`_hold_first`)."""
    label = _root_label(lib, folder)
    return _hold_first(lib, {f"{label}:{rel}": c for rel, c in cands.items() if c.held and c.status == "root"}) \
        if label else set()


def _as_root(lib: Any, src: Source, report: ImportReport, first: set[str]) -> ImportReport:
    home = lib.config.home.resolve()
    for c in report.skills:
        if c.status:
            continue
        c.status = "root"
        rows = _rows(lib, c.name)
        if rows:
            c.existing = rows[0]["id"]
            c.message = f"{rows[0]['id']} has this name too: lookups by name keep taking it (use ids for this one)"
    if src.kind == "folder":
        folder = src.path.resolve()
        if folder == home or home in folder.parents or folder in home.parents:
            raise ValidationError(f"{folder} is the library's home or inside it",
                                  fix="register a folder outside the home, or import with --copy")
        if any(c.status == "refused" for c in report.skills):
            report.notes.append(f"{folder} was not registered: its {MANIFEST} does not match its files")
            return report
        report.root = str(folder)
        if str(folder) in lib.configured_roots():
            report.notes.append(f"{folder} is a saved root already")
        if not report.dry_run:
            first |= _hold_in_root(lib, folder, {c.folder or ".": c for c in report.skills})
            _register_root(lib, folder)
            report.notes += [f"index: {n}" for n in lib.sync().notes]
            for c in report.skills:
                if c.status == "root":
                    c.path = str(folder / c.folder / c.skill_md) if c.folder else str(folder / c.skill_md)
        return report
    # an archive: the skills that passed are unpacked under <home>/imports/<archive name>
    base = lib.config.home / "imports"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", unpack.stem(src.path)).strip(".-") or "import"
    dest = base / stem
    n = 2
    while dest.exists():
        dest = base / f"{stem}-{n}"
        n += 1
    report.root = str(dest)
    if report.dry_run:
        return report
    keep = [c for c in report.skills if c.status == "root"]
    if not keep:
        return report
    base.mkdir(parents=True, exist_ok=True)
    tmp = _mkdtemp(".tmp-import-", base)
    try:
        for c in keep:
            for rel, data in c.files.items():
                p = tmp / c.dest / rel      # c.dest: one or two safe folder names (_place)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
                if rel in c.executable:
                    os.chmod(p, 0o755)
        os.rename(tmp, dest)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise WriteError(f"cannot unpack into {dest}: {exc.strerror or exc}; nothing was imported",
                         fix=f"check that {base} is writable and has space") from None
    first |= _hold_in_root(lib, dest, {c.dest: c for c in keep})
    _register_root(lib, dest)
    report.notes += [f"index: {n}" for n in lib.sync().notes]
    for c in keep:
        c.path = str(dest / c.dest / c.skill_md)
    return report
