"""``rebuild``: a new index database built from the files, the old one moved aside.

The files are the truth, so a rebuild loses nothing of them. The old file is checked first
and named for what it is: ``<name>.damaged-<time>`` when SQLite's quick check finds it
damaged, ``<name>.old-<time>`` when it is healthy (``-2``, ``-3``... after it when that name is
taken). What is not in the files is carried into the new database in one transaction: the usage
history and the owner's decisions (overlays, trusted skills, pinned roots and held skills). From
a file too damaged for that, each kind of decision still readable is carried and the report names
what stays there; no hold is released: a root whose pins cannot be read is held whole (every
skill in it held as new until a person pins it again), and when which roots were pinned cannot be
read, every root but the workspace is held so (then the library takes back what the home's
``decisions.json`` keeps: the pinned roots, held imports and overlays it names). A rebuild that fails or is stopped puts the old
file back as it was."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalog.roots import make_roots
from ..config import load as load_config
from ..errors import StoreError
from ..store import Store, now
from ..store.carry import carry_over, mark_taken, salvage
from ..store.sqlite import fold_log, put_back


@dataclass
class Rebuilt:
    """What a rebuild did with the old database: where it went (None: there was none), whether
    it was healthy (and what the quick check found when not), the rows carried into the new one
    per table (usage history and decisions), why the history stayed behind when it did, the kinds
    of decision that stayed in the old file (``store.carry.DECISIONS`` keys), the roots held whole
    because their pins could not be read, and whether which roots were pinned could not be read."""

    moved: Path | None = None
    healthy: bool = True
    problem: str = ""
    carried: dict[str, int] = field(default_factory=dict)
    left_behind: str = ""
    decisions_left: list[str] = field(default_factory=list)
    held_whole: list[str] = field(default_factory=list)
    roots_unread: bool = False

    def as_dict(self) -> dict:
        return {"moved": str(self.moved) if self.moved else None, "healthy": self.healthy, "problem": self.problem,
                "carried": self.carried, "left_behind": self.left_behind, "decisions_left": self.decisions_left,
                "held_whole": self.held_whole, "roots_unread": self.roots_unread}


def other_roots(cfg: Any) -> list[tuple[str, str]]:
    """The roots of the library ``cfg`` configures, but the workspace (label, path), as the library
    makes them (a saved root that has gone is left out)."""
    gone = {m.path for m in cfg.missing_roots()}
    return [(r.label, str(r.path)) for r in make_roots(cfg.workspace, [p for p in cfg.roots if p not in gone],
                                                       include_clients=cfg.client_roots) if r.kind != "workspace"]


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
    """Move a database (and its -wal/-shm files) aside as ``<name>.<kind>-<time>`` (``-2``, ``-3``...
    after it when a file of that name is there: a second rebuild in the same second keeps the
    first one's file); where it went, or None when there was none."""
    if not db_path.exists():
        return None
    fold_log(db_path)       # the file alone holds everything: one rename moves it whole
    stem = f"{db_path.name}.{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    moved, n = db_path.with_name(stem), 2
    while any(Path(str(moved) + suffix).exists() for suffix in ("", "-wal", "-shm")):
        moved, n = db_path.with_name(f"{stem}-{n}"), n + 1
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(db_path) + suffix)
        if src.exists():
            os.replace(src, Path(str(moved) + suffix))
    return moved


def rebuild(db_path: Path, open_library: Callable[[], Any], *, progress: Callable | None = None,
            embed_progress: Callable | None = None,
            roots: Callable[[], list[tuple[str, str]]] | None = None) -> tuple[Any, Rebuilt]:
    """Check the database, move it aside, carry its usage history and the owner's decisions into a
    new one, open the library on it (``open_library``) and sync the files into it (with ``sync``'s
    progress callbacks): (the library, what happened to the old file). ``roots``: the library's
    roots but the workspace (label, path), held whole when which roots were pinned cannot be read
    (by default those its home's settings name, ``other_roots``).
    When the build fails or is stopped (Ctrl-C), the new file goes and the old one comes back."""
    rep = Rebuilt()
    if db_path.exists():
        rep.healthy, rep.problem = check(db_path)
    rep.moved = move_aside(db_path, "old" if rep.healthy else "damaged")
    try:
        if rep.moved is not None:
            new = Store(db_path)
            try:
                rep.carried = carry_over(new, rep.moved)
                mark_taken(new)     # (the decisions came whole: decisions.json has nothing to add)
            except StoreError as exc:       # a damaged file: its history stays there, said; no hold is released
                rep.left_behind = exc.message
                unknown = roots() if roots is not None else other_roots(load_config(db_path.parent))
                got = salvage(new, rep.moved, at=now(), unknown=unknown)
                rep.carried, rep.decisions_left = got.copied, [k for k in got.left if k != "usage"]
                rep.held_whole, rep.roots_unread = got.held_whole, got.roots_unread
                if "usage" not in got.left:     # the history could be read whole after all: carried
                    rep.left_behind = ""
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
