"""skillshelf: a local-first librarian for agent skills."""

from .errors import (
    ConfigError,
    ConflictError,
    EmbedderError,
    NotFoundError,
    PolicyError,
    SkillFormatError,
    SkillshelfError,
    StoreError,
    ValidationError,
)
from .library import Library, SkillRecord
from .search import Hit, SearchResult
from .skill import Finding, Skill

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "ConflictError",
    "EmbedderError",
    "Finding",
    "Hit",
    "Library",
    "NotFoundError",
    "PolicyError",
    "SearchResult",
    "Skill",
    "SkillFormatError",
    "SkillRecord",
    "SkillshelfError",
    "StoreError",
    "ValidationError",
    "__version__",
]
