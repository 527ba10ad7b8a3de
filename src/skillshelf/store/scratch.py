"""A scratch copy of the index: the database copied whole (SQLite's online backup, a consistent
snapshot even while others write) into a file of its own, for a trial that must not touch the
real index (``search.trial``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .sqlite import Store


def scratch_copy(store: Store, path: Path) -> Store:
    """The index of ``store`` copied into ``path`` (a new file), opened as a ``Store``."""
    dst = sqlite3.connect(path)
    try:
        store.db.backup(dst)
    finally:
        dst.close()
    return Store(path)
