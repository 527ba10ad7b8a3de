"""File-system events under the library's roots, so that a long-running process learns what
changed instead of rescanning every root (a stat scan of 5.3k skills costs ~0.2-0.9 s).

``watchfiles`` (the Rust ``notify`` crate: inotify, FSEvents, ReadDirectoryChangesW) gathers
the events of each root in a thread of its own, outside Python; ``Watcher.changes`` takes
what it gathered since the last call without waiting. A root where the platform gives no
events (the inotify watch limit reached, a file system without them, Windows drives under
WSL) is polled by watchfiles instead (every ``POLL_MS``; it compares modification times in
whole seconds, so a second change within the same second waits for the rescan); one where
even that fails is left to the indexer's periodic rescan. ``status`` says which is which, for ``doctor``.

Only what can change the index counts: a ``SKILL.md`` (or ``skill.md``) added, changed or
removed, a folder holding one added (moved or copied in), a path removed that may have been
such a folder. Dependency and VCS folders (``sources.SKIP_DIRS``), temporary files of the
library's own atomic writes and of editors, and the library's home inside another root are
ignored."""

from __future__ import annotations

import os
import platform
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .roots import SKILL_FILES, SKIP_DIRS, Root

if TYPE_CHECKING:
    from watchfiles._rust_notify import RustNotify

# watchfiles' change codes (watchfiles.Change)
ADDED, MODIFIED, DELETED = 1, 2, 3

POLL_MS = 3000           # the polling fallback's period: a poll stats every file of the root
DIR_WALK_CAP = 2000      # folders looked into for a SKILL.md when a folder appears


@dataclass
class RootWatch:
    """How one root is watched: ``mode`` is "events" (the platform's), "polling" (watchfiles
    stats the tree every ``POLL_MS``) or "none" (``reason`` says why: changes are seen by the
    periodic rescan only)."""

    root: Root
    mode: str
    reason: str | None = None
    notify: RustNotify | None = None

    def as_dict(self) -> dict:
        return {"root": self.root.label, "path": str(self.root.path), "mode": self.mode, "reason": self.reason}


def _force_polling(path: Path) -> str | None:
    """Why this root must be polled, or None. ``WATCHFILES_FORCE_POLLING`` is watchfiles' own
    switch (a value other than false/disable/disabled forces polling); under WSL, inotify sees
    no change made from Windows to a drive mounted under /mnt."""
    env = os.environ.get("WATCHFILES_FORCE_POLLING")
    if env:
        return None if env.lower() in ("false", "disable", "disabled") else "WATCHFILES_FORCE_POLLING is set"
    u = platform.uname()
    if u.system.lower() == "linux" and "microsoft" in u.release.lower() and str(path).startswith("/mnt/"):
        return "a Windows drive under WSL gives no file-system events"
    return None


def _notify(path: Path, polling: bool):
    from watchfiles._rust_notify import RustNotify

    # (paths, debug, force_polling, poll_delay_ms, recursive, ignore_permission_denied)
    return RustNotify([str(path)], False, polling, POLL_MS, True, True)


