"""``skillshelf.lock``: what each source was fetched at and every file it brought.

Per source: its label, what was asked (``source``, ``ref``, ``path``), the URL fetched, the exact
commit (or the archive's sha256); per skill its folder; per file ``sha256:<hex>`` and size -- the
files and digests the Skills Extension's ``skills/list`` serves for that skill (its SKILL.md, then
the other files a reader may open, nested skills' included: no hidden files, no dependency or VCS
folders, none over ``files.MAX_RESOURCE_BYTES``), so a host can check what it loads.

A pinned source (``pinned = true``) carries what its owner reviewed: a skill whose pin differs
from its locked files has ``reviewed``, the pinned files' ``sha256:<hex>`` and size (an empty list:
a skill new since the pin, never reviewed). ``sources restore`` pins at that baseline, so a skill
held on one machine is held on the other. A lock without ``reviewed`` still loads (nothing held).
A lock that carries ``reviewed`` is ``lock-version = 2``, so an older skillshelf, which would
restore it as if nothing were held, refuses it instead; a lock without it stays version 1.

The file is TOML written in a fixed order (sources by label, skills by path, files by path, one
file a line), so a change to a collection is a readable diff. :func:`check` compares the files on
disk with it."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..catalog.resources import skill_files as served_files
from ..catalog.roots import Root, discover
from ..errors import ValidationError
from ..files import MAX_RESOURCE_BYTES, MAX_SKILL_BYTES, FileRefused, read_bounded, write_file
from ..net import redact_url
from .fetch import clean_subdir

LOCK_NAME = "skillshelf.lock"
LOCK_VERSION = 2          # the newest version written: 2 when a skill carries ``reviewed``, else 1
LOCK_VERSIONS = (1, 2)    # the versions this skillshelf reads
MAX_LOCK_BYTES = 512_000_000
LABEL_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")     # a source's label: a folder name under sources/
RESERVED = {"workspace", "project", "user"}                # the labels of the library's own roots
KINDS = ("git", "archive", "folder")
# git: a commit id (SHA-1 or SHA-256); an archive or a folder: the sha256 of its content
COMMIT_RE = {"git": re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$"), "archive": re.compile(r"^[0-9a-f]{64}$"),
             "folder": re.compile(r"^[0-9a-f]{64}$")}


@dataclass
class FileEntry:
    path: str
    digest: str          # sha256:<hex>
    size: int


@dataclass
class SkillEntry:
    path: str                                    # the skill folder, relative to the source ('.' at its top)
    files: list[FileEntry] = field(default_factory=list)
    # a pinned source: the files its owner reviewed, where they differ from ``files`` (the pin's
    # own list; [] = never reviewed); None = the locked files are the reviewed ones
    reviewed: list[FileEntry] | None = None

    def digests(self) -> dict[str, tuple[str, int]]:
        return {f.path: (f.digest, f.size) for f in self.files}


@dataclass
class SourceEntry:
    label: str
    source: str                                  # what was typed
    kind: str                                    # git | archive | folder
    url: str
    ref: str = ""                                # the ref asked ("" = the default branch)
    path: str = ""                               # the folder inside the source that holds the skills
    commit: str = ""                             # git: the commit; archive / folder: sha256 of the content
    pinned: bool = False
    submodules: bool = False                     # the submodules' files were fetched too
    updated: str = ""
    skills: list[SkillEntry] = field(default_factory=list)

    def by_path(self) -> dict[str, SkillEntry]:
        return {s.path: s for s in self.skills}

    @property
    def short(self) -> str:
        return self.commit[:12]

    def summary(self) -> dict[str, Any]:
        """The entry as it is shown (a user or password written into its URL masked: ``redact_url``)."""
        return {"label": self.label, "source": redact_url(self.source), "kind": self.kind, "url": redact_url(self.url),
                "ref": self.ref,
                "path": self.path, "commit": self.commit, "pinned": self.pinned, "submodules": self.submodules,
                "updated": self.updated,
                "skills": len(self.skills)}


def _q(s: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's; DEL is escaped too)."""
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def version(sources: list[SourceEntry]) -> int:
    """The lock-version ``sources`` are written as: 2 when a skill carries ``reviewed``."""
    return LOCK_VERSION if any(sk.reviewed is not None for s in sources for sk in s.skills) else 1


