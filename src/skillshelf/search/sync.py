"""Sync files → store by content hash; lexical rows; embedding cache.

``sync`` is incremental: a file whose (mtime, size) is unchanged is not read; one whose
bytes hash the same is not re-parsed; vanished files are dropped. ``embed_pending``
fills vectors for skills that have none for the active model, reusing any vector
already computed for the same text (keyed by text hash + model id).

Both can be stopped (Ctrl-C, or a progress callback that raises): they stop at the next
file or embedding batch, commit what was done, and raise. A Ctrl-C becomes ``Interrupted``,
whose ``report`` says what was kept; the next sync goes on from there.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import skill as skillmod, text as textmod
from ..catalog import overlay as overlaymod
from ..catalog.roots import Found, Root, discover, in_scope, path_in_scope
from ..errors import StoreError
from ..files import MAX_SKILL_BYTES, FileRefused, read_bounded
from ..store import Store, now
from ..store.meta import ChangeJournal, IndexMeta
from ..store.skills import SkillIndex
from ..store.vectors import VectorStore
from ..text import name_key, normalized_body_hash, sha256
from . import lexical

Progress = Callable[[int, int], None]


@dataclass
class InvalidFile:
    path: str
    rule: str
    message: str
    line: int | None
    new: bool = True    # not reported by the last sync (a new file, or a new finding)

    def as_dict(self) -> dict:
        return {"path": self.path, "rule": self.rule, "message": self.message, "line": self.line, "new": self.new}


@dataclass
class SyncReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    invalid: list[InvalidFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    embedded: int = 0
    vectors_shared: int = 0     # texts whose vectors were taken from the team store (not embedded here)
    vectors_cached: int = 0     # texts whose vectors this library's cache already held
    seconds: float = 0.0
    cleared_invalid: list[str] = field(default_factory=list)   # invalid before, now fixed or gone
    # for the supply chain (not shown): (id, SKILL.md path) of the skills audited in the sync's
    # transactions, the ids whose audit was dropped (removed or now invalid), and every skill
    # the scan found indexed
    audited: list[tuple[str, str]] = field(default_factory=list, repr=False)
    forgotten: list[str] = field(default_factory=list, repr=False)
    present: list[tuple[str, str]] = field(default_factory=list, repr=False)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    @property
    def new_invalid(self) -> list[InvalidFile]:
        """The invalid files the last sync did not report (or reported with another finding)."""
        return [i for i in self.invalid if i.new]

    def as_dict(self) -> dict:
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "unchanged": self.unchanged, "invalid": len(self.invalid),
                "new_invalid": len(self.new_invalid), "invalid_files": [i.as_dict() for i in self.invalid],
                "cleared_invalid": self.cleared_invalid, "embedded": self.embedded,
                "vectors_shared": self.vectors_shared, "vectors_cached": self.vectors_cached,
                "notes": self.notes, "seconds": round(self.seconds, 3)}

    def _mark(self) -> tuple:
        return (self.added, self.updated, self.removed, self.unchanged, len(self.invalid), len(self.notes),
                len(self.audited), len(self.forgotten))

    def _restore(self, mark: tuple) -> None:
        """Counts as they were at ``mark`` (the work done since was rolled back)."""
        self.added, self.updated, self.removed, self.unchanged, n_invalid, n_notes, n_aud, n_forgot = mark
        del self.invalid[n_invalid:], self.notes[n_notes:], self.audited[n_aud:], self.forgotten[n_forgot:]


class Interrupted(KeyboardInterrupt):
    """A sync or an embedding stopped by Ctrl-C, after committing the work done: ``report``
    says what was kept (for ``embed_pending``: ``embedded`` only). The index is consistent;
    the next sync indexes and embeds the rest."""

    def __init__(self, report: SyncReport):
        super().__init__("interrupted")
        self.report = report


def scan(roots: list[Root], exclude: tuple = (), only: list[tuple[Root, str]] | None = None) \
        -> tuple[list[Found], list[str]]:
    """Every SKILL.md of every root; ``exclude``: folders never walked into from a
    read-only root (the library's home, whose workspace is a root of its own). ``only``:
    the SKILL.md files of these (root, folder) parts (``sources.scope``) instead."""
    found: list[Found] = []
    notes: list[str] = []
    for root, rel in [(r, ".") for r in roots] if only is None else only:
        f, n = discover(root, () if root.kind == "workspace" else exclude, rel)
        found.extend(f)
        notes.extend(n)
    return found, notes


def lexical_fields(sk: skillmod.Skill) -> tuple[str, str, str, str, str]:
    """The five BM25F fields of a skill (see ``lexical.FIELDS``)."""
    heads = " ".join(h for _, h in textmod.headings(sk.body))
    names = sk.name if sk.display_name == sk.name else f"{sk.name} {sk.display_name}"
    return (names, sk.description, " ".join(sk.tags), heads, sk.body)


def _is_active(sk: skillmod.Skill) -> bool:
    return (sk.metadata.get("status") or "active").lower() not in ("inactive", "deprecated", "merged")


BATCH_MIN, BATCH_MAX = 500, 5_000


def sync(store: Store, roots: list[Root], *, progress: Progress | None = None,
         on_skill: Callable[[skillmod.Skill], None] | None = None, exclude: tuple = (),
         auditor=None, only: list[tuple[Root, str]] | None = None) -> SyncReport:
    """Bring the index up to date with the files; ``only``: with the skill folders of these
    (root, folder) parts (``sources.scope``) alone, their rows added, changed or removed as
    a whole sync would, every other row left as it is (and the sync not marked as done:
    ``IndexMeta.last_sync`` is a whole one's). ``on_skill`` sees each added or changed
    skill as it is indexed (a ``Prefetch``). ``auditor`` (an ``auditing.Auditor``): each added
    or changed skill is audited in the transaction that indexes it, and the audit of a skill
    removed or become invalid is dropped in the one that removes it (``report.audited``,
    ``report.forgotten``).

    Safe beside other processes syncing the same database: every decision about a row is
    taken inside the write transaction that acts on it (rows read before it began may be
    stale). Work is committed in batches, so a first index of a large collection keeps its
    progress if it is interrupted and searches can use what is indexed so far. One bad file
    is reported invalid; it never stops the rest.

    Ctrl-C (or an exception ``progress`` raises, to stop) ends it at the next file: the files
    indexed so far are committed, the rest is left to the next sync, and the exception goes
    on (a Ctrl-C as ``Interrupted``, carrying the report of what was kept)."""
    import time

    t0 = time.perf_counter()
    report = SyncReport()
    try:
        _sync(store, roots, report, progress, on_skill, exclude, auditor, only)
    except KeyboardInterrupt as exc:
        report.seconds = time.perf_counter() - t0
        if isinstance(exc, Interrupted):
            raise
        raise Interrupted(report) from exc
    report.seconds = time.perf_counter() - t0
    return report


class _CtrlC:
    """While a sync writes, a Ctrl-C is noted rather than raised where it lands (in the main
    thread, with Python's own handler in place): the sync looks after each file and stops
    there, so it never lands in the middle of merging a batch's postings or committing it
    (which would roll the whole batch back). A second Ctrl-C is raised at once."""

    def __init__(self):
        self.hit = False
        self._old = None

    def __enter__(self) -> "_CtrlC":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._old = signal.signal(signal.SIGINT, self._note)
        return self

    def _note(self, signum, frame) -> None:
        if self.hit:
            raise KeyboardInterrupt
        self.hit = True

    def __exit__(self, *exc) -> None:
        import signal

        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)

    def check(self) -> None:
        if self.hit:
            raise KeyboardInterrupt


def _sync(store: Store, roots: list[Root], report: SyncReport, progress: Progress | None,
          on_skill: Callable[[skillmod.Skill], None] | None, exclude: tuple, auditor=None, only=None) -> None:
    with _CtrlC() as ctrl_c:
        _sync_files(store, roots, report, progress, on_skill, exclude, ctrl_c, auditor, only)
        ctrl_c.check()


def _sync_files(store: Store, roots: list[Root], report: SyncReport, progress: Progress | None,
                on_skill: Callable[[skillmod.Skill], None] | None, exclude: tuple, ctrl_c: _CtrlC,
                auditor=None, only: list[tuple[Root, str]] | None = None) -> None:
    found, report.notes = scan(roots, exclude, only)
    ctrl_c.check()
    skills = SkillIndex(store)
    meta = IndexMeta(store)
    # the rows this sync answers for: every row, or those of the ``only`` folders
    under = None if only is None else [(f"{r.label}:{rel}", f"{r.label}:" if rel == "." else f"{r.label}:{rel}/")
                                       for r, rel in only]
    # A first look outside any transaction, to skip unchanged files cheaply; re-checked below.
    snapshot = skills.file_states(under)
    invalid_rows = {p: r for p, r in skills.invalid_files().items() if only is None or path_in_scope(p, only)}
    seen_ids: set[str] = set()
    seen_invalid: set[str] = set()
    todo: list[Found] = []
    for f in found:
        if f.id in seen_ids:
            continue
        seen_ids.add(f.id)
        if snapshot.get(f.id) == (f.mtime_ns, f.size, f.file):    # (a moved home: the same file elsewhere)
            report.unchanged += 1
            continue
        inv = invalid_rows.get(f.file)
        if f.id not in snapshot and inv is not None and inv["mtime_ns"] == f.mtime_ns and inv["size"] == f.size:
            seen_invalid.add(f.file)
            report.invalid.append(InvalidFile(f.file, inv["rule"], inv["message"], inv["line"]))
            continue
        todo.append(f)

    total = len(todo)
    batch = max(BATCH_MIN, min(BATCH_MAX, total // 10 or 1))
    changed_before = 0
    for start in range(0, total, batch) if total else ():
        chunk = todo[start:start + batch]
        at_start = report._mark()
        stop: BaseException | None = None
        try:
            with store.tx() as tx:
                rows = skills.rows_for(tx, [f.id for f in chunk])
                writer = lexical.Writer(tx)
                for i, f in enumerate(chunk):
                    try:
                        if progress:
                            progress(start + i, total)
                    except BaseException as exc:   # the caller stops the sync (Ctrl-C, a closing library)
                        stop = exc
                        break
                    try:
                        _sync_isolated(tx, writer, f, rows.get(f.id), report, seen_invalid, on_skill, auditor)
                    except KeyboardInterrupt as exc:   # this file was rolled back; the ones before it stay
                        stop = exc
                        break
                    if ctrl_c.hit:
                        stop = KeyboardInterrupt()
                        break
                    if writer.full:
                        writer.flush()
                writer.flush()
                if report.added + report.updated + report.removed > changed_before:
                    changed_before = report.added + report.updated + report.removed
                    meta.bump_generation()
        except KeyboardInterrupt:
            # between two files (reading the batch's rows, merging its postings, committing):
            # the whole batch was rolled back
            report._restore(at_start)
            raise
        if stop is not None:
            raise stop
        ctrl_c.check()     # (noted while the batch was merged and committed: it is kept)
    if progress:
        progress(total, total)
    at_end = report._mark()
    try:
        with store.tx() as tx:
            # rows whose file is gone, decided on the rows as they are now
            for rowid, sid in skills.all_ids(tx, under):
                if sid not in seen_ids and (only is None or in_scope(sid, only)):
                    _delete_rowid(tx, rowid)
                    report.removed += 1
                    if auditor is not None:
                        auditor.forget(sid, tx)
                        report.forgotten.append(sid)
            for path in skills.invalid_paths(tx):
                if path not in seen_invalid and (only is None or path_in_scope(path, only)):
                    skills.clear_invalid(tx, path)
            if report.added + report.updated + report.removed > changed_before:
                meta.bump_generation()
            ChangeJournal.prune(tx)
            if only is None:
                meta.mark_synced(now(), [r.label for r in roots])
    except KeyboardInterrupt:
        report._restore(at_end)
        raise
    # what the caller shows: which invalid files are new, which are no longer invalid
    for bad in report.invalid:
        before = invalid_rows.get(bad.path)
        bad.new = before is None or (before["rule"], before["message"], before["line"]) != (bad.rule, bad.message,
                                                                                            bad.line)
    report.cleared_invalid = sorted(p for p in invalid_rows if p not in seen_invalid)
    seen_ids.clear()
    for f in found:
        if f.id not in seen_ids and f.file not in seen_invalid:
            seen_ids.add(f.id)
            report.present.append((f.id, f.file))


def _sync_isolated(tx, writer: lexical.Writer, f: Found, row, report: SyncReport, seen_invalid: set[str],
                   on_skill, auditor=None) -> None:
    """``_sync_one`` in a savepoint: a file whose row cannot be written (a value SQLite
    refuses, a bug we have not met yet) is rolled back alone and reported invalid; a
    Ctrl-C rolls it back alone and goes on to the caller."""
    import sqlite3

    if row is not None and row["mtime_ns"] == f.mtime_ns and row["size"] == f.size and row["path"] == f.file:
        report.unchanged += 1          # another process indexed it meanwhile
        return
    writer.keep()
    at_start = report._mark()
    try:
        with SkillIndex.isolated(tx):
            _sync_one(tx, writer, f, row, report, seen_invalid, on_skill, auditor)
    except BaseException as exc:
        # its rows are gone: so are its postings and what it added to the report
        writer.discard_last()
        report._restore(at_start)
        if not isinstance(exc, (sqlite3.Error, ValueError, TypeError, OverflowError, RecursionError)):
            raise
        _mark_invalid(tx, f, row, report, seen_invalid, "file.unindexable",
                      f"could not be indexed ({type(exc).__name__}: {str(exc)[:200]})", None, auditor)


def _mark_invalid(tx, f: Found, row, report: SyncReport, seen_invalid: set[str], rule: str, message: str,
                  line: int | None, auditor=None) -> None:
    SkillIndex.mark_invalid(tx, {"path": f.file, "root": f.root.label, "rel": f.rel, "rule": rule,
                                 "message": message, "line": line, "mtime_ns": f.mtime_ns, "size": f.size})
    seen_invalid.add(f.file)
    report.invalid.append(InvalidFile(f.file, rule, message, line))
    if row is not None:
        _delete_rowid(tx, row["rowid"])
        report.removed += 1
        if auditor is not None:
            auditor.forget(f.id, tx)
            report.forgotten.append(f.id)


def _delete_rowid(tx, rowid: int) -> None:
    SkillIndex.delete(tx, rowid)
    lexical.remove(tx, rowid)
    VectorStore.unlink_skill(tx, rowid)


def _sync_one(tx, writer: lexical.Writer, f: Found, row, report: SyncReport, seen_invalid: set[str],
              on_skill: Callable[[skillmod.Skill], None] | None = None, auditor=None) -> None:
    try:
        data = read_bounded(f.path, MAX_SKILL_BYTES)
    except FileRefused as exc:
        _mark_invalid(tx, f, row, report, seen_invalid, exc.rule, exc.message, None, auditor)
        return
    except OSError as exc:
        report.notes.append(f"cannot read {f.path}: {exc.strerror}")
        return
    digest = sha256(data)
    if row is not None and row["content_hash"] == digest:
        SkillIndex.touch(tx, row["rowid"], f.mtime_ns, f.size, f.file)
        report.unchanged += 1
        # touched (a checkout, a copy): its other files may have changed with it
        _audit(tx, auditor, f, data, report)
        return
    parsed = skillmod.parse(data, folder_name=f.folder.name if f.rel != "." else f.root.path.name)
    if parsed.skill is None:
        bad = next(x for x in parsed.findings if x.severity == "fatal")
        _mark_invalid(tx, f, row, report, seen_invalid, bad.rule, bad.message, bad.line, auditor)
        return
    SkillIndex.clear_invalid(tx, f.file)
    sk = parsed.skill
    exp = sk.expires_on()
    values = dict(
        id=f.id, root=f.root.label, kind=f.root.kind, rel=f.rel, path=f.file, name=sk.name,
        name_key=name_key(sk.name), description=sk.description, body=sk.body, skill_type=sk.skill_type,
        tags=",".join(sk.tags), repo=sk.repo, version=sk.version, display_name=sk.display_name,
        metadata=json.dumps(sk.metadata, ensure_ascii=False),
        findings=json.dumps([x.as_dict() for x in parsed.findings], ensure_ascii=False),
        worst=parsed.worst, active=1 if _is_active(sk) else 0, expires_on=exp.isoformat() if exp else None,
        content_hash=digest, body_hash=normalized_body_hash(sk.body), mtime_ns=f.mtime_ns, size=f.size,
        indexed_at=now())
    if row is None:
        rowid = SkillIndex.insert(tx, values)
        report.added += 1
    else:
        rowid = row["rowid"]
        SkillIndex.update(tx, rowid, values)
        VectorStore.unlink_skill(tx, rowid)
        report.updated += 1
    overlaymod.apply_to_row(tx, f.id)
    writer.add(rowid, lexical_fields(sk))
    _audit(tx, auditor, f, data, report)
    if on_skill is not None:
        on_skill(sk)


def _audit(tx, auditor, f: Found, data: bytes, report: SyncReport) -> None:
    """Audit the skill in the transaction that indexes it (its files are read only where
    they changed since its last audit; ``auditing``)."""
    if auditor is None:
        return
    try:
        auditor.audit_skill(f.id, f.file, skill_md_bytes=data, tx=tx)
    except OSError as exc:        # its folder went meanwhile: the next sync sees it
        report.notes.append(f"cannot audit {f.path}: {exc.strerror or exc}")
        return
    report.audited.append((f.id, f.file))


# --- embeddings -------------------------------------------------------------------
# Each skill has up to two vectors (``skill_vectors.part``): 0 = name + description + tags,
# 1 = the opening of the body. Search scores a skill by the better of the two (max-sim):
# many descriptions say little ("Automate X via Rube MCP"), and work on skill routing at
# ~80k skills found the body worth 29-44 points of Hit@1 (BENCHMARKS.md has our figures).
PART_META, PART_BODY = 0, 1

# Every pattern here is linear on any input (bodies come from strangers): bounded
# repeats instead of open ones, and code fences removed by a line scan, not a regex
# (a lazy ``.*?`` to a closing fence rescans the rest of the body for every unclosed one).
_LINK_RE = re.compile(r"!?\[([^\]]{0,300})\]\([^)]{0,300}\)")
_HTML_RE = re.compile(r"</?[A-Za-z][^>]{0,300}>")
# the opening of a body that the body vector can use: 300 words fit in far less
BODY_PREFIX_CHARS = 100_000


def strip_fences(text: str) -> str:
    """``text`` without fenced code blocks. An opening fence that is never closed is kept
    as text (and scanning goes on after it), as a Markdown reader shows it. Linear: a
    marker with no closer after it cannot open again, so at most two restarts happen."""
    lines = text.split("\n")
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        s = lines[i].lstrip(" \t")
        marker = s[:3] if s.startswith(("```", "~~~")) else ""
        if not marker:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < n and not lines[j].lstrip(" \t").startswith(marker):
            j += 1
        if j < n:
            out.append(" ")
            i = j + 1
        else:
            out.append(lines[i])        # unclosed: kept as text
            i += 1
    return "\n".join(out)
# Markdown marks, list bullets and numbering, table rules, task boxes: tokens that would
# fill the token budget without saying anything.
_MARK_RE = re.compile(r"^[ \t]*(?:[-+*]|\d+[.)])[ \t]+|[#>*`|_~=]+|(?<!\w)-+(?!\w)|\[[ xX]\]", re.M)


def embedding_text(name: str, description: str, tags: str) -> str:
    """What the dense index sees of a skill's metadata: name, description and tags."""
    head = f"{name.replace('-', ' ')}: {description}"
    return f"{head} (tags: {tags.replace(',', ', ')})" if tags else head


def body_embedding_text(body: str, words: int = 300) -> str:
    """The opening of a body as prose: code blocks, link targets and Markdown marks
    dropped, bounded by words (the embedder then cuts it to ``body_vector_tokens``)."""
    text = strip_fences(body or "")[:BODY_PREFIX_CHARS]
    text = _LINK_RE.sub(r"\1", text)
    text = _HTML_RE.sub(" ", text)
    text = _MARK_RE.sub(" ", text)
    return " ".join(text.split()[:words])


def meta_job(name: str, description: str, tags: str) -> tuple[str, str, int | None]:
    """(cache hash, text, max_tokens) of a skill's metadata vector."""
    t = embedding_text(name, description, tags)
    return sha256(t), t, None


def body_job(body: str, body_tokens: int) -> tuple[str, str, int] | None:
    """(cache hash, text, max_tokens) of a skill's body vector, or None for an empty body.
    The token setting is part of the hash: changing it gives new vectors."""
    t = body_embedding_text(body)
    return (sha256(f"body-t{body_tokens}:{t}"), t, body_tokens) if t and body_tokens else None


def embed_jobs(embedder, jobs) -> dict[str, np.ndarray]:
    """Vectors of (hash, text, max_tokens) jobs by hash, one ``embed_batch`` per token limit."""
    out: dict[str, np.ndarray] = {}
    for mt in dict.fromkeys(m for _, _, m in jobs):
        group = [(h, t) for h, t, m in jobs if m == mt]
        out.update(zip((h for h, _ in group), embedder.embed_batch([t for _, t in group], max_tokens=mt)))
    return out


def _vector_rows(vecs) -> list[tuple[str, int, bytes]]:
    """(hash, dimensions, float32 little-endian bytes) of vectors by hash, as the store keeps them."""
    return [(h, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes()) for h, v in vecs]


def _pending(vs: VectorStore, model_id: str, body_tokens: int,
             known: set[str] | None = None) -> list[tuple[int, int, str, str, int | None]]:
    """(rowid, part, hash, text, max_tokens) of every skill part without a vector for the model.
    ``known``: only the skills whose metadata text is one of these hashes (a stopped sync
    keeping what its prefetch made: reading and preparing every other body would cost
    seconds), their bodies included."""
    items: list[tuple[int, int, str, str, int | None]] = []
    for rowid, name, description, tags in vs.metadata_texts(vs.missing(model_id, PART_META)):
        job = meta_job(name, description, tags)
        if known is None or job[0] in known:
            items.append((rowid, PART_META, *job))
    if body_tokens:
        missing = vs.missing(model_id, PART_BODY)
        if known is not None:
            chosen = {rowid for rowid, *_ in items}
            missing = [r for r in missing if r in chosen]
        for rowid, body in vs.bodies(missing):
            body_part = body_job(body, body_tokens)
            if body_part:
                items.append((rowid, PART_BODY, *body_part))
    return items


def embed_pending(store: Store, embedder, *, body_tokens: int = 0, progress: Progress | None = None,
                  batch: int = 64, ready: dict[str, np.ndarray] | None = None, embed: bool = True,
                  shared=None, reused=(), into: SyncReport | None = None) -> int:
    """Compute missing vectors for the embedder's model (metadata, and with ``body_tokens``
    the body's opening); returns how many distinct texts were embedded. ``ready``: vectors
    already computed for some hashes (a ``Prefetch``), stored instead of embedded again.
    ``embed=False``: store ``ready`` and link what is cached, embed nothing. ``shared``
    (``shared_vectors.SharedVectors``): asked before the model runs, given what it computes;
    ``reused``: hashes of ``ready`` taken from it (not counted as embedded). ``into``: a report told
    how many texts had their vectors from ``shared`` and from this library's cache.

    The model is loaded only when some text has to be embedded: with every skill's vectors
    in place this reads a few small rows and returns 0. Ctrl-C (or an exception ``progress``
    raises) stops it after the batch in hand: the vectors made so far are kept and linked to
    their skills, and the exception goes on (a Ctrl-C as ``Interrupted``)."""
    vs = VectorStore(store)
    meta = IndexMeta(store)
    model_id = embedder.model_id
    # The body setting is part of what a part-1 vector means: a change re-embeds them.
    body_key = f"t{body_tokens}" if body_tokens else ""
    if meta.body_vectors() != body_key:
        with store.tx() as tx:
            vs.unlink_part(tx, PART_BODY)
            meta.set_body_vectors(body_key)
            meta.bump_vectors_generation()
    # without embedding, only the skills of the ``ready`` texts can gain a vector
    items = _pending(vs, model_id, body_tokens, None if embed else set(ready or ()))
    if not items:
        return 0
    have = vs.cached(model_id, {h for _, _, h, _, _ in items})
    if embed and any(h not in have and h not in (ready or ()) for _, _, h, _, _ in items):
        # a backend may settle its model (and so its id) only when it loads
        getattr(embedder, "load", lambda: None)()
        if embedder.model_id != model_id:
            model_id = embedder.model_id
            items = _pending(vs, model_id, body_tokens)
            have = vs.cached(model_id, {h for _, _, h, _, _ in items})
    uniq = {h: (t, mt) for _, _, h, t, mt in items if h not in have}
    if shared is not None and embed:
        taken = shared.take(embedder, [h for h in uniq if h not in (ready or ())])
        ready, reused = {**(ready or {}), **taken}, {*reused, *taken}
    if into is not None:
        into.vectors_shared = len(set(reused) & set(uniq))
        into.vectors_cached = len({h for _, _, h, _, _ in items if h in have})
    done: set[str] = set(have)    # hashes with a vector stored for the model
    embedded = 0
    try:
        if ready:
            done_rows = _vector_rows((h, ready[h]) for h in uniq if h in ready)
            for i in range(0, len(done_rows), 1000):
                with store.tx() as tx:
                    vs.put(tx, model_id, done_rows[i:i + 1000])
                done.update(h for h, _, _ in done_rows[i:i + 1000])
            todo_uniq = {h: v for h, v in uniq.items() if h not in ready}
        else:
            todo_uniq = uniq
        embedded = len(uniq) - len(todo_uniq) - len(set(reused) & set(uniq))
        # Similar lengths side by side: batches carry little padding.
        todo = sorted(todo_uniq.items(), key=lambda kv: (kv[1][1] or 0, len(kv[1][0]))) if embed else []
        step = batch * 2
        for i in range(0, len(todo), step):
            part = todo[i:i + step]
            vecs = embed_jobs(embedder, [(h, t, m) for h, (t, m) in part])
            with store.tx() as tx:
                vs.put(tx, model_id, _vector_rows(vecs.items()))
            done.update(vecs)
            if shared is not None:
                shared.give(embedder, vecs)
            embedded += len(part)
            if progress:
                progress(i + len(part), len(todo))
    except BaseException as exc:
        # stopped (Ctrl-C, the caller's progress) or failed: what was embedded is linked, so the
        # work is not lost; then the exception goes on
        with contextlib.suppress(sqlite3.Error, StoreError):
            _link(store, [it for it in items if it[2] in done])
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            raise Interrupted(SyncReport(embedded=embedded)) from exc
        raise
    _link(store, [it for it in items if it[2] in done])
    return embedded


def _link(store: Store, items) -> None:
    """Link skills to their texts' vectors (``items``: rowid, part, hash, ...) and mark the
    vectors changed: search state and the vector cache files are keyed by it."""
    if not items:
        return
    with store.tx() as tx:
        VectorStore.link(tx, [(rowid, part, h) for rowid, part, h, _, _ in items])
        IndexMeta(store).bump_vectors_generation()
