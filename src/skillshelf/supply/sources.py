"""Sources: collections the library fetched itself, from git or an archive, at an exact commit.

A source lives in ``<home>/sources/LABEL/`` (the files of the commit, no ``.git``) and is a
read-only root of the library; its bare git repository is kept in ``<home>/sources/.git-cache/``.
``skillshelf.lock`` in the home records each source's commit and every file's digest (``lock``).

Every change is made in a temporary folder under ``<home>/sources/.tmp/`` and renamed into place,
the lock written last: a failure or Ctrl-C leaves the previous folder, the previous lock and no
half-written source. An update keeps a person's edits of the source's skills (``source_edits``:
merged three-way with upstream, a conflict to the review queue), those made in the source's folder
itself first made workspace copies (``kept_edits``). A pinned source's changed
skills are held until trusted, as any pinned root's.

With a team store the sources and their lock live in the store and every server fetches the
locked commits itself (``shared_sources``). Adding, updating and removing a source is a
curator's (``caller``: a token's ``Caller``; None is the owner: the CLI, a local library).

``Sources`` is the service the facade exposes as ``Library.sources``."""

from __future__ import annotations

import builtins
import contextlib
import datetime as _dt
import functools
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from .. import config as configmod
from ..access import Caller, authorize
from ..catalog.roots import make_roots
from ..checks import Check
from ..errors import ConflictError, NotFoundError, SkillshelfError, ValidationError
from ..files import FileRefused, locked, read_text_bounded, write_file
from ..net import redact_text, redact_url
from ..store.protocols import SourceLockStore
from . import fetch as fetchmod, home_roots, lock as lockmod, lock_pins, lock_restore, person_files, swap
from .fetch import SourceError, Spec
from .kept_edits import KeptEdit, KeptEdits
from .shared_sources import SharedSources
from .skill_audit import audit_folder
from .source_edits import EditedCopies

LABEL_RE = lockmod.LABEL_RE
RESERVED = lockmod.RESERVED


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


@dataclass
class SkillChange:
    path: str                     # the skill folder relative to the source
    change: str                   # added | removed | changed | moved
    files: list[str] = field(default_factory=list)        # the files that differ
    findings: list[dict] = field(default_factory=list)    # the audit of the new text (medium and high)
    edit: str | None = None       # a person's copy: merged | conflict | kept (already has it) | review (pinned)
    #                               | failed (the merge could not be saved)
    copy: str | None = None       # the workspace copy's name
    note: str = ""
    # (base, your copy, upstream's new text, the merge) of a copy's SKILL.md
    sides: tuple[str, str, str, Any] | None = field(default=None, repr=False)
    # the copy's other files upstream changed too (``source_edits.FileEdit``: merged | kept | conflict | pinned)
    file_edits: list[Any] = field(default_factory=list, repr=False)
    moved_from: str | None = None  # change "moved": the folder upstream moved it from (``source_edits.moves``)
    untaken: bool = False          # not a change of this update: upstream's text the copy has not taken yet

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "change": self.change, "files": self.files, "findings": self.findings,
                "edit": self.edit, "copy": self.copy, "note": self.note, "untaken": self.untaken,
                "file_edits": [f.as_dict() for f in self.file_edits], "moved_from": self.moved_from}


class Fetched(NamedTuple):
    """What a fetch wrote: the tree (a temporary folder), the commit (or the content's sha256),
    notes on what was left out, and for a tree made from the previous one, the paths that changed."""

    tree: Path
    commit: str
    notes: list[str]
    changed: dict[str, str] | None = None


@dataclass
class UpdatePlan:
    """What an update of one source would do (``Sources.plan``); ``apply`` it or let it go."""

    label: str
    old: lockmod.SourceEntry
    new: lockmod.SourceEntry
    tree: Path | None                      # the fetched files, in a temporary folder
    changes: list[SkillChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    drift: list[lockmod.Drift] = field(default_factory=list)   # files on disk that differ from the lock
    kept: list[KeptEdit] = field(default_factory=list)         # what becomes of a person's edits among them
    unreadable: list[str] = field(default_factory=list)        # added or changed skills that cannot be read
    unlisted: list[dict] = field(default_factory=list)  # a person's files the lock does not list: carried or kept
    applied: bool = False
    held: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None               # this source could not be fetched (the others still are)

    @property
    def moved(self) -> bool:
        return self.error is None and (self.old.commit != self.new.commit or bool(self.changes) or bool(self.drift))

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "from": self.old.commit, "to": self.new.commit, "ref": self.new.ref,
                "changes": [c.as_dict() for c in self.changes], "notes": self.notes, "applied": self.applied,
                "drift": [d.as_dict() for d in self.drift], "kept": [k.as_dict() for k in self.kept],
                "unreadable": self.unreadable, "unlisted": self.unlisted,
                "held": self.held, "seconds": self.seconds, "error": self.error}