def render(sources: list[SourceEntry]) -> str:
    out = ["# skillshelf.lock: the sources of this library, each at an exact commit (or archive sha256),",
           "# and the sha256 and size of every file of every skill they brought. Written by skillshelf;",
           "# `skillshelf lock --check` compares the files on disk with it; `skillshelf sources restore` rebuilds",
           "# them on another machine.",
           f"lock-version = {version(sources)}", ""]
    for s in sorted(sources, key=lambda s: s.label):
        out += ["[[source]]", f"label = {_q(s.label)}", f"source = {_q(s.source)}", f"kind = {_q(s.kind)}",
                f"url = {_q(s.url)}", f"ref = {_q(s.ref)}", f"path = {_q(s.path)}", f"commit = {_q(s.commit)}",
                f"pinned = {'true' if s.pinned else 'false'}"]
        out += ["submodules = true"] if s.submodules else []
        out += [f"updated = {_q(s.updated)}", ""]
        for sk in sorted(s.skills, key=lambda k: k.path):
            out += ["[[source.skill]]", f"path = {_q(sk.path)}", "files = ["]
            out += [f"  {{ path = {_q(f.path)}, digest = {_q(f.digest)}, size = {f.size} }},"
                    for f in sorted(sk.files, key=lambda f: (f.path != "SKILL.md", f.path))]
            out += ["]"]
            if sk.reviewed is not None:
                out += ["reviewed = ["]
                out += [f"  {{ path = {_q(f.path)}, digest = {_q(f.digest)}, size = {f.size} }},"
                        for f in sorted(sk.reviewed, key=lambda f: (f.path.lower() != "skill.md", f.path))]
                out += ["]"]
            out += [""]
    return "\n".join(out)


def parse(text: str, where: str = LOCK_NAME) -> list[SourceEntry]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValidationError(f"{where} is not valid TOML: {exc}", fix="restore it from version control") from None
    except RecursionError:
        raise ValidationError(f"{where} is not a {LOCK_NAME}: its values are nested thousands deep",
                              fix="restore it from version control") from None
    if "lock-version" not in data or not isinstance(data.get("source", []), list):
        raise ValidationError(f"{where} is not a {LOCK_NAME}: it has no lock-version",
                              fix=f"pass the {LOCK_NAME} of a library with sources (it is in that library's home)")
    if data.get("lock-version") not in LOCK_VERSIONS or isinstance(data.get("lock-version"), bool):
        raise ValidationError(f"{where}: unknown lock-version {data.get('lock-version')!r}",
                              fix=f"this skillshelf reads lock-version {' and '.join(map(str, LOCK_VERSIONS))}; "
                                  "a newer skillshelf wrote it: upgrade skillshelf")
    out = []
    try:
        for s in data.get("source", []):
            skills = [SkillEntry(str(k["path"]), _files(k.get("files", [])),
                                 None if k.get("reviewed") is None else _files(k["reviewed"]))
                      for k in s.get("skill", [])]
            out.append(SourceEntry(label=str(s["label"]), source=str(s.get("source", "")), kind=str(s["kind"]),
                                   url=str(s["url"]), ref=str(s.get("ref", "")), path=str(s.get("path", "")),
                                   commit=str(s["commit"]), pinned=bool(s.get("pinned", False)),
                                   submodules=bool(s.get("submodules", False)),
                                   updated=str(s.get("updated", "")), skills=skills))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"{where}: a source entry is incomplete ({exc})",
                              fix="restore it from version control") from None
    for s in out:
        _check_entry(s, where)
    labels = [s.label for s in out]
    if len(set(labels)) != len(labels):
        raise ValidationError(f"{where} names a source twice", fix="keep one entry per label")
    return out


def _files(rows: Any) -> list[FileEntry]:
    if not isinstance(rows, list):
        raise TypeError("a list of files is not a list")
    return [FileEntry(str(f["path"]), str(f["digest"]), int(f["size"])) for f in rows]


