"""Reading skill folders and archives into memory, safely.

Archives and folders come from strangers. :func:`read_source` reads a folder, a ``.zip``,
a ``.tar.gz`` or a ``.tar`` whole into memory under caps (members, bytes per file, bytes in
all, the archive's own size; a ``.tar.gz`` is capped while it is being decompressed) and
refuses it as a whole, naming the member, when a member climbs out of its folder (``../``),
has an absolute path or a backslash, is a symbolic or hard link, a device, a FIFO, encrypted
or otherwise not a plain file or folder. Nothing is extracted by the archive libraries: the
caller writes each file's bytes under a path built from a checked name.
:func:`skill_files` reads one skill folder the same bounded way (export, copies).
"""

from __future__ import annotations

import io
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NotFoundError, SkillshelfError, ValidationError
from ..files import MAX_RESOURCE_BYTES, MAX_SKILL_BYTES, FileRefused, read_bounded

# Caps on what is read (module constants: tests lower them).
MAX_MEMBERS = 20_000                 # files and folders in one archive
MAX_FILE_BYTES = MAX_RESOURCE_BYTES  # one file (a SKILL.md: MAX_SKILL_BYTES)
MAX_TOTAL_BYTES = 300_000_000        # all files, unpacked
MAX_ARCHIVE_BYTES = 300_000_000      # the archive file itself
MAX_DEPTH = 32
SKILL_FILES = ("SKILL.md", "skill.md")
_SKIP_DIRS = None   # sources.SKIP_DIRS, loaded on first use


class ArchiveRefused(ValidationError):
    """An archive (or folder) that is unsafe or too big to import; nothing was written."""

    def __init__(self, message: str, *, fix: str | None = None):
        super().__init__(message, fix=fix or "the archive is refused as a whole; nothing was written")


def _skip_dirs() -> set[str]:
    global _SKIP_DIRS
    if _SKIP_DIRS is None:
        from ..catalog.roots import SKIP_DIRS

        _SKIP_DIRS = SKIP_DIRS
    return _SKIP_DIRS


# --- a skill's files ---------------------------------------------------------------------------

@dataclass
class SkillFiles:
    """A skill folder read into memory: relative path → bytes, the executable ones, and
    what was left out and why."""

    files: dict[str, bytes] = field(default_factory=dict)
    executable: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.files.values())


def skill_files(folder: Path, skill_md: str = "SKILL.md", *, limit: int = 5000) -> SkillFiles:
    """``SKILL.md`` and the skill's other files: regular files inside the folder (a link is
    followed only to a file inside it), hidden files, nested skills and dependency or VCS
    folders left out, each file at most ``MAX_FILE_BYTES``."""
    out = SkillFiles()
    base = Path(folder)
    base_r = base.resolve()
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        rel_dir = here.relative_to(base)
        keep = []
        for d in sorted(dirnames):
            if d.startswith(".") or d in _skip_dirs():
                continue
            if any((here / d / n).exists() for n in SKILL_FILES):
                continue     # a nested skill is a skill of its own
            if (here / d).is_symlink():
                out.notes.append(f"left out {(rel_dir / d).as_posix()}/: a linked folder")
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rel = (rel_dir / f).as_posix()
            if f.startswith(".") and rel != skill_md:
                continue
            p = here / f
            try:
                if p.is_symlink():
                    target = p.resolve()
                    if base_r not in target.parents:
                        out.notes.append(f"left out {rel}: a link to outside the skill folder")
                        continue
                data = read_bounded(p, MAX_SKILL_BYTES if rel == skill_md else MAX_FILE_BYTES)
                mode = os.stat(p).st_mode
            except FileRefused as exc:
                if rel == skill_md:
                    raise
                out.notes.append(f"left out {rel}: {exc.message}")
                continue
            except OSError as exc:
                out.notes.append(f"left out {rel}: {exc.strerror or exc}")
                continue
            if len(out.files) >= limit:
                out.notes.append(f"stopped after {limit} files")
                return out
            out.files[rel] = data
            if mode & 0o111:
                out.executable.add(rel)
    return out


# --- reading an import source -------------------------------------------------------------------------

@dataclass
class Source:
    path: Path
    kind: str                               # folder | zip | tar
    files: dict[str, bytes]
    executable: set[str]
    root_name: str                          # the folder name of a skill at the top of the source
    notes: list[str] = field(default_factory=list)


_DRIVE = re.compile(r"^[A-Za-z]:")


