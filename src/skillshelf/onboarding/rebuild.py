"""``rebuild``: a new index database built from the files, the old one moved aside.

The files are the truth, so a rebuild loses nothing of them. The old file is checked first
and named for what it is: ``<name>.damaged-<time>`` when SQLite's quick check finds it
damaged, ``<name>.old-<time>`` when it is healthy. The usage history (not in the files) is
carried into the new database; when the old file cannot be read, it stays there and the
report says so. A rebuild that fails or is stopped puts the old file back as it was."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..store import Store
from ..store.carry import carry_usage
from ..store.sqlite import put_back


@dataclass
class Rebuilt:
    """What a rebuild did with the old database: where it went (None: there was none), whether
    it was healthy (and what the quick check found when not), the usage rows carried into the new
    one per table, and why the history stayed behind when it did."""

    moved: Path | None = None
    healthy: bool = True
    problem: str = ""
    carried: dict[str, int] = field(default_factory=dict)
    left_behind: str = ""

    def as_dict(self) -> dict:
        return {"moved": str(self.moved) if self.moved else None, "healthy": self.healthy, "problem": self.problem,
                "carried": self.carried, "left_behind": self.left_behind}


def check(db_path: Path) -> tuple[bool, str]:
    """(healthy, what is wrong) of an existing database file, by SQLite's quick check."""
    try:
        st = Store(db_path)
    except StoreError as exc:       # too damaged to open: what SQLite said, without the path said already
        return False, exc.message.split(" is damaged (", 1)[-1].removesuffix(")")
    try:
        found = st.quick_check()
    finally:
        st.close()
    return found == "ok", "" if found == "ok" else found


def move_aside(db_path: Path, kind: str) -> Path | None:
    """Move a database (and its -wal/-shm files) aside as ``<name>.<kind>-<time>``; where it went,
    or None when there was none."""
    if not db_path.exists():
        return None
    moved = db_path.with_name(f"{db_path.name}.{kind}-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(db_path) + suffix)
        if src.exists():
            os.replace(src, Path(str(moved) + suffix))
    return moved


def rebuild(db_path: Path, open_library: Callable[[], Any], *, progress: Callable | None = None,
            embed_progress: Callable | None = None) -> tuple[Any, Rebuilt]:
    """Check the database, move it aside, carry its usage history into a new one, open the library
    on it (``open_library``) and sync the files into it (with ``sync``'s progress callbacks): (the
    library, what happened to the old file). When the build fails or is stopped (Ctrl-C), the new
    file goes and the old one comes back where it was."""
    rep = Rebuilt()
    if db_path.exists():
        rep.healthy, rep.problem = check(db_path)
    rep.moved = move_aside(db_path, "old" if rep.healthy else "damaged")
    try:
        if rep.moved is not None:
            new = Store(db_path)
            try:
                rep.carried = carry_usage(new, rep.moved)
            except StoreError as exc:       # a damaged file's history: it stays there, said
                rep.left_behind = exc.message
            finally:
                new.close()
        lib = open_library()
        try:
            lib.sync(progress=progress, embed_progress=embed_progress)
        except BaseException:
            lib.close()
            raise
        return lib, rep
    except BaseException:
        # a new index that cannot be built (a full disk, a write refused) or a Ctrl-C: the old file comes back
        if rep.moved is not None:
            put_back(rep.moved, db_path)
        raise
