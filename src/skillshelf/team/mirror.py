"""This server's copy of the team workspace: a folder the library indexes as its workspace
root, so search, reads and every other path stay as they are for a team.

The database is the truth; the folder follows it:

- at start, every skill is brought in (only what differs is written; the folder of a skill
  deleted meanwhile is removed);
- then the change stream: a notification (LISTEN/NOTIFY) wakes the follower as soon as another
  server commits, a poll every second catches one that was lost, and the skills and drafts
  named by new changes are brought in and handed to the indexer at once (those folders only);
- every ``RECONCILE`` seconds the whole folder is compared again (the safety net), and when
  that brought anything in, the indexer is asked for a whole sync;
- every ``PRUNE_EVERY`` seconds the follower prunes the stream's old rows
  (``store.pg_changes``: older than a week and not among the newest 10,000). A follower whose
  last number is below what was pruned (a server down longer than that) cannot know what it
  missed: it brings everything in again, as a fresh start does, and tells its subscribers
  that anything of their kind may have changed.

A change number can be committed after a higher one (transactions take their numbers in one
order and commit in another): numbers skipped are asked for again for ``GAP_WAIT`` seconds.
Anything in the folder the database does not have (a folder made by hand) is moved to
``set_aside``, never deleted. A SKILL.md a person edited in the folder is never overwritten
unseen: it becomes the skill's next version in the store, or, when the store has moved on
meanwhile, it is kept in ``set_aside`` and the review queue (``team.edits``). While it follows
the stream, the folder's file-system events are looked at every ``EDIT_POLL`` seconds, so an
edit reaches every server within about a second."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import skill as skillmod
from ..errors import ConflictError, SkillshelfError
from ..files import (
    MAX_RESOURCE_BYTES,
    MAX_SKILL_BYTES,
    FileRefused,
    atomic_write,
    contained,
    read_bounded,
)
from ..store.pg_workspace import PgWorkspace, SkillRow, sha256
from . import edits

if TYPE_CHECKING:
    from ..catalog.watcher import Watcher

_STRIPES = 64


def _digest(path: Path) -> str | None:
    """The sha256 of a regular file (None when it is missing, special or too large)."""
    try:
        return hashlib.sha256(read_bounded(path, MAX_RESOURCE_BYTES)).hexdigest()
    except (OSError, FileRefused):
        return None


class Mirror:
    """The folders ``workspace`` and ``drafts`` kept equal to the team store ``ws``;
    ``index(paths)`` is told which skill folders changed (the library syncs them), or
    ``index(None)`` when the whole folder was compared and something changed (sync it all)."""

    RECONCILE = 300.0
    GAP_WAIT = 30.0
    POLL = 1.0
    EDIT_POLL = 0.25      # how often the folder's file-system events are looked at (a person's edits)
    # a prune is one cheap query when there is nothing to delete; once an hour keeps the table
    # near its bound (a week of changes, at least the newest 10,000) without adding load
    PRUNE_EVERY = 3600.0

    def __init__(self, ws: PgWorkspace, *, workspace: Path, drafts: Path, set_aside: Path,
                 index: Callable[[list[Path] | None], None] | None = None):
        self.ws = ws
        self.workspace = Path(workspace)
        self.drafts = Path(drafts)
        self.set_aside = Path(set_aside)
        self.index = index
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        self._follow_lock = threading.Lock()
        self._last = 0
        self._missing: dict[int, float] = {}     # change numbers skipped: first seen missing at
        self._retry: set[tuple[str, str]] = set()
        self._retry_all: set[str] = set()        # kinds whose subscribers must read everything again
        self._pruned: float | None = None        # when this server last pruned the stream (monotonic)
        self.resyncs = 0                         # times it fell behind the pruned part and read everything
        self._reconciled = 0.0
        self._compared = False                   # the whole folder was compared (``pull_all``)
        self._closed = False
        self._warned: set[str] = set()
        self._subscribers: dict[str, list[Callable[[list[str] | None], object]]] = {}
        self.following = False
        self.last_seen = 0.0                     # when the follower last read the stream (monotonic)
        self._known: dict[str, str] = {}         # name -> sha256 of the SKILL.md this copy last had from the store
        self._edits: set[str] = set()            # folders holding a person's edit, to keep (``_keep_edit``)
        self._kept_aside: list[dict] = []        # edits the store had moved past: where each was kept
        self._stop = threading.Event()
        self._edit_thread: threading.Thread | None = None
        self._watcher: Watcher | None = None     # the folder's file-system events (``_watch_edits``)
        self._edit_lock = threading.RLock()      # held while the events seen are brought in

    @property
    def kept_aside(self) -> list[dict]:
        """Edits of this server's copy the store had moved past: those kept since it started,
        and every one whose draft still waits in the review queue (kept before a restart too)."""
        try:
            waiting = edits.waiting(self.ws, self.set_aside)
        except SkillshelfError:
            waiting = []
        names = {w["name"] for w in waiting}
        mine = [k for k in self._kept_aside if not k["draft"] or k["name"] in names]
        return mine + [w for w in waiting if w["name"] not in {k["name"] for k in mine}]

    # --- one skill ------------------------------------------------------------------------
    def lock(self, name: str) -> threading.Lock:
        """Held while this process writes the folder of ``name``."""
        return self._stripes[int(hashlib.blake2s(name.encode("utf-8", "surrogatepass")).hexdigest()[:8], 16)
                             % _STRIPES]

    def folder(self, name: str) -> Path:
        """The folder of a plain spec name (the only names the team store writes)."""
        if not isinstance(name, str) or len(name) > skillmod.MAX_NAME or not skillmod.NAME_RE.match(name):
            raise ValueError(f"not a plain skill name: {name[:80]!r}")
        return self.workspace / name

    def pull(self, name: str) -> bool:
        """Bring the skill ``name`` in as committed now. Returns whether its folder changed."""
        return self.bring(name)[0]

    def bring(self, name: str, *, unknown: bool = True) -> tuple[bool, str | None]:
        """Make the folder of ``name`` what the store holds now. Returns (whether the folder
        changed, the sha256 of its SKILL.md in the store: None when the store has no live
        skill of that name). The row is read with the folder's lock held: a writer of this
        process never has its newer file replaced by an older read. ``unknown=False``: a folder
        the store has no skill of is left as it is (an import or ``init`` may be writing it
        before it joins the store; the next comparison moves it aside if it never does)."""
        try:
            folder = self.folder(name)
        except ValueError:
            return False, None
        with self.lock(name):
            row = self.ws.skill(name)
            if row is None and not unknown:
                return False, None
            got = self._apply(folder, row)
        return self._keep_edit(name) if name in self._edits else got

    def _edited(self, name: str, digest: str | None) -> bool:
        """Whether a SKILL.md with this sha256 is a person's edit: not the text this copy last
        had from the store, or (none known: a restart) no version the store kept."""
        if digest is None:
            return False
        base = self._known.get(name)
        return digest != base if base is not None else self.ws.kept_version(name, digest) is None

    def _apply(self, folder: Path, row: SkillRow | None) -> tuple[bool, str | None]:
        name = folder.name
        md = folder / "SKILL.md"
        if row is not None and (have := _digest(md)) != row.sha256 and not folder.is_symlink() \
                and self._edited(name, have):
            self._edits.add(name)           # kept first, under the skill's lock (``_keep_edit``)
            return False, row.sha256
        if row is None or row.deleted:
            gone = self._remove(folder) if row is not None else self._put_aside(folder)
            return gone, None
        changed = False
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            changed = self._put_aside(folder)
        if _digest(md) != row.sha256:
            atomic_write(contained(self.workspace, md), row.text, durable=False)
            changed = True
        self._known[name] = row.sha256
        for rel, digest in sorted(row.files.items()):
            target = contained(folder, folder / rel)
            if _digest(target) == digest:
                continue
            data = self.ws.file_content(name, rel)
            if data is None:
                continue            # removed meanwhile: the next change says so
            atomic_write(target, data, durable=False)
            changed = True
        changed |= self._set_aside_extra(folder, set(row.files))
        return changed, row.sha256

    def write_committed(self, name: str, text: bytes, files: dict[str, bytes] | None) -> Path:
        """Write what this server has just committed (``files``: the whole set, or None:
        unchanged). Returns the SKILL.md path."""
        folder = self.folder(name)
        md = contained(self.workspace, folder / "SKILL.md")
        with self.lock(name):
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                self._put_aside(folder)
            for rel, data in sorted((files or {}).items()):
                atomic_write(contained(folder, folder / rel), data, durable=False)
            atomic_write(md, text, durable=False)
            self._known[name] = sha256(text)
            if files is not None:
                self._set_aside_extra(folder, set(files))
        return md

    def _keep_edit(self, name: str) -> tuple[bool, str | None]:
        """Keep the person's edit in the folder of ``name`` (see ``team.edits``), under the
        skill's lock across servers, then make the folder what the store holds. Returns what
        ``bring`` returns."""
        folder = self.workspace / name
        md = folder / "SKILL.md"
        with self.ws.locked("skill:" + name), self.lock(name):
            self._edits.discard(name)
            row = self.ws.skill(name)
            try:
                data: bytes | None = read_bounded(md, MAX_SKILL_BYTES)
            except (OSError, FileRefused):
                data = None
            have = None if data is None else sha256(data)
            if data is None or row is None or have == row.sha256 or not self._edited(name, have):
                return self._apply(folder, row)
            if edits.based_on(data, row, self._known.get(name)):
                try:
                    _, text = edits.commit(self.ws, md, data, row)
                    self._known[name] = sha256(text)
                    return True, self._known[name]
                except (ConflictError, UnicodeDecodeError) as exc:
                    print(f"skillshelf: the edit of {name} could not be committed ({exc}): keeping it aside",
                          file=sys.stderr)
                    row = self.ws.skill(name)
            self._kept_aside.append(edits.set_aside(self.ws, md, data, row, self.set_aside, self._known.get(name)))
            assert have is not None         # (the file was read: see above)
            self._known[name] = have        # kept: this copy may now take the store's text
            self._edits.discard(name)
            return self._apply(folder, row)

    def remove(self, name: str) -> bool:
        """Remove this server's copy of a skill deleted in the store."""
        try:
            folder = self.folder(name)
        except ValueError:
            return False
        with self.lock(name):
            return self._remove(folder)

    def _remove(self, folder: Path) -> bool:
        if folder.is_symlink() or folder.is_file():
            folder.unlink()
            return True
        if folder.is_dir():
            shutil.rmtree(contained(self.workspace, folder))
            return True
        return False

    def _set_aside_extra(self, folder: Path, known: set[str]) -> bool:
        """Files in a skill's folder that the store does not have, moved aside."""
        if not folder.is_dir():
            return False
        moved = False
        for dirpath, dirs, files in os.walk(folder):
            for f in files:
                p = Path(dirpath) / f
                rel = p.relative_to(folder).as_posix()
                if rel == "SKILL.md" or rel in known or f.startswith(".tmp-"):
                    continue
                moved |= self._put_aside(p)
        for dirpath, dirs, files in os.walk(folder, topdown=False):
            for d in dirs:
                with contextlib.suppress(OSError):
                    (Path(dirpath) / d).rmdir()          # emptied folders only
        return moved

    def _put_aside(self, path: Path) -> bool:
        """Move ``path`` (something in the folder the store does not have) to ``set_aside``."""
        if not (path.exists() or path.is_symlink()):
            return False
        rel = path.relative_to(self.workspace)
        dest = self.set_aside / time.strftime("%Y%m%d-%H%M%S") / rel
        n = 1
        while dest.exists() or dest.is_symlink():
            dest = dest.with_name(f"{rel.name}.{n}")
            n += 1
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, dest)
        print(f"skillshelf: {path} is not in the team store: moved to {dest} (the team workspace folder is this "
              f"server's copy of the store; add skills with save or import)", file=sys.stderr)
        return True

    # --- drafts ---------------------------------------------------------------------------
    def draft_folder(self, name: str) -> Path:
        if not isinstance(name, str) or not skillmod.NAME_RE.match(name) or len(name) > skillmod.MAX_NAME:
            raise ValueError(f"not a plain skill name: {name[:80]!r}")
        return self.drafts / name

    def put_draft(self, name: str, text: bytes, record: str) -> None:
        folder = self.draft_folder(name)
        with self.lock("draft:" + name):
            atomic_write(contained(self.drafts, folder / "SKILL.md"), text, durable=False)
            atomic_write(contained(self.drafts, folder / "draft.json"), record, durable=False)

    def drop_draft(self, name: str) -> None:
        try:
            folder = self.draft_folder(name)
        except ValueError:
            return
        with self.lock("draft:" + name):
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(contained(self.drafts, folder), ignore_errors=True)

    def pull_draft(self, name: str) -> None:
        got = self.ws.draft(name)
        if got is None:
            self.drop_draft(name)
        else:
            self.put_draft(name, got[0], got[1])

    def pull_drafts(self) -> None:
        kept = self.ws.drafts()
        if self.drafts.is_dir():
            for d in self.drafts.iterdir():
                if d.name not in kept and not d.name.startswith("."):
                    self.drop_draft(d.name)
        for name, (text, record) in kept.items():
            with contextlib.suppress(ValueError):
                folder = self.draft_folder(name)
                if _digest(folder / "SKILL.md") != hashlib.sha256(text).hexdigest() or \
                        _digest(folder / "draft.json") != hashlib.sha256(record.encode()).hexdigest():
                    self.put_draft(name, text, record)

    # --- everything -----------------------------------------------------------------------
    def pull_all(self, *, alone: bool = False) -> list[Path]:
        """Compare the whole folder with the store and bring in what differs. Returns the
        skill folders that changed. ``alone``: nothing else in this process writes the folder
        now (at start), so the rows that differ are read in batches; otherwise each is read
        again with its folder's lock held."""
        self.workspace.mkdir(parents=True, exist_ok=True)
        states = self.ws.states()
        files = self.ws.file_states()
        changed: list[Path] = []
        todo: list[str] = []
        for name, (digest, deleted) in sorted(states.items()):
            if not skillmod.NAME_RE.match(name) or len(name) > skillmod.MAX_NAME:
                self._warn(f"name:{name}", f"the team store holds a skill named {name[:80]!r}, which cannot be a "
                                          "folder name: it is left out of this server's copy")
                continue
            folder = self.workspace / name
            if deleted:
                if folder.exists() or folder.is_symlink():
                    todo.append(name)
                continue
            if _digest(folder / "SKILL.md") == digest and self._files_match(folder, files.get(name, {})):
                self._known[name] = digest
                continue
            todo.append(name)
        for start in range(0, len(todo), 500):
            batch = todo[start:start + 500]
            got = self.ws.skills(batch) if alone else {}
            for name in batch:
                folder = self.workspace / name
                try:
                    if name in got:
                        with self.lock(name):
                            did = self._apply(folder, got[name])[0]
                        if name in self._edits:
                            did = self._keep_edit(name)[0]
                    else:
                        did = self.pull(name)
                except (SkillshelfError, OSError) as exc:    # the edit stays on disk: kept at a later pass
                    self._warn(f"edit:{name}", f"cannot keep the change to {name} in the team store ({exc}); "
                                               "trying again later")
                    continue
                if did:
                    changed.append(folder)
        for entry in sorted(self.workspace.iterdir()):
            if entry.name.startswith(".tmp-") or (entry.name in states and not states[entry.name][1]):
                continue
            # not live in the store as it was read: asked again under its lock (it may have
            # been committed since), then removed (deleted) or moved aside (never there)
            if skillmod.NAME_RE.match(entry.name):
                if self.pull(entry.name):
                    changed.append(entry)
            elif self._put_aside(entry):
                changed.append(entry)
        self.pull_drafts()
        self._reconciled = time.monotonic()
        self._compared = True
        return changed

    @staticmethod
    def _files_match(folder: Path, want: dict[str, str]) -> bool:
        have: dict[str, str | None] = {}
        if folder.is_dir():
            for dirpath, _dirs, names in os.walk(folder):
                for f in names:
                    p = Path(dirpath) / f
                    rel = p.relative_to(folder).as_posix()
                    if rel != "SKILL.md" and not f.startswith(".tmp-"):
                        have[rel] = None
        if set(have) != set(want):
            return False
        return all(_digest(folder / rel) == digest for rel, digest in want.items())

    # --- following the change stream --------------------------------------------------------
    def _position(self) -> tuple[int, dict[int, float]]:
        """The stream's position now, and the numbers below it not committed yet (a
        transaction still open), to be awaited: those of the last 1000, above what was pruned
        (a number pruned is no gap of ours: bringing everything in covers it)."""
        last = self.ws.last_change()
        floor = max(0, last - 1000, self.ws.pruned_through())
        recent = set(self.ws.recent_seqs(floor))
        now = time.monotonic()
        return last, {s: now for s in range(floor + 1, last + 1) if s not in recent}

    def start(self, *, follow: bool = True) -> list[Path]:
        """Bring everything in, then (``follow``) follow the change stream in a daemon thread.
        The stream's position is taken first: whatever commits meanwhile is seen twice,
        never missed."""
        self._last, self._missing = self._position()
        changed = self.pull_all(alone=True)
        if follow:
            self.following = True
            self.ws.pg.listen(self.wake, poll=self.POLL)
            self._edit_thread = threading.Thread(target=self._watch_edits, name="skillshelf-team-edits", daemon=True)
            self._edit_thread.start()
        return changed

    def _watch_edits(self) -> None:
        """Look at the folder's file-system events every ``EDIT_POLL`` seconds: each skill
        folder named is brought in (a person's edit is kept as a version first), and the
        folders that changed are indexed."""
        from ..catalog.roots import Root
        from ..catalog.watcher import Watcher

        try:
            watcher = self._watcher = Watcher([Root(self.workspace, "workspace", "workspace")]).start()
        except Exception as exc:  # noqa: BLE001 -- no events: edits are kept at the next pull or comparison
            self._warn("watch", f"cannot watch {self.workspace} for edits ({exc}); an edit there is kept when "
                                "the skill next changes or at the next comparison")
            return
        try:
            while not self._stop.wait(self.EDIT_POLL):
                with self._edit_lock:
                    paths = self._bring_seen(watcher)
                if paths and self.index is not None and not self._closed:
                    try:
                        self.index(paths)
                    except Exception as exc:  # noqa: BLE001 -- the next sync catches up
                        if not self._closed:
                            print(f"skillshelf: indexing an edit kept in the team store failed: {exc}",
                                  file=sys.stderr)
        finally:
            self._watcher = None
            watcher.close()

    def settle(self) -> list[Path]:
        """Bring in the folders whose events arrived and were not looked at yet (a person's
        edit is kept as a version first): a sync of every root calls this before it reads the
        folder, so it never indexes an edit the store does not hold. Returns the folders that
        changed (the sync indexes them)."""
        w = self._watcher
        if w is None:
            return []
        with self._edit_lock:
            return self._bring_seen(w)

    def _bring_seen(self, watcher) -> list[Path]:
        try:
            seen = watcher.changes()
        except Exception as exc:  # noqa: BLE001 -- a failed look is tried again
            self._warn("watch-changes", f"watching {self.workspace} for edits failed ({exc}); trying again")
            return []
        names = sorted({p.relative_to(self.workspace).parts[0] for p in seen
                        if p != self.workspace and self.workspace in p.parents})
        paths = []
        for name in names:
            try:
                if skillmod.NAME_RE.match(name) and self.bring(name, unknown=False)[0]:
                    paths.append(self.workspace / name)
            except (SkillshelfError, OSError, ValueError) as exc:
                self._warn(f"edit:{name}", f"cannot keep the change to {name} in the team store ({exc}); "
                                           "trying again at its next change")
        return paths

    def subscribe(self, kind: str, fn: Callable[[list[str] | None], object]) -> None:
        """Call ``fn(keys)`` in the follower with the keys of each batch of changes of
        ``kind`` (e.g. "overlay": the skill ids whose overlay another server changed), and
        ``fn(None)`` when this server fell behind the pruned part of the stream: any key of
        that kind may have changed, read them all again."""
        self._subscribers.setdefault(kind, []).append(fn)

    def wake(self) -> None:
        """Read the changes committed since the last look and bring their skills in (called by
        the listener on a notification and every ``POLL`` seconds)."""
        if self._closed:
            return
        with self._follow_lock:
            if self._closed:
                return
            self._compared = False
            try:
                paths = self._catch_up()
                if time.monotonic() - self._reconciled >= self.RECONCILE:
                    paths += self.pull_all()
            except (SkillshelfError, OSError) as exc:
                self._warn("follow", f"following the team store failed ({exc}); trying again")
                return
            self._warned.discard("follow")
            self.last_seen = time.monotonic()
            if paths and self.index is not None and not self._closed:
                try:
                    # after a whole comparison (the safety net, a resync) every root is synced
                    self.index(None if self._compared else sorted(set(paths)))
                except Exception as exc:  # noqa: BLE001 -- the follower must go on; the next sync catches up
                    if not self._closed:    # (a sync stopped by the library closing is no failure)
                        print(f"skillshelf: indexing the team store's changes failed: {exc}", file=sys.stderr)
            self._prune()

    def _prune(self) -> None:
        """Prune the change stream's old rows, at most once per ``PRUNE_EVERY`` seconds
        (the first time at the follower's first pass), and at the next passes while a backlog
        is left (each call stays under a second, so following is never held up for long). In
        its own short transactions, after this pass: a failure (a role without DELETE, the
        store away) is said once and tried again at the next turn, and following goes on."""
        now = time.monotonic()
        if self._closed or (self._pruned is not None and now - self._pruned < self.PRUNE_EVERY):
            return
        self._pruned = now
        try:
            if self.ws.prune_changes().more:
                self._pruned = None
        except (SkillshelfError, OSError) as exc:
            self._warn("prune", f"pruning the team store's change stream failed ({exc}); it grows until a "
                                "later try succeeds")
            return
        self._warned.discard("prune")

    def _catch_up(self) -> list[Path]:
        paths: list[Path] = []
        todo = set(self._retry)
        everything = set(self._retry_all)
        while True:
            rows, through = self.ws.changes(self._last, sorted(self._missing))
            if through > self._last or any(s <= through for s in self._missing):
                # rows this server never read were pruned: what they said is lost, so the
                # store is read whole as at a fresh start (skills, drafts, and every
                # subscriber's kind); the changes named so far are covered by that
                paths += self._resync(through)
                todo = set()
                everything = set(self._subscribers)
                break
            fresh = [r for r in rows if r[0] > self._last]
            for seq, kind, key in rows:
                self._missing.pop(seq, None)
                todo.add((kind, key))
            if fresh:
                got = {r[0] for r in fresh}
                now = time.monotonic()
                top = max(got)
                if top - self._last <= 100_000:
                    for s in range(self._last + 1, top):
                        if s not in got:
                            self._missing.setdefault(s, now)
                self._last = top
            if len(fresh) < 10_000:
                break
        cutoff = time.monotonic() - self.GAP_WAIT
        self._missing = {s: t for s, t in self._missing.items() if t >= cutoff}
        self._retry = set()
        self._retry_all = set()
        others: dict[str, list[str]] = {}
        for kind, key in sorted(todo):
            try:
                if kind == "skill":
                    if self.pull(key):
                        paths.append(self.workspace / key)
                elif kind == "draft":
                    self.pull_draft(key)
                elif kind in self._subscribers and kind not in everything:
                    others.setdefault(kind, []).append(key)
            except (SkillshelfError, OSError, ValueError) as exc:
                self._retry.add((kind, key))
                self._warn(f"pull:{key}", f"cannot bring {key} in from the team store ({exc}); trying again")
        # None: every key of the kind (``subscribe``)
        tell: list[tuple[str, list[str] | None]] = [*others.items(),
                                                    *((k, None) for k in sorted(everything & set(self._subscribers)))]
        for kind, keys in tell:
            for fn in self._subscribers[kind]:
                try:
                    fn(keys)
                except Exception as exc:  # noqa: BLE001 -- one subscriber's failure must not stop the stream
                    if keys is None:
                        self._retry_all.add(kind)
                    else:
                        self._retry.update((kind, k) for k in keys)
                    self._warn(f"{kind}:{fn!r}", f"following the team store's {kind} changes failed ({exc}); "
                                                 "trying again")
        return paths

    def _resync(self, through: int) -> list[Path]:
        """Bring everything in again, as :meth:`start` does: the position is taken first and
        kept only once the whole folder has been compared (a pass that fails leaves the gap in
        place, so the next pass tries again). Returns the skill folders that changed."""
        print(f"skillshelf: this server last read change {self._last} of the team store, and changes up to "
              f"{through} have been pruned since (kept: a week, and the newest 10,000): bringing everything in "
              "again", file=sys.stderr)
        last, missing = self._position()
        paths = self.pull_all()
        self._last, self._missing = last, missing
        self.resyncs += 1
        return paths

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            print(f"skillshelf: {message}", file=sys.stderr)

    def close(self, wait: float = 5.0) -> None:
        """Stop following; a pass in progress may end first (at most ``wait`` seconds)."""
        self._closed = True
        self._stop.set()
        t = self._edit_thread
        if t is not None and t is not threading.current_thread():
            t.join(wait)
        if self._follow_lock.acquire(timeout=wait):
            self._follow_lock.release()

    def names(self) -> Iterable[str]:
        return sorted(p.name for p in self.workspace.iterdir() if p.is_dir()) if self.workspace.is_dir() else []
