"""The embedding cache and the skills' vector links.

  embeddings(text_hash, model_id, dim, vector)  a vector per embedded text and model
  skill_vectors(skill_rowid, part, text_hash)   which text each part of a skill is (0 = its
                                                metadata, 1 = its body's opening)

A skill has a ``part`` vector for a model when its link's text has a vector for that model.
Vectors are bytes (float32, little-endian, L2-normalised) in and out. Writes run inside the
caller's transaction (``tx``: what ``store.tx()`` yields); reads on their own.

Which skills lack a vector is answered from small rows only (the links, and the cache's
(model, hash) index of migration 011): an unchanged sync asks it every time, and reading
the skill rows or the vectors themselves for it walked tens of MB."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreError
from .sqlite import Store

IN_CHUNK = 500


def _marks(n: int) -> str:
    return ",".join("?" * n)


class VectorStore:
    def __init__(self, store: Store):
        self.store = store

    # --- the embedding cache ---------------------------------------------------------------
    def cached(self, model_id: str, hashes, tx=None) -> set[str]:
        """Those of ``hashes`` that have a vector for the model."""
        db = tx if tx is not None else self.store.db
        hashes = list(hashes)
        have: set[str] = set()
        for i in range(0, len(hashes), IN_CHUNK):
            part = hashes[i:i + IN_CHUNK]
            have.update(r[0] for r in db.execute(
                f"SELECT text_hash FROM embeddings WHERE model_id = ? AND text_hash IN ({_marks(len(part))})",
                (model_id, *part)))
        return have

    @staticmethod
    def put(tx, model_id: str, rows: list[tuple[str, int, bytes]]) -> None:
        """Store (text hash, dimensions, vector bytes) for the model (replacing any)."""
        tx.executemany("INSERT OR REPLACE INTO embeddings (text_hash, model_id, dim, vector) VALUES (?, ?, ?, ?)",
                       [(h, model_id, d, v) for h, d, v in rows])

    # --- the skills' links -----------------------------------------------------------------
    @staticmethod
    def link(tx, links: list[tuple[int, int, str]]) -> None:
        """Set (skill rowid, part, text hash) links (replacing a part's earlier link)."""
        tx.executemany("INSERT OR REPLACE INTO skill_vectors (skill_rowid, part, text_hash) VALUES (?, ?, ?)", links)

    @staticmethod
    def unlink_skill(tx, rowid: int) -> None:
        """The skill has no vectors (its text changed, or it is gone)."""
        tx.execute("DELETE FROM skill_vectors WHERE skill_rowid = ?", (rowid,))

    @staticmethod
    def unlink_part(tx, part: int) -> None:
        """No skill has a ``part`` vector (the setting that made them changed)."""
        tx.execute("DELETE FROM skill_vectors WHERE part = ?", (part,))

    def missing(self, model_id: str, part: int) -> list[int]:
        """Rowids, ascending, of the skills without a ``part`` vector for the model."""
        # no ORDER BY: in rowid order SQLite would walk the table itself (a page per body)
        # instead of an index that holds the rowids
        return sorted(r[0] for r in self.store.db.execute("""
            SELECT rowid FROM skills WHERE rowid NOT IN (
                SELECT v.skill_rowid FROM skill_vectors v WHERE v.part = ?
                AND v.text_hash IN (SELECT text_hash FROM embeddings WHERE model_id = ?))""", (part, model_id)))

    def metadata_texts(self, rowids: list[int]) -> Iterator[tuple[int, str, str, str]]:
        """(rowid, name, description, tags) of these skills (rows removed meanwhile are absent)."""
        for i in range(0, len(rowids), IN_CHUNK):
            part = rowids[i:i + IN_CHUNK]
            yield from (tuple(r) for r in self.store.db.execute(
                f"SELECT rowid, name, description, tags FROM skills WHERE rowid IN ({_marks(len(part))})", part))

    def bodies(self, rowids: list[int]) -> Iterator[tuple[int, str]]:
        """(rowid, body) of these skills, a chunk at a time (bodies are not all held at once)."""
        for i in range(0, len(rowids), IN_CHUNK):
            part = rowids[i:i + IN_CHUNK]
            yield from [tuple(r) for r in self.store.db.execute(
                f"SELECT rowid, body FROM skills WHERE rowid IN ({_marks(len(part))})", part)]

    def counts(self, model_id: str) -> dict[int, int]:
        """Part -> how many skills have a vector of that part for the model."""
        return {r[0]: r[1] for r in self.store.db.execute("""
            SELECT part, COUNT(*) FROM skill_vectors WHERE text_hash IN (
                SELECT text_hash FROM embeddings WHERE model_id = ?) GROUP BY part""", (model_id,))}

    # --- loading the search state's matrices --------------------------------------------------
    def dimensions(self, model_id: str, part: int) -> int | None:
        """The dimensions of the model's ``part`` vectors, or None when no skill has one."""
        row = self.store.db.execute("SELECT e.dim FROM skill_vectors v JOIN embeddings e ON e.text_hash = v.text_hash"
                                    " AND e.model_id = ? WHERE v.part = ? LIMIT 1", (model_id, part)).fetchone()
        return int(row[0]) if row else None

    def _vectors(self, model_id: str, part: int, where: str, args: tuple) -> list[tuple[int, bytes]]:
        return [tuple(r) for r in self.store.db.execute(f"""
            SELECT v.skill_rowid, e.vector FROM skill_vectors v
            JOIN embeddings e ON e.text_hash = v.text_hash AND e.model_id = ?
            WHERE v.part = ? AND {where}""", (model_id, part, *args))]

    def vectors_between(self, model_id: str, part: int, lo: int, hi: int) -> list[tuple[int, bytes]]:
        """(skill rowid, vector) of the ``part`` vectors of skills with rowids in [lo, hi]."""
        return self._vectors(model_id, part, "v.skill_rowid BETWEEN ? AND ?", (lo, hi))

    def vectors_of(self, model_id: str, part: int, rowids: list[int]) -> list[tuple[int, bytes]]:
        """(skill rowid, vector) of the ``part`` vectors of these skills (at most ``IN_CHUNK``)."""
        return self._vectors(model_id, part, f"v.skill_rowid IN ({_marks(len(rowids))})", tuple(rowids))

    def text_hashes(self, part: int) -> list[tuple[int, str]]:
        """(skill rowid, text hash) of every ``part`` link."""
        return [tuple(r) for r in self.store.db.execute("SELECT skill_rowid, text_hash FROM skill_vectors"
                                                        " WHERE part = ?", (part,))]


class VectorCache:
    """Every vector this library computed, keyed as a team keys them (the model: its id and a
    digest of its weights; the embedded text's hash), in a file of its own beside the index
    (``<home>/vectors.db``): a rebuild moves the index aside, not this, and takes its vectors
    from here instead of running the model again (so does a re-import). The SQLite twin of
    ``pg_vectors.PgVectorCache``; a file that cannot be opened or written is no cache
    (``StoreError``: the caller embeds as if it were empty)."""

    SCHEMA = ("CREATE TABLE IF NOT EXISTS vectors (model_key TEXT NOT NULL, text_hash TEXT NOT NULL,"
              " dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model_key, text_hash)) WITHOUT ROWID")

    def __init__(self, path: Path):
        self.path = Path(path)
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(self.SCHEMA)
            except sqlite3.Error as exc:
                raise StoreError(f"the vector cache {self.path} cannot be used ({exc})",
                                 fix=f"delete {self.path}: it is only a cache") from None
            self._local.db = db
        return db

    def get(self, model_key: str, hashes: list[str]) -> dict[str, tuple[int, bytes]]:
        """{text hash: (dimensions, vector bytes)} of those of ``hashes`` the cache has."""
        hashes = list(dict.fromkeys(hashes))
        out: dict[str, tuple[int, bytes]] = {}
        try:
            db = self._db()
            for i in range(0, len(hashes), IN_CHUNK):
                part = hashes[i:i + IN_CHUNK]
                for h, dim, vec in db.execute(f"SELECT text_hash, dim, vector FROM vectors WHERE model_key = ?"
                                              f" AND text_hash IN ({_marks(len(part))})", (model_key, *part)):
                    out[h] = (int(dim), bytes(vec))
        except sqlite3.Error as exc:
            raise StoreError(f"the vector cache {self.path} cannot be read ({exc})",
                             fix=f"delete {self.path}: it is only a cache") from None
        return out

    def put(self, model_key: str, rows: list[tuple[str, int, bytes]]) -> None:
        """Add (text hash, dimensions, vector bytes) for the model; a vector kept is kept."""
        if not rows:
            return
        try:
            db = self._db()
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.executemany("INSERT OR IGNORE INTO vectors (model_key, text_hash, dim, vector) VALUES (?, ?, ?, ?)",
                               [(model_key, h, int(d), v) for h, d, v in rows])
        except sqlite3.Error as exc:
            raise StoreError(f"the vector cache {self.path} cannot be written ({exc})",
                             fix=f"check that {self.path.parent} is writable, or delete {self.path}") from None

    def count(self, model_key: str | None = None) -> int:
        """How many vectors the cache keeps (of one model, or of all)."""
        db = self._db()
        if model_key is None:
            return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
        return int(db.execute("SELECT count(*) FROM vectors WHERE model_key = ?", (model_key,)).fetchone()[0])

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
