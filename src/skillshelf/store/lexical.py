"""The lexical index's postings (BM25F, scored in ``lexical.py``).

Layout (migration ``005_lexical``):
  lex_docs(docid, skill_rowid, alive, lens)  one row per indexed version of a skill
  lex_main(term, docids, tfs)                compacted postings, one row per term
  lex_delta(term, docid, tfs)                postings written since the last compaction

Postings are bytes as ``lexical.py`` packs them (int32 docids, uint16 × 5 frequencies,
float32 × 5 field lengths); this module stores and returns them as they are. Writes run
inside the caller's transaction (``tx``: what ``store.tx()`` yields); the query side reads
on its own (``store`` given)."""

from __future__ import annotations

from collections.abc import Iterator

from .sqlite import Store
from .vectors import IN_CHUNK
from .writes import rowid


class Postings:
    """Documents and their per-term postings. ``store`` may be None for an instance used
    only inside a caller's transaction (the ``tx`` methods)."""

    def __init__(self, store: Store | None = None):
        self.store = store

    def _own(self) -> Store:
        """This instance's store (one made for a caller's transaction has none to use alone)."""
        if self.store is None:
            raise RuntimeError(f"{type(self).__name__} was made without a store: pass the caller's transaction")
        return self.store

    # --- documents -------------------------------------------------------------------
    @staticmethod
    def add_doc(tx, skill_rowid: int, lens: bytes) -> int:
        """A new live document for a skill (its field lengths); returns its docid."""
        cur = tx.execute("INSERT INTO lex_docs (skill_rowid, alive, lens) VALUES (?, 1, ?)", (skill_rowid, lens))
        return rowid(cur)

    @staticmethod
    def retire(tx, skill_rowid: int) -> None:
        """The skill's live document no longer counts (its postings go at compaction)."""
        tx.execute("UPDATE lex_docs SET alive = 0 WHERE skill_rowid = ? AND alive = 1", (skill_rowid,))

    @staticmethod
    def doc_counts(tx) -> tuple[int, int]:
        """(dead documents, live documents)."""
        dead, alive = tx.execute("SELECT SUM(alive = 0), SUM(alive = 1) FROM lex_docs").fetchone()
        return int(dead or 0), int(alive or 0)

    @staticmethod
    def live_docids(tx) -> list[int]:
        return [int(r[0]) for r in tx.execute("SELECT docid FROM lex_docs WHERE alive = 1")]

    @staticmethod
    def drop_dead_docs(tx) -> None:
        tx.execute("DELETE FROM lex_docs WHERE alive = 0")

    def live_docs(self) -> list[tuple[int, int, bytes]]:
        """(docid, skill rowid, field lengths) of every live document."""
        return [tuple(r) for r in self._own().db.execute("SELECT docid, skill_rowid, lens FROM lex_docs WHERE alive = 1")]

    def docs_of(self, docids: list[int]) -> list[tuple[int, int, int, bytes]]:
        """(docid, skill rowid, alive, field lengths) of these documents (dropped ones are absent)."""
        out: list[tuple[int, int, int, bytes]] = []
        db = self._own().db
        for i in range(0, len(docids), 500):
            part = docids[i:i + 500]
            out.extend(tuple(r) for r in db.execute(
                f"SELECT docid, skill_rowid, alive, lens FROM lex_docs WHERE docid IN ({','.join('?' * len(part))})",
                part))
        return out

    # --- main postings: one row per term ----------------------------------------------
    @staticmethod
    def main_terms(tx) -> set[str]:
        return {r[0] for r in tx.execute("SELECT term FROM lex_main")}

    def main_row(self, term: str, tx=None) -> tuple[bytes, bytes] | None:
        """(docids, frequencies) of a term's main row, or None."""
        db = tx if tx is not None else self._own().db
        row = db.execute("SELECT docids, tfs FROM lex_main WHERE term = ?", (term,)).fetchone()
        return (row[0], row[1]) if row else None

    @staticmethod
    def put_main(tx, rows: list[tuple[str, bytes, bytes]]) -> None:
        """Write (term, docids, frequencies) rows, replacing those terms' rows."""
        tx.executemany("INSERT OR REPLACE INTO lex_main (term, docids, tfs) VALUES (?, ?, ?)", rows)

    @staticmethod
    def delete_main(tx, term: str) -> None:
        tx.execute("DELETE FROM lex_main WHERE term = ?", (term,))

    # --- delta postings: written since the last compaction -----------------------------
    @staticmethod
    def add_delta(tx, rows: list[tuple[str, int, bytes]]) -> None:
        """Append (term, docid, frequencies) postings."""
        tx.executemany("INSERT INTO lex_delta (term, docid, tfs) VALUES (?, ?, ?)", rows)

    def delta_size(self, tx=None) -> int:
        db = tx if tx is not None else self._own().db
        return int(db.execute("SELECT COUNT(*) FROM lex_delta").fetchone()[0])

    @staticmethod
    def delta_postings(tx) -> Iterator[tuple[str, int, bytes]]:
        """Every delta posting (term, docid, frequencies), by term then docid."""
        return (tuple(r) for r in tx.execute("SELECT term, docid, tfs FROM lex_delta ORDER BY term, docid"))

    # --- the query side ---------------------------------------------------------------
    def postings_of(self, term: str) -> tuple[tuple[bytes, bytes] | None, list[tuple[int, bytes]]]:
        """A term's main row (docids, frequencies) or None, and its delta postings
        (docid, frequencies): what a search weighs for the term."""
        db = self._own().db
        row = db.execute("SELECT docids, tfs FROM lex_main WHERE term = ?", (term,)).fetchone()
        delta = [tuple(r) for r in db.execute("SELECT docid, tfs FROM lex_delta WHERE term = ?", (term,))]
        return ((row[0], row[1]) if row else None), delta

    def postings_of_many(self, terms: list[str]) -> dict[str, tuple[tuple[bytes, bytes] | None,
                                                                  list[tuple[int, bytes]]]]:
        """``postings_of`` for several terms at once (two statements per ``IN_CHUNK`` terms, one
        connection look-up): a search reads all the terms it has not weighed yet together.
        Terms with no postings map to ``(None, [])``."""
        db = self._own().db
        out: dict[str, tuple[tuple[bytes, bytes] | None, list[tuple[int, bytes]]]] = {t: (None, []) for t in terms}
        wanted = list(out)
        for i in range(0, len(wanted), IN_CHUNK):
            part = wanted[i:i + IN_CHUNK]
            marks = ", ".join("?" * len(part))
            for term, docids, tfs in db.execute(f"SELECT term, docids, tfs FROM lex_main WHERE term IN ({marks})",
                                                part):
                out[term] = ((docids, tfs), out[term][1])
            for term, docid, tfs in db.execute(f"SELECT term, docid, tfs FROM lex_delta WHERE term IN ({marks})",
                                               part):
                out[term][1].append((docid, tfs))
        return out

    @staticmethod
    def clear_delta(tx) -> None:
        tx.execute("DELETE FROM lex_delta")
