"""skillshelf: a local-first librarian for agent skills.

Names are imported on first use (PEP 562), so ``import skillshelf.mcp.server`` does not
pull in numpy or SQLite before the server has answered its first request."""

from __future__ import annotations

import importlib
from typing import Any

from .version import __version__

_EXPORTS = {
    "ConfigError": "errors",
    "ConflictError": "errors",
    "EmbedderError": "errors",
    "Finding": "skill",
    "Hit": "search.pipeline",
    "Library": "library",
    "NotFoundError": "errors",
    "PolicyError": "errors",
    "SearchResult": "search.pipeline",
    "Skill": "skill",
    "SkillFormatError": "errors",
    "SkillRecord": "library",
    "SkillshelfError": "errors",
    "StoreError": "errors",
    "ValidationError": "errors",
    "WriteError": "errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'skillshelf' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