class Watcher:
    """File-system events of some roots. ``start`` sets the watches up (it walks each tree:
    ~0.1 s at 5.3k skills) and returns once they record; ``changes`` returns the relevant
    paths seen since the last call. Thread-safe; ``close`` stops every watch."""

    def __init__(self, roots: list[Root], exclude: tuple[Path, ...] = ()):
        self.roots = list(roots)
        self.exclude = tuple(Path(p) for p in exclude)
        self.watches: list[RootWatch] = []
        self._lock = threading.Lock()

    def start(self) -> Watcher:
        for root in self.roots:
            self.watches.append(self._watch(root))
        return self

    @staticmethod
    def _watch(root: Root) -> RootWatch:
        forced = _force_polling(root.path)
        reason = forced
        if forced is None:
            try:
                notify = _notify(root.path, False)
            except Exception as exc:  # the watch limit, no inotify: watchfiles' polling instead
                reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            else:
                # watchfiles itself falls back to polling where the platform has no events
                if repr(notify).startswith("RustNotify(Poll"):
                    return RootWatch(root, "polling", "the platform gives no file-system events here", notify)
                return RootWatch(root, "events", None, notify)
        try:
            return RootWatch(root, "polling", reason, _notify(root.path, True))
        except Exception as exc:
            return RootWatch(root, "none", f"{reason}; polling failed too: {' '.join(str(exc).split())[:200]}")

    @property
    def unwatched(self) -> bool:
        """Some root is not watched at all: only a rescan sees its changes."""
        return any(w.mode == "none" for w in self.watches)

    def status(self) -> list[dict]:
        return [w.as_dict() for w in self.watches]

    def changes(self) -> set[Path]:
        """The paths that may change the index, seen since the last call; waits ~1 ms per root.
        A root whose watch failed is reported as changed and watched afresh. Raises
        ``KeyboardInterrupt`` when watchfiles saw one arrive (in the main thread)."""
        out: set[Path] = set()
        with self._lock:
            for w in self.watches:
                if w.notify is None:
                    continue
                try:
                    raw = w.notify.watch(50, 1, 1, None)   # debounce, step, timeout (ms), stop event
                except Exception as exc:
                    # the watch itself failed (a file vanished while polling read it, a folder
                    # went): events may be lost, so the root counts as changed, and it is
                    # watched afresh (or, failing that, left to the rescans)
                    self._close(w)
                    fresh = self._watch(w.root)
                    w.mode, w.reason, w.notify = fresh.mode, fresh.reason, fresh.notify
                    if w.mode == "none":
                        w.reason = f"its watch stopped ({' '.join(str(exc).split())[:200]}); {w.reason}"
                    out.add(w.root.path)
                    continue
                if raw == "signal":
                    raise KeyboardInterrupt
                if isinstance(raw, str):      # "timeout": nothing new; "stop": not asked for
                    continue
                for change, path in raw:
                    p = Path(path)
                    if self.relevant(w.root, change, p):
                        out.add(p)
        return out

    def relevant(self, root: Root, change: int, path: Path) -> bool:
        name = path.name
        if name.startswith(".tmp-") or _editor_temp(name):
            return False
        try:
            rel = path.relative_to(root.path)
        except ValueError:
            rel = None              # reported through a link: judged by its name alone
        if rel is not None and any(part in SKIP_DIRS for part in rel.parts):
            return False
        if root.kind != "workspace" and any(_under(path, e) for e in self.exclude):
            return False            # the library's own home inside a read-only root
        if name in SKILL_FILES:
            return True
        if change == ADDED:
            return path.is_dir() and _holds_skill(path)
        if change == DELETED:
            return not name.startswith(".")   # a folder that may have held skills
        return False

    def close(self) -> None:
        with self._lock:
            for w in self.watches:
                self._close(w)

    @staticmethod
    def _close(w: RootWatch) -> None:
        if w.notify is not None:
            try:
                w.notify.close()
            except Exception:  # already closed or broken: nothing left to stop
                pass
            w.notify = None


def _editor_temp(name: str) -> bool:
    """Files editors write beside the one they save (vim's swap, backup and 4913 probe, emacs'
    lock and autosave files)."""
    return (name.endswith(("~", ".swp", ".swx", ".swo", ".tmp")) or name.startswith((".#", "#"))
            or name == "4913")


def _under(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def _holds_skill(folder: Path) -> bool:
    """Whether a folder that appeared holds a skill file at any depth (a copy or a move into
    the root brings folders without an event for each file). Past ``DIR_WALK_CAP`` folders
    it is assumed to."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        if any(f in filenames for f in SKILL_FILES):
            return True
        seen += 1
        if seen > DIR_WALK_CAP:
            return True
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
    return False
