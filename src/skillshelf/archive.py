"""Export and import of skills: a folder, a ``.zip`` or a ``.tar.gz`` holding one folder per
skill (its ``SKILL.md`` and its other files, byte for byte) and a ``manifest.json`` with
each skill's name, id, version and the sha256 of every file.

What an import reads is read by :mod:`skillshelf.unpack`: whole, into memory, under caps,
and refused as a whole before anything is written when it is unsafe. Each skill is then
validated and checked against the manifest. An import never overwrites silently: a skill
whose name is taken is skipped and reported; ``replace`` makes the imported text a new
version of the existing skill through the normal FIX path (its previous text kept in
history), or refuses when FIX cannot carry the change.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import skill as skillmod
from . import unpack
from .errors import ConflictError, NotFoundError, SkillshelfError, ValidationError, WriteError
from .files import atomic_write, locked
from .unpack import ArchiveRefused, SkillFiles, Source, member_path, read_source, skill_files

__all__ = ["ArchiveRefused", "Candidate", "ExportReport", "ImportReport", "SkillFiles", "Source", "export_skills",
           "import_skills", "member_path", "read_source", "skill_files", "sha256"]

FORMAT = "skillshelf-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 20_000_000


def _mkdtemp(prefix: str, dir: Path) -> Path:
    """A new folder with the permissions a plain mkdir gives (mkdtemp makes it 0700, and it is
    renamed into place as a skill folder)."""
    p = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(p, 0o777 & ~mask)
    return p


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- export --------------------------------------------------------------------------------------

@dataclass
class ExportReport:
    target: str
    kind: str                    # folder | zip | tar.gz
    skills: list[dict[str, Any]]
    notes: list[str]
    bytes: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_kind(to: Path) -> str:
    name = to.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    return "folder"


def export_skills(lib: Any, names: list[str], *, all_skills: bool, to: str | Path) -> ExportReport:
    """Write the named skills (or every skill, by name: the one a lookup by name finds) to a
    folder, a .zip or a .tar.gz, with manifest.json."""
    to = Path(to).expanduser()
    kind = target_kind(to)
    if not names and not all_skills:
        raise ValidationError("no skills named", fix="pass skill names or ids, or --all")
    if kind == "folder":
        if to.exists() and (not to.is_dir() or any(to.iterdir())):
            raise ConflictError(f"{to} exists and is not an empty folder",
                                fix="export into a new or empty folder, or to a .zip / .tar.gz file")
    elif to.exists() or to.is_symlink():
        raise ConflictError(f"{to} exists", fix="remove it or choose another file name")
    parent = to.parent if to.parent != Path("") else Path(".")
    if not parent.is_dir():
        raise NotFoundError(f"the folder {parent} does not exist", fix="create it first, or export elsewhere")
    target = to.resolve()
    for base in [lib.config.home, *(r.path for r in lib.roots)]:
        b = Path(base).resolve()
        if target == b or b in target.parents:
            # the copies would be indexed as skills of their own
            raise ValidationError(f"{to} is inside the library ({b})", fix="export to a folder outside it")
    notes: list[str] = []
    records = []
    if all_skills:
        seen_names: dict[str, int] = {}
        for r in lib.list(include_inactive=True):
            seen_names[r.name] = seen_names.get(r.name, 0) + 1
        for name, count in seen_names.items():
            rec = lib.get(name)
            records.append(rec)
            if count > 1:
                notes.append(f"{name}: exported {rec.id}; {count - 1} other skill(s) of that name left out "
                             "(export them by id into another archive)")
    else:
        for n in names:
            records.append(lib.get(n))
    entries: list[dict[str, Any]] = []
    payload: list[tuple[str, SkillFiles]] = []
    used: dict[str, str] = {}
    total = 0
    for rec in records:
        if not skillmod.NAME_RE.match(rec.name) or len(rec.name) > skillmod.MAX_NAME:
            notes.append(f"skipped {rec.id}: its name {rec.name!r} cannot be a folder name (fix the name first)")
            continue
        if rec.name in used:
            if used[rec.name] != rec.id:
                notes.append(f"skipped {rec.id}: {used[rec.name]} has the same name and is exported already")
            continue
        used[rec.name] = rec.id
        sf = skill_files(rec.folder, Path(rec.path).name)
        notes += [f"{rec.name}: {n}" for n in sf.notes]
        total += sf.size
        files = {rel: {"sha256": sha256(data), "bytes": len(data)} for rel, data in sf.files.items()}
        entries.append({"name": rec.name, "id": rec.id, "version": rec.version, "folder": rec.name,
                        "files": files})
        payload.append((rec.name, sf))
    if not payload:
        raise ValidationError("nothing to export", fix="; ".join(notes[:3]) or "pass skill names or ids")
    if total > unpack.MAX_TOTAL_BYTES:
        raise ValidationError(f"the skills hold {total:,} bytes; an import accepts at most "
                              f"{unpack.MAX_TOTAL_BYTES:,}",
                              fix="export fewer skills per archive")
    from .version import __version__

    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "skillshelf_version": __version__,
                "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "skills": entries}
    mtext = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    members: list[tuple[str, bytes, bool]] = [(MANIFEST, mtext, False)]
    for name, sf in payload:
        for rel, data in sf.files.items():
            members.append((f"{name}/{rel}", data, rel in sf.executable))
    try:
        if kind == "folder":
            _write_folder(to, members)
        elif kind == "zip":
            _write_zip(to, members)
        else:
            _write_targz(to, members)
    except OSError as exc:
        raise WriteError(f"cannot write {to}: {exc.strerror or exc}; nothing was exported",
                         fix=f"check that {parent} is writable and has space") from None
    summary = [{"name": e["name"], "id": e["id"], "version": e["version"], "files": len(e["files"])}
               for e in entries]
    return ExportReport(str(to), kind, summary, notes, total)


def _write_folder(to: Path, members: list[tuple[str, bytes, bool]]) -> None:
    parent = to.parent if str(to.parent) else Path(".")
    tmp = _mkdtemp(".tmp-export-", parent)
    try:
        for rel, data, exe in members:
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            if exe:
                os.chmod(p, 0o755)
        if to.exists():
            to.rmdir()      # checked empty
        os.rename(tmp, to)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _temp_file(to: Path) -> tuple[int, str]:
    parent = to.parent if str(to.parent) else Path(".")
    return tempfile.mkstemp(prefix=".tmp-export-", dir=parent)


def _write_zip(to: Path, members: list[tuple[str, bytes, bool]]) -> None:
    import zipfile

    fd, tmp = _temp_file(to)
    stamp = time.localtime()[:6]
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
            for rel, data, exe in members:
                zi = zipfile.ZipInfo(rel, date_time=stamp)
                zi.compress_type = zipfile.ZIP_DEFLATED
                zi.create_system = 3
                zi.external_attr = ((0o100755 if exe else 0o100644) & 0xFFFF) << 16
                zf.writestr(zi, data)
        os.replace(tmp, to)
    except BaseException:
        with _quiet():
            os.unlink(tmp)
        raise


def _write_targz(to: Path, members: list[tuple[str, bytes, bool]]) -> None:
    import tarfile

    fd, tmp = _temp_file(to)
    now = int(time.time())
    try:
        with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
            for rel, data, exe in members:
                ti = tarfile.TarInfo(rel)
                ti.size = len(data)
                ti.mode = 0o755 if exe else 0o644
                ti.mtime = now
                ti.type = tarfile.REGTYPE
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                tf.addfile(ti, io.BytesIO(data))
        os.replace(tmp, to)
    except BaseException:
        with _quiet():
            os.unlink(tmp)
        raise


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return isinstance(exc[1], OSError)


# --- import --------------------------------------------------------------------------------------

@dataclass
class Candidate:
    folder: str                       # the skill's folder in the source ("" for the top)
    name: str                         # the folder name the skill gets
    files: dict[str, bytes]
    executable: set[str]
    skill_md: str = "SKILL.md"
    skill: skillmod.Skill | None = None
    status: str = ""                  # new | unchanged | clash | replace | invalid | refused | root | error
    message: str = ""
    existing: str | None = None       # the id it clashes with or replaces
    version: int | None = None        # the version written (replace)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "folder": self.folder or ".", "status": self.status, "message": self.message,
                "existing": self.existing, "files": len(self.files), "version": self.version}


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

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "kind": self.kind, "mode": self.mode, "dry_run": self.dry_run,
                "ok": self.ok, "counts": self.counts, "root": self.root,
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
    parsed = skillmod.parse(c.files[c.skill_md], folder_name=c.name)
    c.skill = parsed.skill
    errors = parsed.errors()
    if errors:
        e = errors[0]
        c.status, c.message = "invalid", f"{c.skill_md}: {e.message} ({e.rule})"
    elif not skillmod.NAME_RE.match(c.name) or len(c.name) > skillmod.MAX_NAME:
        c.status, c.message = "invalid", f"the folder name {c.name!r} is not a valid skill name"


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
    if manifest is not None:
        present = {c.folder for c in cands}
        for folder in sorted(set(manifest) - present):
            notes.append(f"{MANIFEST} lists {folder}, which the source does not hold")
    report = ImportReport(str(src.path), src.kind, mode, dry_run, cands, notes)
    lib._maybe_sync()   # compare with the files as they are now (an editor may have added one)
    if mode == "root":
        return _as_root(lib, src, report)
    _plan_copies(lib, cands, replace)
    if dry_run:
        return report
    _apply_copies(lib, src, cands)
    if any(c.status in ("new", "replace") for c in cands):
        report.notes += [f"index: {n}" for n in lib.sync().notes]
    return report


def _rows(lib: Any, name: str) -> list[Any]:
    return lib._rows_by_name(name)


def _plan_copies(lib: Any, cands: list[Candidate], replace: bool) -> None:
    taken: dict[str, str] = {}
    ws = lib.config.workspace
    for c in cands:
        if c.status:
            continue
        if c.name in taken:
            c.status, c.message = "clash", f"{taken[c.name] or '.'} in the same source has this name: skipped"
            continue
        taken[c.name] = c.folder
        rows = _rows(lib, c.name)
        if not rows:
            if (ws / c.name).exists():
                c.status, c.message = "clash", (f"{ws / c.name} exists but holds no skill named {c.name}: "
                                                "move it aside, then import again")
            else:
                c.status = "new"
            continue
        rec = lib.get(rows[0]["id"])
        c.existing = rec.id
        try:
            same = _existing_files(rec) == c.files
        except (SkillshelfError, OSError):
            same = False
        if same:
            c.status, c.message = "unchanged", f"already in the library as {rec.id}"
            continue
        if not replace:
            c.status, c.message = "clash", (f"{rec.id} has this name: skipped (pass --replace to make the "
                                            "imported text a new version of it)")
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
            try:
                staged = _stage(home, c.files, c.executable)
                with locked(home, "skill:" + c.name):
                    dest = ws / c.name
                    if dest.exists():
                        shutil.rmtree(staged, ignore_errors=True)
                        c.status, c.message = "clash", f"{dest} appeared while importing: skipped"
                        continue
                    os.rename(staged, dest)
            except OSError as exc:
                c.status, c.message = "error", f"cannot write {ws / c.name}: {exc.strerror or exc}"
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
            folder = Path(res.path).parent
            for rel, data in c.files.items():
                if rel == c.skill_md or (folder / rel).exists():
                    continue
                atomic_write(folder / rel, data)
                if rel in c.executable:
                    os.chmod(folder / rel, 0o755)
            c.message = f"{res.name} is now v{res.version} (FIX; the old text stays in its history)"
    staging = home / ".import-staging"
    with _quiet():
        staging.rmdir()


def _register_root(lib: Any, folder: Path) -> None:
    """Save ``folder`` as a root (config.toml) and use it in this library object too, so the
    sync that follows indexes it."""
    from .sources import make_roots

    lib.add_root(folder)
    others = [r.path for r in lib.roots if r.kind == "other"]
    if all(p.resolve() != folder.resolve() for p in others):
        others.append(folder.resolve())
    lib.roots = make_roots(lib.config.workspace, others, include_clients=lib.config.client_roots)


def _as_root(lib: Any, src: Source, report: ImportReport) -> ImportReport:
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
            _register_root(lib, folder)
            report.notes += [f"index: {n}" for n in lib.sync().notes]
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
                p = tmp / c.folder / rel if c.folder else tmp / c.name / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
                if rel in c.executable:
                    os.chmod(p, 0o755)
        os.rename(tmp, dest)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise WriteError(f"cannot unpack into {dest}: {exc.strerror or exc}; nothing was imported",
                         fix=f"check that {base} is writable and has space") from None
    _register_root(lib, dest)
    report.notes += [f"index: {n}" for n in lib.sync().notes]
    return report
