"""Files from strangers, read safely; our own files, written atomically and locked.

- :func:`read_bounded` reads only regular files, never blocks on a FIFO or a device, and
  never reads more than a cap: a SKILL.md linked to /dev/zero or a 300 MB "reference"
  is refused with a reason instead of exhausting memory.
- :func:`atomic_write` leaves the previous file intact on failure and keeps its mode.
- :func:`locked` serialises writers of one skill across processes; the lock file's
  name is derived from the key by hashing, so no text from a skill ever becomes a path,
  and it is removed again when the lock is released.
- :func:`contained` resolves a path and refuses anything outside a base folder.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import ValidationError, WriteError

# A SKILL.md bigger than this is not a skill (the largest of 5,327 real ones is ~290 KB).
MAX_SKILL_BYTES = 2_000_000
# Any other file served from a skill folder (references, scripts) is sent whole or not at all.
MAX_RESOURCE_BYTES = 5_000_000


class FileRefused(ValidationError):
    """A file that is not a regular file, or is over its size cap. ``rule`` says which."""

    def __init__(self, message: str, *, rule: str, fix: str | None = None):
        self.rule = rule
        super().__init__(message, fix=fix)


def read_bounded(path: str | Path, limit: int = MAX_SKILL_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Opened non-blocking (a FIFO would otherwise wait forever for a writer) and checked with
    ``fstat`` on the open descriptor (no window between check and read). Raises
    :class:`FileRefused` for special files and files over the cap, ``OSError`` otherwise."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{path} is not a regular file", rule="file.not-regular",
                              fix="replace it with a plain file (FIFOs, devices and sockets are never read)")
        if st.st_size > limit:
            raise FileRefused(f"{path} is {st.st_size:,} bytes; the limit is {limit:,}", rule="file.too-large",
                              fix="split it into smaller files")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # the file grew while we read it
                raise FileRefused(f"{path} is over the limit of {limit:,} bytes", rule="file.too-large",
                                  fix="split it into smaller files")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_bounded(path: str | Path, limit: int = MAX_SKILL_BYTES) -> str:
    """:func:`read_bounded` decoded as UTF-8 (a leading BOM dropped)."""
    data = read_bounded(path, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"{path} is not UTF-8 (byte {exc.start})", rule="encoding.utf8",
                          fix="save the file as UTF-8") from None


def is_regular(path: str | Path) -> bool:
    """True for a regular file (following symlinks), without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def contained(base: Path, target: Path) -> Path:
    """``target`` resolved, refusing anything outside ``base`` (or ``base`` itself)."""
    base_r = Path(base).resolve()
    t = Path(target).resolve()
    if base_r not in t.parents:
        raise ValidationError(f"refusing to use {t}: it is outside {base_r}",
                              fix="use a plain skill name (a-z, 0-9 and '-')")
    return t


def _mode_for(path: Path) -> int:
    """The previous file's permission bits, or what the umask gives a new file."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def atomic_write(path: Path, text: str | bytes, *, durable: bool = True, mode: int | None = None) -> None:
    """Write so that readers see the old file or the new one, never a torn one. A failure
    (full disk, read-only folder) leaves the previous file as it was and no temp file.
    ``durable=False`` skips the fsyncs, for copies of data kept elsewhere (a team server's
    copy of the store): a power cut may then leave an older, empty or torn copy, which the
    next start finds by its sha256 and writes again. ``mode``: the new file's permission bits
    (default: the previous file's, or what the umask gives a new one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(path) if mode is None else mode
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        data = text.encode("utf-8") if isinstance(text, str) else text
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if not durable:
        return
    with contextlib.suppress(OSError):
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def write_file(path: Path, text: str | bytes) -> None:
    """:func:`atomic_write` whose failure (permissions, a full disk, a read-only folder) is
    one :class:`WriteError` naming the fix; the previous file is left as it was."""
    try:
        atomic_write(path, text)
    except OSError as exc:
        fix = "free some disk space and try again" if is_disk_full(exc) else \
            f"check that {Path(path).parent} is writable (or pass --home with a writable folder)"
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}; nothing was changed", fix=fix) from None


def append_line(path: Path, line: str) -> None:
    """Append one line durably (the changelog and other append-only logs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line if line.endswith("\n") else line + "\n")
        f.flush()
        os.fsync(f.fileno())


def lock_path(home: Path, key: str) -> Path:
    """The lock file for ``key`` (a skill id or name): a hash, never the text itself."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Path(home) / "locks" / f"{digest}.lock"


def _acquire(path: Path) -> int:
    """A descriptor holding an exclusive ``flock`` on the lock file linked at ``path`` now.

    A holder removes its lock file as it releases it (lock files do not pile up, one per
    name ever locked). A waiter may therefore get the lock on a file that has just been
    removed: it checks, once the lock is its own, that the file it holds is still the one
    at ``path`` (same inode), and tries again otherwise. Two processes can never both hold
    the lock of the file at ``path``."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                linked = os.stat(path)
            except FileNotFoundError:
                linked = None
        except BaseException:
            os.close(fd)
            raise
        if linked is not None and (linked.st_ino, linked.st_dev) == (held.st_ino, held.st_dev):
            return fd
        os.close(fd)


def _release(path: Path, fd: int) -> None:
    """Remove the lock file while still holding it, then let it go (closing the descriptor
    releases the ``flock``): a waiter on the removed file sees it is gone and opens anew."""
    try:
        with contextlib.suppress(OSError):
            os.unlink(path)
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(home: Path, *keys: str) -> Iterator[None]:
    """Exclusive, cross-process locks on each key (taken in sorted order: two writers that
    lock the same skills cannot deadlock). The lock files are removed as they are released:
    ``<home>/locks/`` holds only the locks held now (and any a killed process left)."""
    with contextlib.ExitStack() as stack:
        for key in sorted(set(keys)):
            p = lock_path(home, key)
            p.parent.mkdir(parents=True, exist_ok=True)
            stack.callback(_release, p, _acquire(p))
        yield


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
