"""The one error hierarchy of skillshelf.

Every error names the problem and, where there is one, the fix. Adapters turn
these into a one-line CLI message, an MCP ``isError`` result or an HTTP status.

    SkillshelfError
    ├── ConfigError            bad setting, bad home, bad root
    ├── SkillFormatError       a SKILL.md that cannot be parsed or written
    ├── ValidationError        input that breaks a rule (names, sizes, arguments)
    ├── NotFoundError          no skill (or version, or draft) by that name or id
    ├── PolicyError            the write policy forbids the operation
    ├── ConflictError          the target already exists / a concurrent change
    ├── StoreError             the database cannot be opened or migrated, or is damaged
    ├── WriteError             a file could not be written (permissions, full disk); nothing changed
    └── EmbedderError          an embedding backend is missing or broken
"""

from __future__ import annotations


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


class ConflictError(SkillshelfError):
    """The target exists already, or changed under us."""


class StoreError(SkillshelfError):
    """The database cannot be opened, read or migrated."""


class WriteError(SkillshelfError):
    """A file could not be written; the previous file is intact."""


class EmbedderError(SkillshelfError):
    """An embedding backend cannot be loaded or fails."""
