"""Sync files → store by content hash; lexical rows; embedding cache.

``sync`` is incremental: a file whose (mtime, size) is unchanged is not read; one whose
bytes hash the same is not re-parsed; vanished files are dropped. ``embed_pending``
fills vectors for skills that have none for the active model, reusing any vector
already computed for the same text (keyed by text hash + model id).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import lexical
from . import overlay as overlaymod
from . import skill as skillmod
from .files import MAX_SKILL_BYTES, FileRefused, read_bounded
from .sources import Found, Root, discover
from .store import Store, now
from .store.meta import IndexMeta
from .store.skills import SkillIndex
from .store.vectors import VectorStore
from .text import name_key, normalized_body_hash, sha256

Progress = Callable[[int, int], None]


@dataclass
class InvalidFile:
    path: str
    rule: str
    message: str
    line: int | None

    def as_dict(self) -> dict:
        return {"path": self.path, "rule": self.rule, "message": self.message, "line": self.line}


@dataclass
class SyncReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    invalid: list[InvalidFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    embedded: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def as_dict(self) -> dict:
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "unchanged": self.unchanged, "invalid": len(self.invalid),
                "invalid_files": [i.as_dict() for i in self.invalid], "embedded": self.embedded,
                "notes": self.notes, "seconds": round(self.seconds, 3)}


def scan(roots: list[Root], exclude: tuple = ()) -> tuple[list[Found], list[str]]:
    """Every SKILL.md of every root; ``exclude``: folders never walked into from a
    read-only root (the library's home, whose workspace is a root of its own)."""
    found: list[Found] = []
    notes: list[str] = []
    for root in roots:
        f, n = discover(root, () if root.kind == "workspace" else exclude)
        found.extend(f)
        notes.extend(n)
    return found, notes


def lexical_fields(sk: skillmod.Skill) -> tuple[str, str, str, str, str]:
    """The five BM25F fields of a skill (see ``lexical.FIELDS``)."""
    heads = " ".join(h for _, h in skillmod.headings(sk.body))
    names = sk.name if sk.display_name == sk.name else f"{sk.name} {sk.display_name}"
    return (names, sk.description, " ".join(sk.tags), heads, sk.body)


def _is_active(sk: skillmod.Skill) -> bool:
    return (sk.metadata.get("status") or "active").lower() not in ("inactive", "deprecated", "merged")


BATCH_MIN, BATCH_MAX = 500, 5_000


def sync(store: Store, roots: list[Root], *, progress: Progress | None = None,
         on_skill: Callable[[skillmod.Skill], None] | None = None, exclude: tuple = ()) -> SyncReport:
    """Bring the index up to date with the files; ``on_skill`` sees each added or changed
    skill as it is indexed (a ``Prefetch``).

    Safe beside other processes syncing the same database: every decision about a row is
    taken inside the write transaction that acts on it (rows read before it began may be
    stale). Work is committed in batches, so a first index of a large collection keeps its
    progress if it is interrupted and searches can use what is indexed so far. One bad file
    is reported invalid; it never stops the rest."""
    import time

    t0 = time.perf_counter()
    report = SyncReport()
    found, report.notes = scan(roots, exclude)
    skills = SkillIndex(store)
    meta = IndexMeta(store)
    # A first look outside any transaction, to skip unchanged files cheaply; re-checked below.
    snapshot = skills.file_states()
    invalid_rows = skills.invalid_files()
    seen_ids: set[str] = set()
    seen_invalid: set[str] = set()
    todo: list[Found] = []
    for f in found:
        if f.id in seen_ids:
            continue
        seen_ids.add(f.id)
        if snapshot.get(f.id) == (f.mtime_ns, f.size):
            report.unchanged += 1
            continue
        inv = invalid_rows.get(str(f.path))
        if f.id not in snapshot and inv is not None and inv["mtime_ns"] == f.mtime_ns and inv["size"] == f.size:
            seen_invalid.add(str(f.path))
            report.invalid.append(InvalidFile(str(f.path), inv["rule"], inv["message"], inv["line"]))
            continue
        todo.append(f)

    total = len(todo)
    batch = max(BATCH_MIN, min(BATCH_MAX, total // 10 or 1))
    changed_before = 0
    for start in range(0, total, batch) if total else ():
        chunk = todo[start:start + batch]
        with store.tx() as tx:
            rows = skills.rows_for(tx, [f.id for f in chunk])
            writer = lexical.Writer(tx)
            for i, f in enumerate(chunk):
                if progress:
                    progress(start + i, total)
                _sync_isolated(tx, writer, f, rows.get(f.id), report, seen_invalid, on_skill)
            writer.flush()
            if report.added + report.updated + report.removed > changed_before:
                changed_before = report.added + report.updated + report.removed
                meta.bump_generation()
    if progress:
        progress(total, total)
    with store.tx() as tx:
        # rows whose file is gone, decided on the rows as they are now
        for rowid, sid in skills.all_ids(tx):
            if sid not in seen_ids:
                _delete_rowid(tx, rowid)
                report.removed += 1
        for path in skills.invalid_paths(tx):
            if path not in seen_invalid:
                skills.clear_invalid(tx, path)
        if report.added + report.updated + report.removed > changed_before:
            meta.bump_generation()
        meta.mark_synced(now())
    report.seconds = time.perf_counter() - t0
    return report


def _sync_isolated(tx, writer: "lexical.Writer", f: Found, row, report: SyncReport, seen_invalid: set[str],
                   on_skill) -> None:
    """``_sync_one`` in a savepoint: a file whose row cannot be written (a value SQLite
    refuses, a bug we have not met yet) is rolled back alone and reported invalid."""
    import sqlite3

    if row is not None and row["mtime_ns"] == f.mtime_ns and row["size"] == f.size:
        report.unchanged += 1          # another process indexed it meanwhile
        return
    try:
        with SkillIndex.isolated(tx):
            _sync_one(tx, writer, f, row, report, seen_invalid, on_skill)
    except (sqlite3.Error, ValueError, TypeError, OverflowError, RecursionError) as exc:
        _mark_invalid(tx, f, row, report, seen_invalid, "file.unindexable",
                      f"could not be indexed ({type(exc).__name__}: {str(exc)[:200]})", None)


def _mark_invalid(tx, f: Found, row, report: SyncReport, seen_invalid: set[str], rule: str, message: str,
                  line: int | None) -> None:
    SkillIndex.mark_invalid(tx, {"path": str(f.path), "root": f.root.label, "rel": f.rel, "rule": rule,
                                 "message": message, "line": line, "mtime_ns": f.mtime_ns, "size": f.size})
    seen_invalid.add(str(f.path))
    report.invalid.append(InvalidFile(str(f.path), rule, message, line))
    if row is not None:
        _delete_rowid(tx, row["rowid"])
        report.removed += 1


def _delete_rowid(tx, rowid: int) -> None:
    SkillIndex.delete(tx, rowid)
    lexical.remove(tx, rowid)
    VectorStore.unlink_skill(tx, rowid)


def _sync_one(tx, writer: "lexical.Writer", f: Found, row, report: SyncReport, seen_invalid: set[str],
              on_skill: Callable[[skillmod.Skill], None] | None = None) -> None:
    try:
        data = read_bounded(f.path, MAX_SKILL_BYTES)
    except FileRefused as exc:
        _mark_invalid(tx, f, row, report, seen_invalid, exc.rule, exc.message, None)
        return
    except OSError as exc:
        report.notes.append(f"cannot read {f.path}: {exc.strerror}")
        return
    digest = sha256(data)
    if row is not None and row["content_hash"] == digest:
        SkillIndex.touch(tx, row["rowid"], f.mtime_ns, f.size)
        report.unchanged += 1
        return
    parsed = skillmod.parse(data, folder_name=f.folder.name if f.rel != "." else f.root.path.name)
    if parsed.skill is None:
        bad = next(x for x in parsed.findings if x.severity == "fatal")
        _mark_invalid(tx, f, row, report, seen_invalid, bad.rule, bad.message, bad.line)
        return
    SkillIndex.clear_invalid(tx, str(f.path))
    sk = parsed.skill
    exp = sk.expires_on()
    values = dict(
        id=f.id, root=f.root.label, kind=f.root.kind, rel=f.rel, path=str(f.path), name=sk.name,
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
    if on_skill is not None:
        on_skill(sk)


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


def embed_pending(store: Store, embedder, *, body_tokens: int = 0, progress: Progress | None = None,
                  batch: int = 64, ready: dict[str, np.ndarray] | None = None) -> int:
    """Compute missing vectors for the embedder's model (metadata, and with ``body_tokens``
    the body's opening); returns how many distinct texts were embedded. ``ready``: vectors
    already computed for some hashes (a ``Prefetch``), stored instead of embedded again."""
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
    items: list[tuple[int, int, str, str, int | None]] = []   # rowid, part, hash, text, max_tokens
    missing = vs.missing(model_id, PART_META)
    for rowid, name, description, tags in vs.metadata_texts(missing):
        items.append((rowid, PART_META, *meta_job(name, description, tags)))
    if body_tokens:
        for rowid, body in vs.bodies(vs.missing(model_id, PART_BODY)):
            job = body_job(body, body_tokens)
            if job:
                items.append((rowid, PART_BODY, *job))
    if not items:
        return 0
    have = vs.cached(model_id, {h for _, _, h, _, _ in items})
    uniq = {h: (t, mt) for _, _, h, t, mt in items if h not in have}
    if ready:
        done_rows = _vector_rows((h, ready[h]) for h in uniq if h in ready)
        for i in range(0, len(done_rows), 1000):
            with store.tx() as tx:
                vs.put(tx, model_id, done_rows[i:i + 1000])
        todo_uniq = {h: v for h, v in uniq.items() if h not in ready}
    else:
        todo_uniq = uniq
    # Similar lengths side by side: batches carry little padding.
    todo = sorted(todo_uniq.items(), key=lambda kv: (kv[1][1] or 0, len(kv[1][0])))
    done = 0
    step = batch * 4
    for i in range(0, len(todo), step):
        part = todo[i:i + step]
        vecs = embed_jobs(embedder, [(h, t, m) for h, (t, m) in part])
        with store.tx() as tx:
            vs.put(tx, model_id, _vector_rows(vecs.items()))
        done += len(part)
        if progress:
            progress(done, len(todo))
    with store.tx() as tx:
        vs.link(tx, [(rowid, part, h) for rowid, part, h, _, _ in items])
        meta.bump_vectors_generation()   # search state and the vector cache files are keyed by it
    return len(uniq)


class Prefetch:
    """Embeds the texts of the skills a sync adds or changes while the sync goes on, in a
    background thread: the model (which releases the GIL) works while Python builds the
    lexical index. ``finish`` hands the vectors to ``embed_pending``, which stores them
    instead of embedding those texts again. A failure here is left to ``embed_pending``,
    which then embeds (and reports) as usual."""

    BATCH = 128

    def __init__(self, store: Store, embedder, body_tokens: int):
        import queue
        import threading

        self.store, self.embedder, self.body_tokens = store, embedder, body_tokens
        self.ready: dict[str, np.ndarray] = {}
        self._seen: set[str] = set()
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        # started by the first skill: a sync that changes nothing (the watcher's, every few
        # seconds) starts no thread
        self._thread = threading.Thread(target=self._run, name="skillshelf-prefetch", daemon=True)

    def add(self, sk: skillmod.Skill) -> None:
        if not self._thread.is_alive() and not self._seen:
            self._thread.start()
        jobs = [meta_job(sk.name, sk.description, ",".join(sk.tags)), body_job(sk.body, self.body_tokens)]
        for job in jobs:
            if job and job[0] not in self._seen:
                self._seen.add(job[0])
                self._queue.put(job)

    def _run(self) -> None:
        import queue

        model_id = self.embedder.model_id
        done = False
        while not done:
            jobs = [self._queue.get()]
            while len(jobs) < self.BATCH:
                try:
                    jobs.append(self._queue.get(timeout=0.05))
                except queue.Empty:
                    break
            if None in jobs:
                done = True
                jobs = [j for j in jobs if j is not None]
            if self._error is not None or not jobs:
                continue
            try:
                cached = VectorStore(self.store).cached(model_id, [h for h, _, _ in jobs])
                self.ready.update(embed_jobs(self.embedder, [j for j in jobs if j[0] not in cached]))
            except BaseException as exc:  # left to embed_pending, which embeds and reports as usual
                self._error = exc

    def finish(self) -> dict[str, np.ndarray]:
        if not self._seen:
            return {}
        self._queue.put(None)
        self._thread.join()
        return {} if self._error is not None else self.ready
