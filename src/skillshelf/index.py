"""Sync files → store by content hash; lexical rows; embedding cache.

``sync`` is incremental: a file whose (mtime, size) is unchanged is not read; one whose
bytes hash the same is not re-parsed; vanished files are dropped. ``embed_pending``
fills vectors for skills that have none for the active model, reusing any vector
already computed for the same text (keyed by text hash + model id).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import lexical
from . import skill as skillmod
from .sources import Found, Root, discover
from .store import Store, now
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


def scan(roots: list[Root]) -> tuple[list[Found], list[str]]:
    found: list[Found] = []
    notes: list[str] = []
    for root in roots:
        f, n = discover(root)
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


def sync(store: Store, roots: list[Root], *, progress: Progress | None = None) -> SyncReport:
    import time

    t0 = time.perf_counter()
    report = SyncReport()
    found, report.notes = scan(roots)
    db = store.db
    existing = {r["id"]: r for r in db.execute("SELECT rowid, id, mtime_ns, size, content_hash FROM skills")}
    invalid_rows = {r["path"]: r for r in db.execute("SELECT * FROM invalid_files")}
    seen_ids: set[str] = set()
    seen_invalid: set[str] = set()
    todo: list[Found] = []
    for f in found:
        if f.id in seen_ids:
            continue
        seen_ids.add(f.id)
        row = existing.get(f.id)
        if row is not None and row["mtime_ns"] == f.mtime_ns and row["size"] == f.size:
            report.unchanged += 1
            continue
        inv = invalid_rows.get(str(f.path))
        if row is None and inv is not None and inv["mtime_ns"] == f.mtime_ns and inv["size"] == f.size:
            seen_invalid.add(str(f.path))
            report.invalid.append(InvalidFile(str(f.path), inv["rule"], inv["message"], inv["line"]))
            continue
        todo.append(f)

    total = len(todo)
    with store.tx() as tx:
        writer = lexical.Writer(tx)
        for i, f in enumerate(todo):
            if progress:
                progress(i, total)
            _sync_one(tx, writer, f, existing.get(f.id), report, seen_invalid)
        writer.flush()
        if progress:
            progress(total, total)
        gone = [row for sid, row in existing.items() if sid not in seen_ids]
        for row in gone:
            _delete_rowid(tx, row["rowid"])
            report.removed += 1
        for path in invalid_rows:
            if path not in seen_invalid:
                tx.execute("DELETE FROM invalid_files WHERE path=?", (path,))
        if report.changed:
            store.set_meta("generation", str(int(store.get_meta("generation", "0") or 0) + 1))
        store.set_meta("last_sync", now())
    report.seconds = time.perf_counter() - t0
    return report


def _delete_rowid(tx, rowid: int) -> None:
    tx.execute("DELETE FROM skills WHERE rowid=?", (rowid,))
    lexical.remove(tx, rowid)
    tx.execute("DELETE FROM skill_vectors WHERE skill_rowid=?", (rowid,))


def _sync_one(tx, writer: "lexical.Writer", f: Found, row, report: SyncReport, seen_invalid: set[str]) -> None:
    try:
        data = f.path.read_bytes()
    except OSError as exc:
        report.notes.append(f"cannot read {f.path}: {exc.strerror}")
        return
    digest = sha256(data)
    if row is not None and row["content_hash"] == digest:
        tx.execute("UPDATE skills SET mtime_ns=?, size=? WHERE rowid=?", (f.mtime_ns, f.size, row["rowid"]))
        report.unchanged += 1
        return
    parsed = skillmod.parse(data, folder_name=f.folder.name if f.rel != "." else f.root.path.name)
    if parsed.skill is None:
        bad = next(x for x in parsed.findings if x.severity == "fatal")
        tx.execute("INSERT OR REPLACE INTO invalid_files VALUES (?,?,?,?,?,?,?,?)",
                   (str(f.path), f.root.label, f.rel, bad.rule, bad.message, bad.line, f.mtime_ns, f.size))
        seen_invalid.add(str(f.path))
        report.invalid.append(InvalidFile(str(f.path), bad.rule, bad.message, bad.line))
        if row is not None:
            _delete_rowid(tx, row["rowid"])
            report.removed += 1
        return
    tx.execute("DELETE FROM invalid_files WHERE path=?", (str(f.path),))
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
        cols = ",".join(values)
        cur = tx.execute(f"INSERT INTO skills ({cols}) VALUES ({','.join('?' * len(values))})",
                         tuple(values.values()))
        rowid = cur.lastrowid
        report.added += 1
    else:
        rowid = row["rowid"]
        sets = ",".join(f"{k}=?" for k in values)
        tx.execute(f"UPDATE skills SET {sets} WHERE rowid=?", (*values.values(), rowid))
        tx.execute("DELETE FROM skill_vectors WHERE skill_rowid=?", (rowid,))
        report.updated += 1
    writer.add(rowid, lexical_fields(sk))


# --- embeddings -------------------------------------------------------------------

def embedding_text(name: str, description: str, tags: str) -> str:
    """What the dense index sees for one skill: name, description and tags. (The body is
    left to BM25: embedding it costs minutes per 5k skills on a laptop CPU.)"""
    head = f"{name.replace('-', ' ')}: {description}"
    return f"{head} (tags: {tags.replace(',', ', ')})" if tags else head


def embed_pending(store: Store, embedder, *, progress: Progress | None = None, batch: int = 64) -> int:
    """Compute missing vectors for the embedder's model; returns how many texts were embedded."""
    db = store.db
    model_id = embedder.model_id
    rows = db.execute("""
        SELECT s.rowid, s.name, s.description, s.tags FROM skills s
        WHERE NOT EXISTS (SELECT 1 FROM skill_vectors v JOIN embeddings e
                          ON e.text_hash = v.text_hash AND e.model_id = ?
                          WHERE v.skill_rowid = s.rowid AND v.part = 0)""", (model_id,)).fetchall()
    if not rows:
        return 0
    items = [(r["rowid"], embedding_text(r["name"], r["description"], r["tags"])) for r in rows]
    hashes = [sha256(t) for _, t in items]
    have = set()
    for i in range(0, len(hashes), 500):
        chunk = hashes[i:i + 500]
        q = ",".join("?" * len(chunk))
        have.update(r[0] for r in db.execute(
            f"SELECT text_hash FROM embeddings WHERE model_id=? AND text_hash IN ({q})", (model_id, *chunk)))
    need = [(h, t) for (rowid, t), h in zip(items, hashes) if h not in have]
    uniq = list(dict((h, t) for h, t in need).items())
    done = 0
    for i in range(0, len(uniq), batch * 4):
        part = uniq[i:i + batch * 4]
        vecs = embedder.embed_batch([t for _, t in part])
        with store.tx() as tx:
            tx.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?,?)",
                           [(h, model_id, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes())
                            for (h, _), v in zip(part, vecs)])
        done += len(part)
        if progress:
            progress(done, len(uniq))
    with store.tx() as tx:
        tx.executemany("INSERT OR REPLACE INTO skill_vectors VALUES (?, 0, ?)",
                       [(rowid, h) for (rowid, _), h in zip(items, hashes)])
    return len(uniq)


def load_vectors(store: Store, model_id: str, positions: dict[int, int], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every skill's part-0 vector for ``model_id`` as a matrix aligned with ``positions``
    (skill rowid -> row); rows without a vector are zero. Returns (matrix, has_vector).
    Rows are copied straight into one preallocated array: no second copy of the matrix."""
    first = store.db.execute("SELECT e.dim FROM skill_vectors v JOIN embeddings e ON e.text_hash = v.text_hash"
                             " AND e.model_id = ? WHERE v.part = 0 LIMIT 1", (model_id,)).fetchone()
    has = np.zeros(n, dtype=bool)
    if first is None:
        return np.zeros((n, 0), dtype=np.float32), has
    mat = np.zeros((n, int(first[0])), dtype=np.float32)
    cur = store.db.execute("""
        SELECT v.skill_rowid, e.vector FROM skill_vectors v
        JOIN embeddings e ON e.text_hash = v.text_hash AND e.model_id = ?
        WHERE v.part = 0""", (model_id,))
    for rowid, blob in cur:
        p = positions.get(int(rowid))
        if p is not None:
            mat[p] = np.frombuffer(blob, dtype="<f4")
            has[p] = True
    return mat, has