def member_path(raw: str, archive: Path) -> str:
    """A member's name as a relative POSIX path ("" for the top folder), or ArchiveRefused."""
    shown = raw if len(raw) <= 200 else raw[:200] + "…"
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise ArchiveRefused(f"{archive} has a member whose name holds control characters: {shown!r}")
    if "\\" in raw:
        raise ArchiveRefused(f"{archive} has a member name with a backslash: {shown!r} (it could climb out of "
                             "its folder on Windows)")
    if raw.startswith("/") or _DRIVE.match(raw):
        raise ArchiveRefused(f"{archive} has a member with an absolute path: {shown!r}")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveRefused(f"{archive} has a member that climbs out of its folder (zip-slip): {shown!r}")
    if len(parts) > MAX_DEPTH or any(len(p.encode("utf-8", "surrogatepass")) > 255 for p in parts):
        raise ArchiveRefused(f"{archive} has a member path too deep or too long: {shown!r}")
    return "/".join(parts)


class _Caps:
    def __init__(self, archive: Path):
        self.archive = archive
        self.members = 0
        self.total = 0

    def member(self) -> None:
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise ArchiveRefused(f"{self.archive} has more than {MAX_MEMBERS:,} members")

    def size(self, rel: str, n: int) -> None:
        cap = self.cap_for(rel)
        if n > cap:
            raise ArchiveRefused(f"{self.archive}: {rel} is {n:,} bytes; the limit per file is {cap:,}")
        self.total += n
        if self.total > MAX_TOTAL_BYTES:
            raise ArchiveRefused(f"{self.archive} unpacks to more than {MAX_TOTAL_BYTES:,} bytes")

    def cap_for(self, rel: str) -> int:
        return MAX_SKILL_BYTES if rel.rpartition("/")[2] in SKILL_FILES else MAX_FILE_BYTES


def stem(path: Path) -> str:
    """The archive's name without .zip / .tar.gz / .tgz / .tar."""
    name = path.name
    for suf in (".tar.gz", ".tgz", ".zip", ".tar"):
        if name.lower().endswith(suf):
            return name[: -len(suf)]
    return path.stem


def read_source(path: str | Path) -> Source:
    """A folder, .zip, .tar.gz or .tar read into memory, checked member by member."""
    path = Path(path).expanduser()
    if not path.exists():
        raise NotFoundError(f"{path} does not exist", fix="pass a folder of skills, a .zip or a .tar.gz")
    if path.is_dir():
        return _read_folder(path)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ArchiveRefused(f"{path} is not a regular file or a folder",
                             fix="pass a folder of skills, a .zip or a .tar.gz")
    if st.st_size > MAX_ARCHIVE_BYTES:
        raise ArchiveRefused(f"{path} is {st.st_size:,} bytes; the limit is {MAX_ARCHIVE_BYTES:,}")
    with open(path, "rb") as f:
        head = f.read(512)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _read_zip(path)
    if head.startswith(b"\x1f\x8b") or head[257:262] == b"ustar":
        return _read_tar(path, gz=head.startswith(b"\x1f\x8b"))
    raise ValidationError(f"{path} is neither a zip nor a tar archive",
                          fix="pass a folder of skills, a .zip or a .tar.gz (as `skillshelf export` writes)")


def _read_folder(path: Path) -> Source:
    caps = _Caps(path)
    src = Source(path, "folder", {}, set(), path.resolve().name)
    for dirpath, dirnames, filenames in os.walk(path):
        here = Path(dirpath)
        rel_dir = here.relative_to(path)
        keep = []
        for d in sorted(dirnames):
            if d.startswith(".") or d in _skip_dirs():
                continue
            if (here / d).is_symlink():
                src.notes.append(f"left out {(rel_dir / d).as_posix()}/: a linked folder")
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            if f.startswith("."):
                continue
            rel = (rel_dir / f).as_posix()
            p = here / f
            caps.member()
            if p.is_symlink():
                src.notes.append(f"left out {rel}: a link")
                continue
            try:
                data = read_bounded(p, caps.cap_for(rel))
                mode = os.stat(p).st_mode
            except FileRefused as exc:
                src.notes.append(f"left out {rel}: {exc.message}")
                continue
            except OSError as exc:
                src.notes.append(f"left out {rel}: {exc.strerror or exc}")
                continue
            caps.size(rel, len(data))
            src.files[rel] = data
            if mode & 0o111:
                src.executable.add(rel)
    return src


