"""Writing into an agent client's files: a backup of a configuration file before it changes
(``<file>.bak-<stamp>``, never over another), the new text atomically (readable by its owner
only when it holds a secret), the teaching skill, and skill folders copied into the client's
skills folder (``pick --install``). What to write is planned in :mod:`skillshelf.onboarding.clients`.

Only the standard library is imported here at module level.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ValidationError

# (the plans are ``clients.ConfigChange`` and ``clients.SkillChange``: that module imports this
# one, so they are not named in the annotations here)


# --- applying ---------------------------------------------------------------------------------------

def backup_path(path: Path, stamp: str | None = None) -> Path:
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
    cand = path.with_name(f"{path.name}.bak-{stamp}")
    n = 2
    while cand.exists() or cand.is_symlink():
        cand = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        n += 1
    return cand


def write_backup(path: Path, text: str, *, private: bool | None = None) -> Path:
    """A copy of the file's current text beside it, with the file's permissions (``private``:
    readable by its owner only, as a file that holds a token), never over an existing file."""
    import stat as _stat

    target = backup_path(path)
    try:
        mode = 0o600 if private else _stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o600
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())
    return target


def _write(path: Path, text: str, mode: int | None = None) -> None:
    from ..errors import WriteError
    from ..files import atomic_write, is_disk_full

    # a symlinked config (dotfiles repositories do this) stays a link: the file it points at is written
    target = path.resolve() if path.is_symlink() else path
    try:
        atomic_write(target, text, mode=mode)
    except OSError as exc:
        fix = "free some disk space and try again" if is_disk_full(exc) else f"check that {target.parent} is writable"
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}; the previous file is unchanged",
                         fix=fix) from None


def apply(change: Any) -> Any:
    """Write the planned text: a backup of the previous file first (when there was one),
    then the new text atomically. A change that changes nothing writes nothing (but a file
    that holds a secret of ours and that others may read is made readable by its owner only)."""
    if not change.changed:
        if change.private:
            _tighten(change.path)
        return change
    if change.before is not None:
        try:
            change.backup = write_backup(change.path, change.before, private=change.held_private or None)
        except OSError as exc:
            from ..errors import WriteError

            raise WriteError(f"cannot write a backup of {change.path}: {exc.strerror or exc}; nothing was changed",
                             fix=f"check that {change.path.parent} is writable") from None
    _write(change.path, change.after or "", mode=0o600 if change.private else None)
    return change


def _tighten(path: Path) -> None:
    """Make a file readable by its owner only, if others may read it now."""
    import stat as _stat

    from ..errors import WriteError

    try:
        target = path.resolve()
        if _stat.S_IMODE(target.stat().st_mode) & 0o077:
            os.chmod(target, 0o600)
    except OSError as exc:
        raise WriteError(f"{path} holds a secret and cannot be made private: {exc.strerror or exc}",
                         fix=f"run `chmod 600 {path}`") from None


def apply_skill(change: Any) -> Any:
    """Write (a backup of the previous file first) or remove the teaching skill."""
    from ..errors import WriteError

    if change.dest is None:
        return change
    try:
        if change.action in ("create", "update"):
            if change.before is not None:
                change.backup = write_backup(change.dest, change.before)
            _write(change.dest, change.after or "")
        elif change.action == "remove":
            with _suppress(FileNotFoundError):
                change.dest.unlink()
            with _suppress(OSError):
                change.dest.parent.rmdir()    # only when nothing else is in it
    except OSError as exc:
        raise WriteError(f"cannot change {change.dest}: {exc.strerror or exc}",
                         fix=f"check that {change.dest.parent} is writable") from None
    return change


def _suppress(*kinds: type[BaseException]):
    import contextlib

    return contextlib.suppress(*kinds)


# --- skill folders copied into a client (pick --install) ------------------------------------------------

@dataclass
class CopyResult:
    name: str
    dest: Path
    action: str      # create | unchanged | differs | error
    detail: str = ""


def copy_skill_folders(dest_dir: Path, skills: list[tuple[str, dict[str, bytes], set[str]]], *,
                       dry_run: bool = False) -> list[CopyResult]:
    """Copy skill folders (name, {relative path: bytes}, the executable paths) into a client's
    skills folder. A
    folder already there is left as it is: reported unchanged when it holds the same files,
    "differs" otherwise (never overwritten)."""
    import shutil
    import tempfile

    from ..evolution.evolve import name_dir
    from ..files import atomic_write

    out: list[CopyResult] = []
    for name, files, executable in skills:
        try:
            dest = name_dir(dest_dir, name)
        except ValidationError as exc:
            out.append(CopyResult(name, dest_dir / "?", "error", exc.message))
            continue
        if dest.exists():
            same = all(_holds(dest / rel, data) for rel, data in files.items())
            out.append(CopyResult(name, dest, "unchanged" if same else "differs",
                                  "" if same else f"{dest} exists and differs: left as it is"))
            continue
        if dry_run:
            out.append(CopyResult(name, dest, "create"))
            continue
        dest_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-skillshelf-", dir=dest_dir))
        try:
            for rel, data in files.items():
                atomic_write(tmp / rel, data)
                if rel in executable:
                    os.chmod(tmp / rel, 0o755)
            os.chmod(tmp, 0o755 & ~_umask())
            os.rename(tmp, dest)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            out.append(CopyResult(name, dest, "error", f"cannot write {dest}: {exc.strerror or exc}"))
            continue
        out.append(CopyResult(name, dest, "create"))
    return out


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file at ``path`` holds exactly ``data`` (read only when its size matches)."""
    try:
        return path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
