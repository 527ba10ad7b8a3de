"""Export of skills: a folder, a ``.zip`` or a ``.tar.gz`` holding one folder per skill (its
``SKILL.md`` and its other files, byte for byte) and a ``manifest.json`` with each skill's
name, id, version, folder and the sha256 of every file.

Every skill is kept. A skill's folder in the archive is its own folder name when that is a
safe folder name on every system and not taken by another skill of the archive; otherwise
(two skills of one name from different roots, a hidden folder, a name no folder can have) it
is ``<a folder named from its id>/<its folder name>``. What is left out (a file that cannot be
read, a skill gone since the last sync) is listed in the report with the reason.
:mod:`skillshelf.onboarding.importer` reads such an archive back.
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
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..access import AGENT
from ..errors import ConflictError, HeldError, NotFoundError, ValidationError, WriteError
from ..files import FileRefused
from . import unpack
from .unpack import SkillFiles, skill_files

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "ExportReport",
    "export_skills",
    "folder_for",
    "safe_folder_name",
    "sha256",
    "target_kind",
]

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


# --- folder names ----------------------------------------------------------------------------------
# A skill's folder in an archive, and in the workspace it is imported into, is its own folder
# name when that is safe and free; otherwise a folder of its own, named from the skill's id,
# holds it (``<id-folder>/<folder name>``): two skills of one name, or a name no folder can
# have, never cost a skill.

_SAFE_PART = re.compile(r"^\w[\w.\- ]*$")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
MAX_PART_BYTES = 120


def safe_folder_name(part: str) -> bool:
    """A folder name that is the same plain folder on every system: letters, digits, '_',
    '-', '.' and spaces, not hidden, no trailing dot or space, no device name, not a folder
    the library skips (node_modules, build, ...), at most ``MAX_PART_BYTES`` bytes."""
    from ..catalog.roots import SKIP_DIRS

    return (bool(_SAFE_PART.match(part)) and not part.endswith((".", " ")) and part not in SKIP_DIRS
            and part.split(".")[0].lower() not in _RESERVED and part != MANIFEST
            and len(part.encode("utf-8", "surrogatepass")) <= MAX_PART_BYTES)


def _slug(text: str, keep: int = 48) -> str:
    """``text`` as lower-case words joined by '-', at most ``keep`` characters. A longer one
    is cut in the middle, between words, and marked ``--``: it keeps the words it starts with
    (the collection) and, with more room, those it ends with (the skill's own folders)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(slug) <= keep:
        return slug
    words = slug.split("-")
    head = ""
    for w in words:
        if len(head) + len(w) + bool(head) > (keep - 2) * 2 // 5:
            break
        head += "-" * bool(head) + w
    head = head or words[0][:(keep - 2) * 2 // 5]
    tail = ""
    for w in reversed(words):
        if len(tail) + len(w) + bool(tail) > keep - 2 - len(head):
            break
        tail = w + "-" * bool(tail) + tail
    tail = tail or words[-1][-(keep - 2 - len(head)):]
    return f"{head}--{tail}"


def folder_for(key: str, folder_name: str, skill_name: str, used: set[str]) -> str:
    """The archive (or workspace) folder of one skill: ``folder_name`` when it is safe and not
    taken (``used``: top-level folders taken so far, lowercased, updated here), else
    ``<slug of key>-<hash of key>/<folder name>``. Relative, at most two parts, each safe."""
    if safe_folder_name(folder_name) and folder_name.lower() not in used:
        used.add(folder_name.lower())
        return folder_name
    inner = folder_name if safe_folder_name(folder_name) else (_slug(skill_name, 64) or "skill")
    base = f"{_slug(key.rpartition('/')[0] or key) or 'skill'}-{sha256(key.encode('utf-8', 'surrogatepass'))[:8]}"
    outer, n = base, 2
    while outer.lower() in used:
        outer, n = f"{base}-{n}", n + 1
    used.add(outer.lower())
    return f"{outer}/{inner}"


# --- export --------------------------------------------------------------------------------------

@dataclass
class ExportReport:
    """What an export wrote: each skill (name, id, version, files, its folder in the archive),
    each skill left out with the reason, each held skill left out (or, with ``include_held``,
    written and marked held in the manifest), notes, and the bytes written."""

    target: str
    kind: str                    # folder | zip | tar.gz
    skills: list[dict[str, Any]]
    notes: list[str]
    bytes: int
    skipped: list[dict[str, str]] = field(default_factory=list)   # id, name, reason, detail
    held: list[dict[str, str]] = field(default_factory=list)      # id, name, why (left out unless included)

    @property
    def counts(self) -> dict[str, int]:
        """exported, skipped, and how many exported skills are in a folder of their own
        (their folder name was taken or cannot be a folder name)."""
        return {"exported": len(self.skills), "skipped": len(self.skipped),
                "own_folder": sum(1 for s in self.skills if "/" in s["folder"])}

    @property
    def reasons(self) -> dict[str, int]:
        """Why skills were left out: each reason and how many."""
        return dict(Counter(s["reason"] for s in self.skipped).most_common())

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"counts": self.counts, "reasons": self.reasons}


def target_kind(to: Path) -> str:
    name = to.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    return "folder"


def export_skills(lib: Any, names: list[str], *, all_skills: bool, to: str | Path,
                  include_held: bool = False) -> ExportReport:
    """Write the named skills (or every skill) to a folder, a .zip or a .tar.gz, with
    manifest.json. Every skill is kept: one whose folder name is taken by another skill (two
    skills of one name in different roots) or cannot be a folder name is written into a folder
    of its own named from its id. A skill whose files cannot be read is left out, and the
    report says which and why.

    A skill held back from agents (changed since its collection was pinned, or blocked by the
    audit) is left out unless ``include_held``: an archive is read elsewhere, where no pin holds
    it, and its unreviewed text would be served there. Included, the manifest marks it
    (``held``) and an import says so. The gate decides it, as it does for an agent's read."""
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
    records = _records(lib, names, all_skills)
    held: list[dict[str, str]] = []
    entries: list[dict[str, Any]] = []
    payload: list[tuple[str, SkillFiles]] = []
    skipped: list[dict[str, str]] = []
    used: set[str] = set()
    total = 0
    for rec in records:
        skill_md = Path(rec.path).name
        try:
            sf = skill_files(rec.folder, skill_md)
        except FileRefused as exc:
            skipped.append({"id": rec.id, "name": rec.name, "reason": "its SKILL.md cannot be read",
                            "detail": exc.message})
            continue
        except OSError as exc:
            skipped.append({"id": rec.id, "name": rec.name, "reason": "its SKILL.md cannot be read",
                            "detail": str(exc.strerror or exc)})
            continue
        if skill_md not in sf.files:
            skipped.append({"id": rec.id, "name": rec.name, "reason": "its file is gone since the last sync",
                            "detail": f"{rec.path} is missing: run `skillshelf sync`"})
            continue
        why = lib.gate.refusal(AGENT, rec) or _bytes_refused(lib, rec, sf)
        if why is not None:
            # the reason alone (the review step it names is this library's)
            why = lib.supply.hidden().get(rec.id) or why.split(" A person must review it first:")[0]
            held.append({"id": rec.id, "name": rec.name, "why": why})
            if not include_held:
                continue
        folder = folder_for(rec.id, rec.folder.name, rec.name, used)
        notes += [f"{rec.name}: {n}" for n in sf.notes]
        total += sf.size
        files = {rel: {"sha256": sha256(data), "bytes": len(data)} for rel, data in sf.files.items()}
        entries.append({"name": rec.name, "id": rec.id, "version": rec.version, "folder": folder,
                        "files": files} | ({"held": why} if why is not None else {}))
        payload.append((folder, sf))
    own = [e for e in entries if "/" in e["folder"]]
    if own:
        one = len(own) == 1
        notes.append(f"{len(own)} skill{'' if one else 's'} whose folder name was taken by another skill or cannot "
                     f"be a folder name {'is' if one else 'are each'} in a folder of {'its' if one else 'their'} own "
                     f"named from the id (e.g. {own[0]['folder']})")
    if not payload:
        why = [f"{x['id']}: {x['detail']}" for x in skipped[:3]] + [f"{x['name']} is held back from agents"
                                                                    for x in held[:3]]
        raise ValidationError("nothing to export: " + "; ".join(why),
                              fix=(f"`skillshelf trust {held[0]['name']}` reviews a held skill, or pass --include-held"
                                   if held and not skipped else "run `skillshelf sync`, or pass other skill names or ids"))
    if total > unpack.MAX_TOTAL_BYTES:
        raise ValidationError(f"the skills hold {total:,} bytes; an import accepts at most "
                              f"{unpack.MAX_TOTAL_BYTES:,}",
                              fix="export fewer skills per archive")
    from ..version import __version__

    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "skillshelf_version": __version__,
                "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "skills": entries}
    mtext = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    members: list[tuple[str, bytes, bool]] = [(MANIFEST, mtext, False)]
    for folder, sf in payload:
        for rel, data in sf.files.items():
            members.append((f"{folder}/{rel}", data, rel in sf.executable))
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
    summary = [{"name": e["name"], "id": e["id"], "version": e["version"], "files": len(e["files"]),
                "folder": e["folder"], "held": "held" in e} for e in entries]
    return ExportReport(str(to), kind, summary, notes, total, skipped, held)


def _bytes_refused(lib: Any, rec: Any, sf: SkillFiles) -> str | None:
    """Why the files about to be written may not leave as an agent would get them (None: they
    may): each one's bytes, as read for the export, against the pin (``ReadGate.check_file``; a
    difference is held there and then)."""
    for rel, data in sf.files.items():
        try:
            lib.gate.check_file(AGENT, rec, rel, data)
        except HeldError as exc:
            return exc.message
    return None


def _records(lib: Any, names: list[str], all_skills: bool) -> list[Any]:
    """The skills to export, each once. ``all_skills``: every skill the library holds (the
    deprecated ones too), and of several with one name the one a lookup by name finds first,
    so that it keeps the plain folder."""
    if not all_skills:
        out, seen = [], set()
        for n in names:
            rec = lib.get(n, reader=lib.PERSON)   # held ones are found, then left out (or marked) above
            if rec.id not in seen:
                seen.add(rec.id)
                out.append(rec)
        return out
    recs = list(lib.list(include_inactive=True))
    count = Counter(r.name for r in recs)
    first = {name: lib._rows_by_name(name)[0]["id"] for name, n in count.items() if n > 1}
    return sorted(recs, key=lambda r: (r.name, first.get(r.name, r.id) != r.id, r.id))


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