def _read_zip(path: Path) -> Source:
    import zipfile
    import zlib

    src = Source(path, "zip", {}, set(), stem(path))
    caps = _Caps(path)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ValidationError(f"{path} is not a readable zip file ({exc})",
                              fix="export it again, or check that the download finished") from None
    with zf:
        for info in zf.infolist():
            caps.member()
            rel = member_path(info.filename, path)
            mode = (info.external_attr >> 16) & 0xFFFF
            kind = stat.S_IFMT(mode) if info.create_system == 3 else 0
            if kind == stat.S_IFLNK:
                raise ArchiveRefused(f"{path} holds a symbolic link: {info.filename!r}",
                                     fix="archives with links are refused as a whole; nothing was written")
            if info.is_dir() or kind == stat.S_IFDIR:
                continue
            if kind not in (0, stat.S_IFREG):
                raise ArchiveRefused(f"{path} holds a special file (device, FIFO or socket): {info.filename!r}")
            if info.flag_bits & 0x1:
                raise ArchiveRefused(f"{path} holds an encrypted member: {info.filename!r}",
                                     fix="export it again without a password")
            if not rel:
                raise ArchiveRefused(f"{path} has a member with an empty name")
            if rel in src.files:
                raise ArchiveRefused(f"{path} holds {rel} twice")
            caps.size(rel, info.file_size)
            cap = caps.cap_for(rel)
            try:
                with zf.open(info) as f:
                    data = f.read(cap + 1)
            except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, zlib.error, ValueError) as exc:
                raise ValidationError(f"{path}: cannot read {rel} ({exc})",
                                      fix="the archive is damaged: export it again") from None
            if len(data) != info.file_size:
                raise ArchiveRefused(f"{path}: {rel} declares {info.file_size:,} bytes but holds "
                                     f"{'more' if len(data) > info.file_size else 'fewer'}")
            src.files[rel] = data
            if mode & 0o111 and kind == stat.S_IFREG:
                src.executable.add(rel)
    return src


class _CappedReader(io.RawIOBase):
    """A stream that refuses to yield more than ``limit`` bytes (a gzip bomb is stopped
    while it is being decompressed, not after)."""

    def __init__(self, raw: Any, limit: int, archive: Path):
        self.raw, self.limit, self.read_so_far, self.archive = raw, limit, 0, archive

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = 1 << 20
        data = self.raw.read(n)
        self.read_so_far += len(data)
        if self.read_so_far > self.limit:
            raise ArchiveRefused(f"{self.archive} unpacks to more than {MAX_TOTAL_BYTES:,} bytes")
        return data

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def _read_tar(path: Path, *, gz: bool) -> Source:
    import gzip
    import tarfile
    import zlib

    src = Source(path, "tar", {}, set(), stem(path))
    caps = _Caps(path)
    # headers and padding: 512 bytes per member and per 512-byte block at most doubles the data
    limit = 2 * MAX_TOTAL_BYTES + 1024 * (MAX_MEMBERS + 4)
    try:
        with open(path, "rb") as raw:
            stream: Any = gzip.GzipFile(fileobj=raw) if gz else raw
            capped = _CappedReader(stream, limit, path)
            with tarfile.open(fileobj=capped, mode="r|") as tf:
                for m in tf:
                    caps.member()
                    rel = member_path(m.name, path)
                    if m.issym():
                        raise ArchiveRefused(f"{path} holds a symbolic link: {m.name!r} → {m.linkname!r}",
                                             fix="archives with links are refused as a whole; nothing was written")
                    if m.islnk():
                        raise ArchiveRefused(f"{path} holds a hard link: {m.name!r} → {m.linkname!r}",
                                             fix="archives with links are refused as a whole; nothing was written")
                    if m.ischr() or m.isblk():
                        raise ArchiveRefused(f"{path} holds a device file: {m.name!r}")
                    if m.isfifo():
                        raise ArchiveRefused(f"{path} holds a FIFO: {m.name!r}")
                    if m.isdir():
                        continue
                    if not m.isreg() or m.issparse():
                        raise ArchiveRefused(f"{path} holds a member that is not a plain file: {m.name!r}")
                    if not rel:
                        raise ArchiveRefused(f"{path} has a member with an empty name")
                    if rel in src.files:
                        raise ArchiveRefused(f"{path} holds {rel} twice")
                    caps.size(rel, m.size)
                    f = tf.extractfile(m)
                    data = f.read(m.size + 1) if f is not None else b""
                    if len(data) != m.size:
                        raise ArchiveRefused(f"{path}: {rel} declares {m.size:,} bytes but holds "
                                             f"{'more' if len(data) > m.size else 'fewer'}")
                    src.files[rel] = data
                    if m.mode & 0o111:
                        src.executable.add(rel)
    except SkillshelfError:
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise ValidationError(f"{path} is not a readable tar archive ({exc})",
                              fix="export it again, or check that the download finished") from None
    return src
