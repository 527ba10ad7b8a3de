"""The one error hierarchy of skillshelf.

Every error names the problem and, where there is one, the fix. Adapters turn
these into a one-line CLI message, an MCP ``isError`` result or an HTTP status.

    SkillshelfError
    ├── ConfigError            bad setting, bad home, bad root
    ├── SkillFormatError       a SKILL.md that cannot be parsed or written
    ├── ValidationError        input that breaks a rule (names, sizes, arguments)
    ├── NotFoundError          no skill (or version, or draft) by that name or id
    ├── PolicyError            the write policy forbids the operation
    ├── ForbiddenError         the caller's role (team mode) does not allow the operation
    ├── ConflictError          the target already exists / a concurrent change
    ├── StoreError             the database cannot be opened or migrated, or is damaged
    ├── WriteError             a file could not be written (permissions, full disk); nothing changed
    └── EmbedderError          an embedding backend is missing or broken
"""

from __future__ import annotations

import errno
import sqlite3


class SkillshelfError(Exception):
    """Base of every error skillshelf raises on purpose."""

    def __init__(self, message: str, *, fix: str | None = None):
        self.message = message
        self.fix = fix
        super().__init__(message if not fix else f"{message} — {fix}")


class ConfigError(SkillshelfError):
    """A setting, home folder or root is unusable."""


class SkillFormatError(SkillshelfError):
    """A SKILL.md cannot be parsed (read) or would be invalid (write)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 fix: str | None = None):
        self.path = path
        self.line = line
        where = path or ""
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}" if where else message, fix=fix)


class ValidationError(SkillshelfError):
    """An argument or a piece of content breaks a rule."""


class NotFoundError(SkillshelfError):
    """Nothing by that name or id; ``suggestions`` holds the closest names."""

    def __init__(self, message: str, *, suggestions: list[str] | None = None, fix: str | None = None):
        self.suggestions = suggestions or []
        if self.suggestions and fix is None:
            fix = "did you mean: " + ", ".join(self.suggestions) + "?"
        super().__init__(message, fix=fix)


class PolicyError(SkillshelfError):
    """The write policy does not allow this operation."""


class ForbiddenError(SkillshelfError):
    """The caller's token has a role that does not allow the operation (team mode); the
    message names the role needed (``needed``)."""

    def __init__(self, message: str, *, needed: str, fix: str | None = None):
        self.needed = needed
        super().__init__(message, fix=fix)


class HeldError(SkillshelfError):
    """A skill held back from agents (changed since its collection was pinned, or blocked by
    ``trust.block``) was asked for by an agent, or named as the input of a save. The message says
    why; the fix names ``skillshelf trust NAME``."""


class ConflictError(SkillshelfError):
    """The target exists already, or changed under us."""


class StoreError(SkillshelfError):
    """The database cannot be opened, read or migrated."""


class WriteError(SkillshelfError):
    """A file could not be written; the previous file is intact."""


class EmbedderError(SkillshelfError):
    """An embedding backend cannot be loaded or fails."""


# --- write failures: one wording for every adapter ------------------------------------
_SQLITE_WRITE_FAILURES = {3: "no permission to write the database", 5: "the database is locked",
                          8: "the database is read-only", 10: "disk I/O error", 13: "the disk is full",
                          14: "the database file cannot be opened for writing"}
_OS_WRITE_FAILURES = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                      errno.EROFS: "the file system is read-only", errno.EACCES: "no permission to write",
                      errno.EPERM: "no permission to write", errno.EIO: "disk I/O error"}


def cannot_write_error(exc: BaseException, home: object) -> StoreError | None:
    """The error to show for ``exc`` when it is a write the disk or the lock refused
    (``write_failure``), naming the fix; None for any other error. One wording for the CLI,
    the MCP server and the dashboard."""
    reason = write_failure(exc)
    if reason is None:
        return None
    fix = ("another process is writing the library (a sync or a save): try again in a moment" if "locked" in reason
           else f"free disk space or make {home} writable; searching and reading still work")
    return StoreError(f"the library cannot be written now ({reason})", fix=fix)


def write_failure(exc: BaseException) -> str | None:
    """Why a write failed, when ``exc`` (or an error it was raised from) is a failure a
    read can go on without -- disk full, read-only database or file system, I/O error,
    locked database -- else None (a real error, to be raised)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        known = getattr(e, "write_failure", None)   # a store that named the refusal already
        if isinstance(known, str):
            return known
        if isinstance(e, sqlite3.Error):
            code = getattr(e, "sqlite_errorcode", None)
            if code is not None and code & 0xFF in _SQLITE_WRITE_FAILURES:
                return _SQLITE_WRITE_FAILURES[code & 0xFF]
            msg = str(e).lower()
            for needle, reason in (("disk is full", 13), ("readonly", 8), ("read-only", 8), ("disk i/o", 10),
                                   ("is locked", 5)):
                if needle in msg:
                    return _SQLITE_WRITE_FAILURES[reason]
        elif isinstance(e, OSError) and e.errno in _OS_WRITE_FAILURES:
            return _OS_WRITE_FAILURES[e.errno]
        e = e.__cause__ or e.__context__
    return None