def label_ok(label: str) -> bool:
    """Whether ``label`` may name a source (and so its folder under ``sources/``)."""
    return bool(LABEL_RE.match(label)) and label not in RESERVED


def _inside_path(rel: str) -> bool:
    """Whether ``rel`` is a relative POSIX path that stays inside its folder ('.' is the folder)."""
    if rel == ".":
        return True
    parts = rel.split("/")
    return not any(p in ("", ".", "..") for p in parts) and not any(ord(c) < 32 for c in rel)


def _check_entry(s: SourceEntry, where: str) -> None:
    """Every field of ``s`` that becomes a path or a git argument, checked (ValidationError)."""
    fix = "restore it from version control, or add the source again with `skillshelf sources add`"
    if not label_ok(s.label):
        raise ValidationError(f"{where}: {s.label[:80]!r} cannot be a source's label (1-64 characters of a-z, 0-9, "
                              "'.', '_' and '-', not workspace, project or user)", fix=fix)
    if s.kind not in KINDS:
        raise ValidationError(f"{where}: source {s.label} has an unknown kind {s.kind[:40]!r}",
                              fix=f"{fix} (a kind is one of {', '.join(KINDS)})")
    if not COMMIT_RE[s.kind].match(s.commit):
        want = "a commit id (40 or 64 hex digits)" if s.kind == "git" else "a sha256 (64 hex digits)"
        raise ValidationError(f"{where}: source {s.label} has commit {s.commit[:80]!r}, not {want}", fix=fix)
    try:
        clean: str | None = clean_subdir(s.path)
    except ValidationError:
        clean = None
    if clean != s.path:     # (skillshelf writes it clean: relative, no '.', '..' or slash at either end)
        raise ValidationError(f"{where}: source {s.label} has path {s.path[:80]!r}, not a folder inside the source",
                              fix=fix)
    for sk in s.skills:
        named = [*sk.files, *(sk.reviewed or [])]
        bad = next((p for p in (sk.path, *(_rel(sk.path, f.path) for f in named)) if not _inside_path(p)), None)
        if bad is not None or any(f.path == "." for f in named):
            raise ValidationError(f"{where}: source {s.label} names a file outside its folder: "
                                  f"{(bad or sk.path)[:120]!r}", fix=fix)


DAMAGED_FIX = (f"restore it from version control, or `skillshelf sources restore GOOD.lock` with a good {LOCK_NAME} "
               "(this one is kept aside, named)")


def read(path: Path) -> list[SourceEntry]:
    """A home's lock at ``path`` ([] when there is none); one that cannot be read names the way
    out (a restore from a good lock file sets it aside)."""
    if not path.exists():
        return []
    try:
        raw = read_bounded(path, MAX_LOCK_BYTES)
    except FileRefused as exc:
        raise ValidationError(f"{path}: {exc.message}", fix=DAMAGED_FIX) from None
    try:
        return parse(raw.decode("utf-8", "replace"), str(path))
    except ValidationError as exc:
        raise ValidationError(exc.message, fix=f"{exc.fix}; or `skillshelf sources restore GOOD.lock` with a good "
                                               f"{LOCK_NAME} (this one is kept aside, named)") from None


def write(path: Path, sources: list[SourceEntry]) -> None:
    """Write the lock atomically (a failure leaves the previous file)."""
    write_file(path, render(sources))


def documents(sources: list[SourceEntry]) -> dict[str, str]:
    """Each source's part of the lock as a document of its own (label -> TOML): what a team
    store keeps per source (``store.pg_sources``)."""
    return {s.label: render([s]) for s in sources}


def from_documents(docs: dict[str, str], where: str = "the team store") -> list[SourceEntry]:
    """The sources of ``documents``, by label."""
    out = []
    for label in sorted(docs):
        got = parse(docs[label], f"{where} (source {label})")
        if len(got) != 1 or got[0].label != label:
            raise ValidationError(f"{where}: the lock of source {label} names another source",
                                  fix="run `skillshelf sources update` from a curator's server to write it again")
        out.append(got[0])
    return out


# --- what is on disk -----------------------------------------------------------------------------