class Sources:
    """Given ``config`` (() -> the library's Config), ``roots`` (the facade's list of roots: a
    source added or removed is put in it in place, so every service sees it at once), ``sync``
    (index the roots now), ``supply`` (the ``SupplyChain``: pins, held skills, the audit),
    ``records`` (the skills of a root label), ``evolver`` and ``review`` (() -> evolution's
    ``Evolver`` and ``ReviewQueue``), ``unpack`` (the safe archive and folder reader) and
    ``locks`` (the team store's sources; None: ``skillshelf.lock`` in the home is the truth)."""

    def __init__(self, config: Callable[[], Any], *, roots: Callable[[], list], sync: Callable[..., Any],
                 supply: Any, records: Callable[[str | None], list], evolver: Callable[[], Any],
                 review: Callable[[], Any], unpack: Callable[[Path], Any], locks: SourceLockStore | None = None):
        self._config, self._roots, self._sync, self.supply = config, roots, sync, supply
        self._records, self._evolver, self._review, self._unpack = records, evolver, review, unpack
        self.shared = SharedSources(self, locks) if locks is not None else None
        self.edits = EditedCopies(self, SkillChange)
        self.kept = KeptEdits(self)
        getattr(supply, "on_pins", []).append(functools.partial(lock_pins.follow, self))  # the lock says what is pinned

    # --- where things are ---------------------------------------------------------------
    @property
    def home(self) -> Path:
        return Path(self._config().home)

    @property
    def base(self) -> Path:
        return self.home / "sources"

    @property
    def lock_path(self) -> Path:
        return self.home / lockmod.LOCK_NAME

    @staticmethod
    def _within(base: Path, name: str, label: str) -> Path:
        """``base / name``, refused unless it is a folder directly inside ``base`` (a label that
        is a path would move or delete folders elsewhere)."""
        path = base / name
        if not lockmod.label_ok(label) or path.parent != base or Path(os.path.normpath(path)).parent != base:
            raise ValidationError(f"{label[:80]!r} cannot be a source's label",
                                  fix="check skillshelf.lock (or the team's lock): a label is 1-64 characters "
                                      "of a-z, 0-9, '.', '_' and '-'")
        return path

    def folder(self, label: str) -> Path:
        return self._within(self.base, label, label)

    def _cache(self, label: str) -> Path:
        return self._within(self.base / ".git-cache", f"{label}.git", label)

    def _bases(self, label: str) -> Path:
        return self._within(self.base / ".bases", label, label)

    def _state_path(self) -> Path:
        return self.base / ".state.json"

    @property
    def team(self) -> bool:
        """Whether the sources and their lock live in a team store."""
        return self.shared is not None

    def entries(self) -> list[lockmod.SourceEntry]:
        return lockmod.read(self.lock_path) if self.shared is None else self.shared.entries()

    def documents(self) -> dict[str, str]:
        """The lock as a team store keeps it: each source's document, by label."""
        return lockmod.documents(self.entries())

    def _write_lock(self, before: list[lockmod.SourceEntry], after: list[lockmod.SourceEntry], *,
                    caller: Caller | None = None) -> None:
        """Move the lock from ``before`` (read under the home's lock) to ``after``."""
        if self.shared is None:
            lockmod.write(self.lock_path, lock_pins.reviewed(self, after))
        else:
            self.shared.write(before, after, caller=caller)

    def follow(self, labels: builtins.list[str] | None = None) -> builtins.list[str]:
        """A team server: bring this server's sources to the team's lock (``SharedSources.follow``)."""
        return [] if self.shared is None else self.shared.follow(labels)

    def failed_follows(self) -> builtins.list[str]:
        """A team server: the sources whose last fetch of the team's lock failed and that it
        does not hold at that commit (fetched again by ``follow``)."""
        if self.shared is None:
            return []
        return sorted(lb for lb, st in self._state().items()
                      if isinstance(st, dict) and st.get("failed") and st.get("failed") != st.get("installed"))

    @staticmethod
    def _may(caller: Caller | None, what: str) -> None:
        authorize(caller, "sources", what)

    def entry(self, label: str) -> lockmod.SourceEntry:
        for e in self.entries():
            if e.label == label:
                return e
        known = [e.label for e in self.entries()]
        raise NotFoundError(f"no source {label!r} in this library", suggestions=known[:3] or None,
                            fix=None if known else "add one with `skillshelf sources add SOURCE`")

    def _tmp(self, label: str) -> contextlib.AbstractContextManager[Path]:
        return swap.temporary(self.base, label)

    def _reroot(self) -> None:
        """Put the saved roots (sources included) in the facade's list of roots, in place."""
        cfg = self._config()
        cur = self._roots()
        flag = [p for p in cfg.roots if cfg.root_origins.get(str(p), "flag") != "file"]
        paths = [p for p in [*configmod.saved_roots(cfg.home), *flag] if Path(p).is_dir()]
        cur[:] = make_roots(cfg.workspace, paths, include_clients=cfg.client_roots)

    def _root_label(self, label: str) -> str | None:
        folder = self.folder(label).resolve()
        return next((r.label for r in self._roots() if r.path == folder), None)

    @staticmethod
    def _label_ok(label: str) -> None:
        if not lockmod.label_ok(label):
            raise ValidationError(f"{label!r} cannot be a source's label",
                                  fix="pass --name with 1-64 characters of a-z, 0-9, '.', '_' and '-' "
                                      "(not workspace, project or user)")

    def _check_label(self, label: str, entries: list[lockmod.SourceEntry]) -> None:
        self._label_ok(label)
        used = {e.label for e in entries} | {r.label for r in self._roots()}
        if label in used or self.folder(label).exists():
            raise ConflictError(f"the label {label!r} is already used in this library",
                                fix="pass --name with another label (see `skillshelf sources list`)")

    # --- fetching ------------------------------------------------------------------------
    def _fetch(self, spec: Spec, label: str, tmp: Path, *, commit: str | None = None,
               cache: Path | None = None, submodules: bool = False,
               previous: tuple[str, Path] | None = None, listed: Collection[str] = ()) -> Fetched:
        """Fetch ``spec`` into ``tmp/tree``. ``cache``: the bare repository to fetch into (a new one
        in ``tmp/cache.git`` if absent). ``previous``: (commit, folder) of the tree as exported before:
        the files of that commit it holds unchanged (``listed``: the lock's, checked) are linked, not
        written again; no other file of it goes into the new tree."""
        tree = tmp / "tree"
        if spec.kind == "git":
            git_dir = cache if cache is not None and cache.is_dir() else tmp / "cache.git"
            if not git_dir.is_dir():
                fetchmod.init_cache(git_dir, spec.url)
            fetchmod.fetch(git_dir, spec.url)
            got = fetchmod.resolve(git_dir, spec.url, commit or spec.ref)
            if commit and not got.startswith(commit):
                raise SourceError(f"{spec.url} has no commit {commit}", fix="check the lock file")
            if not fetchmod.is_tree(git_dir, got, spec.subdir):
                raise SourceError(f"--path {spec.subdir} does not exist in {spec.url} at {got[:12]}",
                                  fix="pass --path with a folder of the repository, or leave it out")
            if previous is not None and not submodules:
                was, folder = previous
                changed = fetchmod.changed_paths(git_dir, was, got, spec.subdir)
                ups = None if changed is None else person_files.upstreams(git_dir, was, spec.subdir, folder, listed)
                if changed is not None and ups is not None:
                    notes = fetchmod.export_changes(git_dir, got, spec.subdir, changed, folder, tree, ups)
                    if notes is not None:
                        return Fetched(tree, got, notes, changed)
            notes = fetchmod.export(git_dir, got, spec.subdir, tree, url=spec.url, submodules=submodules)
            return Fetched(tree, got, notes)
        src, digest = fetchmod.read_archive(spec, tmp, self._unpack)
        if commit and digest != commit:
            raise SourceError(f"{spec.url} has changed: its sha256 is {digest}, the lock says {commit}",
                              fix="the archive at that address is not the one locked; add it again to take it")
        if spec.subdir and not any(n.startswith(spec.subdir + "/") or f"/{spec.subdir}/" in n for n in src.files):
            raise SourceError(f"--path {spec.subdir} does not exist in {spec.url}", fix="pass --path with a folder of the source that holds the skills")
        if fetchmod.write_files(src.files, src.executable, tree, spec.subdir) == 0:
            raise fetchmod.no_files(spec, src.files)
        return Fetched(tree, digest, list(src.notes))

    @staticmethod
    def _where(spec: Spec) -> str:
        return spec.url + (f" (--path {spec.subdir})" if spec.subdir else "")

    # --- add ------------------------------------------------------------------------------
    def spec(self, source: str, *, label: str | None = None, ref: str = "", path: str = "") -> Spec:
        """What ``add`` would fetch, and under which label: ``ValidationError`` when an argument is
        malformed (SOURCE, ``--name``, ``--ref``, ``--path``), before anything is fetched."""
        gh = self._config().sources.github_base
        spec = fetchmod.parse(source, github_base=gh, ref=ref, subdir=path)
        if spec.kind != "git" and spec.ref:
            raise ValidationError("--ref applies to git sources only", fix="leave out --ref for an archive or folder")
        spec = Spec(spec.kind, spec.url, spec.subdir, spec.ref, label or spec.label)
        self._label_ok(spec.label)
        return spec

    def add(self, source: str, *, label: str | None = None, ref: str = "", path: str = "",
            pin: bool = False, submodules: bool = False, progress: dict | None = None,
            caller: Caller | None = None) -> dict[str, Any]:
        """Fetch a source into ``sources/LABEL``, lock it, make it a read-only root, index and audit it.
        ``progress``: the sync's callbacks (``progress``, ``embed_progress``) for the indexing."""
        self._may(caller, "adding a source")
        spec = self.spec(source, label=label, ref=ref, path=path)
        label = spec.label
        if submodules and spec.kind != "git":
            raise ValidationError("--submodules applies to git sources only", fix="leave out --submodules")
        timing: dict[str, float] = {}
        with locked(self.home, "sources"):
            entries = self.entries()
            self._check_label(label, entries)
            t0 = time.perf_counter()
            with self._tmp(label) as tmp:
                tree, commit, notes, _ = self._fetch(spec, label, tmp, submodules=submodules)
                timing["fetch"] = time.perf_counter() - t0
                skills, more = lockmod.scan(tree, label)
                more += fetchmod.uncommitted(spec.url) if spec.kind == "git" else []
                timing["lock"] = time.perf_counter() - t0 - timing["fetch"]
                if not skills:
                    raise SourceError(f"no SKILL.md in {self._where(spec)}",
                                      fix="pass --path with the folder that holds the skill folders")
                entry = lockmod.SourceEntry(label=label, source=source, kind=spec.kind, url=spec.url,
                                            ref=spec.ref, path=spec.subdir, commit=commit, pinned=pin,
                                            submodules=submodules, updated=_now(), skills=skills)
                self._install([(entry, tree, tmp / "cache.git")], entries, caller=caller)
        t0 = time.perf_counter()
        self._reroot()
        report = self._sync(**(progress or {}))
        timing["index"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        root = self._root_label(label) or label
        if pin:
            self.supply.pin(root)
        findings = self.supply.audit(root=root, min_severity="medium")
        timing["audit"] = time.perf_counter() - t0
        names = sorted(r.name for r in self._records(root))
        return {**entry.summary(), "root": root, "notes": notes + more, "findings": findings,
                "unreadable": self.unreadable(entry),
                "indexed": getattr(report, "added", None), "names": names, "seconds": timing}

    def _install(self, items: list[tuple[lockmod.SourceEntry, Path, Path]],
                 entries: list[lockmod.SourceEntry], *, caller: Caller | None = None) -> None:
        """Rename fetched trees (and their git caches) into place, save the roots, write the lock;
        on any failure (Ctrl-C included) undo what was done, in reverse."""
        done: list[Callable[[], Any]] = []
        home = self.home
        try:
            for entry, tree, cache in items:
                dest = self.folder(entry.label)
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.rename(tree, dest)
                done.append(functools.partial(shutil.rmtree, dest, ignore_errors=True))
                if entry.kind != "git":      # what the archive held (a person's file is told from it)
                    person_files.record(self.base, entry.label, entry.commit, person_files.listing(dest))
                if cache.is_dir():
                    target = self._cache(entry.label)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.rmtree(target, ignore_errors=True)
                    os.rename(cache, target)
                    done.append(functools.partial(shutil.rmtree, target, ignore_errors=True))
                configmod.add_root(home, dest)
                done.append(functools.partial(configmod.remove_root, home, dest))
            self._write_lock(entries, [*entries, *(e for e, _, _ in items)], caller=caller)
        except BaseException:
            for undo in reversed(done):
                with contextlib.suppress(Exception):
                    undo()
            raise
        for entry, _, _ in items:
            self._installed(entry)

    def unreadable(self, entry: lockmod.SourceEntry) -> builtins.list[str]:
        """The source's skills the library cannot read (left out of the index), each ``PATH/SKILL.md: why``."""
        indexed = {r.id.split(":", 1)[1] for r in self._records(self._root_label(entry.label) or entry.label)}
        return lockmod.unreadable(self.folder(entry.label), [s.path for s in entry.skills if s.path not in indexed])

    def _installed(self, entry: lockmod.SourceEntry) -> None:
        """A team server: note the commit now in ``sources/LABEL`` (``follow`` skips it)."""
        if self.shared is not None:
            self._set_state(entry.label, installed=entry.commit, team=True, refused=None, failed=None)

    # --- list, remove ---------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads(read_text_bounded(self._state_path(), 4_000_000))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError, FileRefused, RecursionError):     # (nested thousands deep)
            return {}

    def _set_state(self, label: str, **values: Any) -> None:
        data = self._state()
        data.setdefault(label, {}).update(values)
        with contextlib.suppress(SkillshelfError):
            write_file(self._state_path(), json.dumps(data, indent=2, sort_keys=True))

    def list(self) -> list[dict[str, Any]]:
        """Each source: label, source, ref asked, commit locked, skills, pinned, behind upstream
        (when an update or a dry run last looked), last update, skills held."""
        held = self.supply.held()
        state = self._state()
        pins = self.supply.pins.pins.root_labels() if self.shared is not None else None   # (a team's: its store's)
        out = []
        for e in self.entries():
            root = self._root_label(e.label) or e.label
            e = e if pins is None else replace(e, pinned=root in pins)
            st = state.get(e.label, {})
            behind = None       # known once an update (or a dry run) has fetched upstream's head
            if e.kind == "git" and st.get("upstream") and self._cache(e.label).is_dir():
                behind = fetchmod.ahead(self._cache(e.label), e.commit, st["upstream"])
            out.append({**e.summary(), "root": root, "behind": behind, "checked": st.get("checked"),
                        "unreadable": self.unreadable(e),
                        "held": sum(1 for sid in held if sid.startswith(root + ":"))})
        return out

    def remove(self, label: str, *, caller: Caller | None = None) -> dict[str, Any]:
        """Forget a source: its root, its folder, its git cache, its kept bases and its lock entry
        (a person's workspace copies of its skills stay)."""
        self._may(caller, "removing a source")
        with locked(self.home, "sources"):
            entries = self.entries()
            entry = next((e for e in entries if e.label == label), None)
            if entry is None:
                self.entry(label)          # raises, naming the labels
                raise AssertionError
            kept = self.kept.before_removal(entry, entry.commit)      # before anything is forgotten
            root = self._root_label(label)
            if self.shared is not None:     # the team's lock first: a refusal leaves everything as it was
                self._write_lock(entries, [e for e in entries if e.label != label], caller=caller)
            if root is not None and any(p["root"] == root for p in self.supply.pinned_roots()):
                self.supply.unpin(root, record=False)     # (the lock is written below)
            if self.shared is None:
                self._write_lock(entries, [e for e in entries if e.label != label])
            self._drop_local(label)
        self._reroot()
        self._sync()
        return {**entry.summary(), "removed": True, "kept": str(kept) if kept else "",
                "kept_files": sum(1 for p in kept.rglob("*") if p.is_file()) if kept else 0}

    def _drop_local(self, label: str) -> None:
        """This server's copy of a source: its saved root, folder, git cache and kept bases."""
        with contextlib.suppress(SkillshelfError):
            configmod.remove_root(self.home, self.folder(label))
        for p in (self.folder(label), self._cache(label), self._bases(label)):
            shutil.rmtree(p, ignore_errors=True)
        person_files.forget(self.base, label)
        if self.shared is not None:
            data = self._state()
            if data.pop(label, None) is not None:
                with contextlib.suppress(SkillshelfError):
                    write_file(self._state_path(), json.dumps(data, indent=2, sort_keys=True))

    # --- update ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def planning(self, labels: builtins.list[str] | tuple[str, ...] = (), *,
                 to: str | None = None, caller: Caller | None = None) -> Iterator[builtins.list[UpdatePlan]]:
        """Fetch each source (all when ``labels`` is empty) and say what an update would do; the
        plans hold the fetched files until the ``with`` ends. ``apply`` each one inside it."""
        self._may(caller, "updating a source")
        entries = self.entries()
        if not entries:
            raise NotFoundError("this library has no sources", fix="add one with `skillshelf sources add SOURCE`")
        chosen = [self.entry(lb) for lb in labels] if labels else entries
        if to and len(chosen) != 1:
            raise ValidationError("--to moves one source",
                                  fix="name the source: `skillshelf sources update LABEL --to REF`")
        with contextlib.ExitStack() as stack:
            plans = []
            for e in chosen:
                tmp = stack.enter_context(self._tmp(e.label))
                try:
                    plans.append(self._plan(e, tmp, to))
                except SkillshelfError as exc:
                    if len(chosen) == 1:     # one source asked for: its error is the command's
                        raise
                    plans.append(UpdatePlan(e.label, e, e, None, error=redact_text(str(exc))))
            yield plans

    def _plan(self, old: lockmod.SourceEntry, tmp: Path, to: str | None) -> UpdatePlan:
        t0 = time.perf_counter()
        spec = Spec(old.kind, old.url, old.path, to if to is not None else old.ref, old.label)
        cache = self._cache(old.label)
        if spec.kind == "git" and not cache.is_dir():   # a restored or older home: a new cache
            fetchmod.init_cache(cache, spec.url)
        drift = lockmod.check(old, self.folder(old.label))
        t1 = time.perf_counter()
        # an unchanged folder's files of the old commit: the new tree is made from them and git's diff
        previous = None if drift else (old.commit, self.folder(old.label))
        tree, commit, notes, changed = self._fetch(spec, old.label, tmp, cache=cache, submodules=old.submodules,
                                                   previous=previous, listed=person_files.listed(old))
        t2 = time.perf_counter()
        skills, more = lockmod.scan(tree, old.label, reuse=old.by_path() if changed is not None else None,
                                    changed=changed)
        t3 = time.perf_counter()
        new = lockmod.SourceEntry(label=old.label, source=old.source, kind=old.kind, url=old.url,
                                  ref=spec.ref, path=old.path, commit=commit, pinned=old.pinned,
                                  submodules=old.submodules, updated=_now(), skills=skills)
        notes += fetchmod.uncommitted(spec.url) if spec.kind == "git" else person_files.damaged(self.base, old.label)
        plan = UpdatePlan(old.label, old, new, tree, notes=notes + more, drift=drift,
                          kept=self.kept.plan(old, drift))
        plan.seconds.update(drift=t1 - t0, fetch=t2 - t1, lock=t3 - t2)
        if spec.kind == "git":
            head = fetchmod.resolve(cache, spec.url, old.ref)
            self._set_state(old.label, upstream=head, checked=_now())
        t0 = time.perf_counter()
        before, after = old.by_path(), new.by_path()
        for path in sorted(set(before) | set(after)):
            a, b = before.get(path), after.get(path)
            if a is None and b is not None:
                plan.changes.append(SkillChange(path, "added", [f.path for f in b.files]))
            elif b is None and a is not None:
                plan.changes.append(SkillChange(path, "removed", [f.path for f in a.files]))
            elif a is not None and b is not None:
                da, db = a.digests(), b.digests()
                diff = sorted(f for f in set(da) | set(db) if da.get(f) != db.get(f))
                if diff:
                    plan.changes.append(SkillChange(path, "changed", diff))
        for c in plan.changes:
            if c.change != "removed":
                md = tree.joinpath(*([] if c.path == "." else c.path.split("/"))) / "SKILL.md"
                with contextlib.suppress(OSError):
                    c.findings = [f.as_dict() for f in audit_folder(md)[0] if f.severity in ("medium", "high")]
        plan.seconds["audit"] = time.perf_counter() - t0
        plan.unreadable = lockmod.unreadable(tree, [c.path for c in plan.changes if c.change != "removed"])
        self.edits.plan(plan)
        plan.unlisted = self.kept.unlisted(plan) if plan.moved else []   # (what applying it does with them)
        return plan

    def apply(self, plan: UpdatePlan, *, progress: dict | None = None, caller: Caller | None = None) -> UpdatePlan:
        """Put the fetched files in place, move the lock, index; then merge the edited copies."""
        self._may(caller, "updating a source")
        if not plan.moved:
            return plan
        with locked(self.home, "sources"):
            entries = self.entries()
            cur = next((e for e in entries if e.label == plan.label), None)
            if cur is None or cur.commit != plan.old.commit:
                raise ConflictError(f"the source {plan.label} changed while this update was planned",
                                    fix="run `skillshelf sources update` again")
            # a person's edits in the source's folder become workspace copies before it is put back
            since, t0 = time.time() - 1.0, time.perf_counter()   # (what is written from here on: looked at again)
            plan.drift = lockmod.check(plan.old, self.folder(plan.label))
            plan.kept = self.kept.keep(plan, plan.drift) if plan.drift else []
            if any(k.action == "copy" for k in plan.kept):
                self.edits.plan(plan)         # the new copies are merged with upstream as any copy is
            # the bases of the edited copies are kept before anything moves
            for c in plan.changes:
                if c.sides is not None and c.sides[0]:
                    self.edits.keep_base(plan.label, c.path, c.sides[0])
            dest, tree = self.folder(plan.label), plan.tree
            assert tree is not None
            listing = person_files.listing(tree) if plan.new.kind != "git" else None
            plan.unlisted = self.kept.keep_unlisted(plan)      # hidden files, node_modules, ... a person put there
            aside = tree.parent / "previous"
            had = dest.exists()
            if had:
                os.rename(dest, aside)
            try:
                if had:            # what a person wrote while this ran: kept, never carried in a linked file
                    plan.unlisted += self.kept.late(plan, aside, since)
                plan.seconds["keep"] = time.perf_counter() - t0
                os.rename(tree, dest)
                try:
                    self._write_lock(entries, [plan.new if e.label == plan.label else e for e in entries],
                                     caller=caller)
                except BaseException:
                    os.rename(dest, tree)
                    raise
            except BaseException:
                if had:        # (when something made the folder again meanwhile, it is kept under .kept/)
                    swap.put_back(self.base, plan.label, aside, dest)
                raise
            self._installed(plan.new)
            if listing is not None:
                person_files.record(self.base, plan.label, plan.new.commit, listing)
            plan.tree = None
            # the previous files are deleted beside the indexing (on a disk with online discard,
            # deleting thousands of files takes longer than indexing the changed skills)
            trash = self.base / ".trash" / aside.parent.name
            if had:
                with contextlib.suppress(OSError):    # else it goes with the plan's temporary folder
                    trash.parent.mkdir(parents=True, exist_ok=True)
                    os.rename(aside, trash)
        # (the whole trash: what an interrupted update left there goes too)
        sweeper = threading.Thread(target=shutil.rmtree, args=(trash.parent,), kwargs={"ignore_errors": True},
                                   name="skillshelf-sources-trash", daemon=True)
        sweeper.start()
        t0 = time.perf_counter()
        try:
            self._sync(**(progress or {}))
        finally:
            plan.seconds["index"] = time.perf_counter() - t0
            sweeper.join()
            plan.seconds["cleanup"] = time.perf_counter() - t0 - plan.seconds["index"]
        plan.applied = True
        t0 = time.perf_counter()
        self.edits.merge(plan)
        plan.seconds["merge"] = time.perf_counter() - t0
        root = self._root_label(plan.label) or plan.label
        plan.held = sorted(sid for sid in self.supply.held() if sid.startswith(root + ":"))
        return plan

    # --- restore --------------------------------------------------------------------------
    def restore(self, lockfile: str | Path, *, progress: dict | None = None,
                caller: Caller | None = None) -> dict[str, Any]:
        """Fetch every source of a lock file at its locked commit, verify every file's digest and
        size, and only then put them in place (exit 1 naming the file on a mismatch). A source this
        home has already is moved to the locked commit, a person's edits kept (``lock_restore``)."""
        self._may(caller, "restoring sources")
        path = Path(lockfile).expanduser()
        try:
            text = read_text_bounded(path, lockmod.MAX_LOCK_BYTES)
        except FileRefused as exc:
            raise ValidationError(f"{path}: {exc.message}", fix="pass a skillshelf.lock") from None
        except OSError as exc:
            raise NotFoundError(f"cannot read {path}: {exc.strerror or exc}", fix="pass a skillshelf.lock") from None
        try:
            wanted = lockmod.parse(text, str(path))
        except ValidationError as exc:
            if "not valid TOML" not in exc.message:
                raise
            raise ValidationError(f"{path} is not a {lockmod.LOCK_NAME} (it is not TOML)",
                                  fix=f"pass the {lockmod.LOCK_NAME} of a library with sources") from None
        if not wanted:
            raise ValidationError(f"{path} names no source", fix="pass the skillshelf.lock of a library with sources")
        # this home's own lock is damaged: set aside (named) once the good lock's sources are verified
        damaged, aside = lock_restore.damaged(self), None
        have = {} if damaged else {e.label: e for e in self.entries()}
        for e in wanted:       # a source this home has is moved to the locked commit (``lock_restore``)
            if e.label in have:
                lock_restore.same_source(have[e.label], e)
        fresh = [e for e in wanted if e.label not in have]
        with locked(self.home, "sources"), contextlib.ExitStack() as stack:
            entries = [] if damaged else self.entries()
            for e in fresh:
                if not (damaged and self.folder(e.label).exists()):
                    self._check_label(e.label, entries)
            items = []
            for e in fresh:
                tmp = stack.enter_context(self._tmp(e.label))
                spec = Spec(e.kind, e.url, e.path, e.ref, e.label)
                tree = self._fetch(spec, e.label, tmp, commit=e.commit, submodules=e.submodules).tree
                bad = lockmod.check(e, tree)
                if bad:
                    first = bad[0]
                    raise SourceError(f"{e.label}: {first.file} does not match the lock ({first.problem})"
                                      + (f", and {len(bad) - 1} more" if len(bad) > 1 else ""),
                                      fix="the source is not what was locked; nothing was written")
                items.append((e, tree, tmp / "cache.git"))
            if damaged:
                aside = lock_restore.set_aside(self, fresh)
            if items:
                self._install(items, entries, caller=caller)
        self._reroot()
        self._sync(**(progress or {}))
        # pinned at what was reviewed where the lock was written; a hold here is kept (``lock_restore``)
        pins = {e.label: lock_restore.pin_as_locked(self, e, caller) for e in fresh}
        moved = [lock_restore.bring(self, e, progress=progress, caller=caller) for e in wanted if e.label in have]
        files = sum(len(s.files) for e in wanted for s in e.skills)
        return {"sources": [{**e.summary(), **pins[e.label]} for e in fresh], "moved": moved, "files_verified": files,
                **({"set_aside": aside} if aside else {})}

    # --- checks ---------------------------------------------------------------------------
    def check(self) -> builtins.list[lockmod.Drift]:
        """Every file of every source that differs from the lock."""
        out: builtins.list[lockmod.Drift] = []
        for e in self.entries():
            out += lockmod.check(e, self.folder(e.label))
        return out

    def checks(self) -> builtins.list[Check]:
        """For ``doctor``: sources whose folder drifted from the lock."""
        try:
            entries = self.entries()
        except SkillshelfError as exc:
            return [Check("sources", "fail", str(exc))]
        out = [] if self.shared is None else self.shared.checks(entries)
        out += home_roots.checks(self.home)       # a root in another home's sources/ (a copied home)
        if not entries:
            return out
        bad = {}
        for e in entries:
            d = lockmod.check(e, self.folder(e.label))
            if d:
                bad[e.label] = d
            elif self._root_label(e.label) is None:     # `roots remove`d: locked, but not searched
                out.append(Check("sources", "warn", f"{e.label} is in {lockmod.LOCK_NAME} but not a root of the "
                                                    f"library: `skillshelf roots add {self.folder(e.label)}`, or "
                                                    f"`skillshelf sources remove {e.label}`"))
        if not bad:
            return out or [Check("sources", "ok", f"{len(entries)} source(s) match {lockmod.LOCK_NAME}")]
        detail = "; ".join(f"{lb}: {len(d)} file(s) differ from the lock (e.g. {d[0].file}, {d[0].problem})"
                           for lb, d in bad.items())
        return [*out, Check("sources", "warn", detail + " — see `skillshelf lock --check`; "
                                                        "`skillshelf sources update LABEL --yes` makes each edited "
                                                        "skill a workspace copy (merged with upstream from then on; "
                                                        "what cannot be is copied to sources/.kept/) and puts the "
                                                        "source's files back")]

    def of(self, rec: Any) -> dict[str, Any] | None:
        """The source a skill came from (its label, URL and commit), for ``show``; for a
        workspace copy of a source's skill, the source of the original."""
        sid = rec.id
        origin = (rec.metadata or {}).get("origin") if rec.kind == "workspace" else None
        ref = origin or sid
        root = ref.split(":", 1)[0]
        for e in self.entries():
            if (self._root_label(e.label) or e.label) == root:
                return {"label": e.label, "url": redact_url(e.url), "commit": e.commit, "ref": e.ref,
                        "path": ref.split(":", 1)[1], "copy_of": origin}
        return None
