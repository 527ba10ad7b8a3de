"""The index's generations and markers: what tells a search that its state is stale.

``generation`` changes whenever a skill row or its postings change; ``vectors_generation``
whenever a skill's vector links do (search state and the vector cache files are keyed by
both). ``index_id`` names the database (files derived from it name the database they came
from); ``body_vectors`` is the body-vector setting the stored links were made with.

Plain strings in and out. The bumps run inside the caller's transaction (``store.tx()``),
so a generation moves together with the rows it stands for."""

from __future__ import annotations

import json

from .sqlite import Store

JOURNAL_KEEP = 200_000   # change-journal entries kept (a first index of 100k skills writes ~200k)


class IndexMeta:
    """The index's generations and markers, kept in the store's ``meta`` table."""

    def __init__(self, store: Store):
        self.store = store

    def generation(self) -> str:
        """Changes whenever a skill row or its postings do."""
        return self.store.get_meta("generation", "0") or "0"

    def vectors_generation(self) -> str:
        """Changes whenever the skills' vector links do."""
        return self.store.get_meta("vectors_generation", "0") or "0"

    def index_id(self) -> str:
        """A random id of this database (migration 007): a rebuilt database gets a new one."""
        return self.store.get_meta("index_id", "") or ""

    def bump_generation(self) -> None:
        """Mark the skill rows as changed (inside the caller's transaction)."""
        self.store.set_meta("generation", str(int(self.generation() or 0) + 1))

    def bump_vectors_generation(self) -> None:
        """Mark the skills' vectors as changed (inside the caller's transaction). Bumped
        whenever vector links change, even when every text was already embedded (a reverted
        edit, a body setting put back)."""
        self.store.set_meta("vectors_generation", str(int(self.vectors_generation() or 0) + 1))

    def body_vectors(self) -> str:
        """The body-vector setting the stored body links were made with ('' = none)."""
        return self.store.get_meta("body_vectors", "") or ""

    def set_body_vectors(self, key: str) -> None:
        self.store.set_meta("body_vectors", key)

    def mark_synced(self, at: str, roots: list[str] | None = None) -> None:
        self.store.set_meta("last_sync", at)
        if roots is not None:    # the roots this whole sync covered (a root added since is not indexed yet)
            self.store.set_meta("synced_roots", json.dumps(roots))

    def synced_roots(self) -> list[str] | None:
        """The labels of the roots the last whole sync covered (None: not recorded)."""
        try:
            got = json.loads(self.store.get_meta("synced_roots") or "null")
        except ValueError:
            return None
        return got if isinstance(got, list) else None

    def last_sync(self) -> str | None:
        return self.store.get_meta("last_sync")


class ChangeJournal:
    """Which ``skills`` rows (kind ``'s'``, by rowid) and ``lex_docs`` rows (``'d'``, by
    docid) writes touched, in order (migration 015: kept by triggers). A search state built at
    entry ``head()`` reads later the rows that changed since, instead of every row."""

    def __init__(self, store: Store):
        self.store = store

    def head(self) -> int:
        """The last entry (0: none yet). Read it before the rows a state is built from."""
        row = self.store.db.execute("SELECT MAX(seq) FROM change_journal").fetchone()
        return int(row[0] or 0)

    def since(self, seq: int, kind: str, *, index_id: str | None = None,
              most: int | None = None) -> tuple[list[int], int] | None:
        """(the ids of ``kind`` changed after entry ``seq``, sorted; the last entry), or None when
        the journal no longer reaches back to ``seq`` (pruned, or another database), when the
        database's index id is not ``index_id`` (rebuilt under the reader), or when more than
        ``most`` ids changed (reading every row is then the cheaper way)."""
        if index_id is not None and IndexMeta(self.store).index_id() != index_id:
            return None
        got = self._since(seq, kind)
        return None if got is None or (most is not None and len(got[0]) > most) else got

    def _since(self, seq: int, kind: str) -> tuple[list[int], int] | None:
        db = self.store.db
        lo, hi = db.execute("SELECT MIN(seq), MAX(seq) FROM change_journal").fetchone()
        if hi is None:
            return ([], seq) if seq == 0 else None
        if hi < seq or lo > seq + 1:
            return None
        ids = [int(r[0]) for r in db.execute("SELECT DISTINCT id FROM change_journal WHERE seq > ? AND seq <= ?"
                                             " AND kind = ? ORDER BY id", (seq, hi, kind))]
        lo = db.execute("SELECT MIN(seq) FROM change_journal").fetchone()[0]
        if lo is None or lo > seq + 1:      # pruned by another process between the two reads
            return None
        return ids, int(hi)

    @staticmethod
    def prune(tx) -> None:
        """Keep the last ``JOURNAL_KEEP`` entries (inside the caller's transaction)."""
        tx.execute("DELETE FROM change_journal WHERE seq <= (SELECT MAX(seq) FROM change_journal) - ?",
                   (JOURNAL_KEEP,))