def _digest(p: Path) -> tuple[str, int] | None:
    try:
        data = read_bounded(p, MAX_RESOURCE_BYTES)
    except (OSError, FileRefused):
        return None
    return "sha256:" + hashlib.sha256(data).hexdigest(), len(data)


def skill_files(folder: Path, skill_md: str = "SKILL.md") -> list[str]:
    """The files of a skill as ``skills/list`` serves them (``catalog.resources.skill_files``, nested
    skills' files included): its SKILL.md, then the other servable files, by depth and path."""
    others, _ = served_files(folder, nested=True, skip=skill_md)
    return [skill_md, *others]


def _touched(changed: dict[str, str]) -> set[str]:
    """Every folder holding a changed path (each of its ancestors too; '.' for the top)."""
    out = {"."}
    for path in changed:
        parts = path.split("/")[:-1]
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


def scan(folder: Path, label: str, *, reuse: dict[str, SkillEntry] | None = None,
         changed: dict[str, str] | None = None) -> tuple[list[SkillEntry], list[str]]:
    """Every skill under the source folder with its files' digests; notes on what was left out.
    ``reuse`` (the entries before) and ``changed`` (the paths that changed since): a skill whose
    folder holds no changed path keeps its entry unread."""
    found, notes = discover(Root(folder, "other", label))
    touched = _touched(changed) if changed is not None else set()
    skills = []
    for f in found:
        kept = reuse.get(f.rel) if reuse is not None and changed is not None and f.rel not in touched else None
        if kept is not None:
            skills.append(kept)
            continue
        entry = SkillEntry(f.rel)
        for name in skill_files(f.folder, f.path.name):
            d = _digest(f.folder / name)
            if d is not None:
                entry.files.append(FileEntry(name, *d))
        skills.append(entry)
    return skills, notes


@dataclass
class Drift:
    label: str
    file: str            # path relative to the source folder
    problem: str         # changed | missing | added
    skill: str = ""      # the skill folder it belongs to, relative to the source ("" for the whole folder)

    def as_dict(self) -> dict[str, str]:
        return {"source": self.label, "file": self.file, "problem": self.problem, "skill": self.skill}


def _rel(skill: str, file: str) -> str:
    return file if skill == "." else f"{skill}/{file}"


def check(entry: SourceEntry, folder: Path) -> list[Drift]:
    """Every file of the source folder that differs from the lock: changed, missing or added
    (a skill or a file the lock does not name)."""
    if not folder.is_dir():
        return [Drift(entry.label, ".", "missing")]
    now, _ = scan(folder, entry.label)
    have = {s.path: s for s in now}
    out: list[Drift] = []
    for sk in entry.skills:
        cur = have.pop(sk.path, None)
        cur_files = cur.digests() if cur is not None else {}
        for f in sk.files:
            got = cur_files.pop(f.path, None)
            if got is None:
                out.append(Drift(entry.label, _rel(sk.path, f.path), "missing", sk.path))
            elif got != (f.digest, f.size):
                out.append(Drift(entry.label, _rel(sk.path, f.path), "changed", sk.path))
        out += [Drift(entry.label, _rel(sk.path, name), "added", sk.path) for name in sorted(cur_files)]
    for path, sk in sorted(have.items()):
        out += [Drift(entry.label, _rel(path, f.path), "added", path) for f in sk.files]
    return out


def unreadable(folder: Path, paths: list[str]) -> list[str]:
    """The skills among ``paths`` (skill folders of the source at ``folder``) whose SKILL.md is not a
    readable skill, each as ``PATH/SKILL.md: why`` (the library leaves them out)."""
    out = []
    for path in paths:
        rel = "SKILL.md" if path == "." else f"{path}/SKILL.md"
        try:
            parsed = skillmod.parse(read_bounded(folder.joinpath(*rel.split("/")), MAX_SKILL_BYTES))
        except (OSError, FileRefused) as exc:
            out.append(f"{rel}: {getattr(exc, 'strerror', None) or exc}")
            continue
        if parsed.skill is None:
            worst = next((f for f in parsed.findings if f.severity == "fatal"), None)
            out.append(f"{rel}: {worst.message if worst else 'not a readable skill'}")
    return out
