"""BM25F over postings kept in SQLite, scored with numpy.

Why not FTS5's ``bm25()``: it walks every phrase instance of every matched document, so
an agent's 15-term OR-query cost 25 ms at 5.3k skills and 460 ms at 100k (BENCHMARKS.md).
Here each term's postings are one BLOB (doc ids + per-field term frequencies); a query
reads ~15 BLOBs by primary key and adds vectors, so its cost grows with the postings
of the query's terms, not with document text.

Postings live in the store (``store.lexical.Postings``): one row per indexed version of a
skill (its docid), compacted postings (one row per term), and a delta of postings written
since the last compaction. A changed skill gets a new docid (its old one is marked dead),
so updates are appends; ``compact`` folds the delta into the main rows when it grows past
a bound.

Scoring is BM25F: per-field frequencies are length-normalised per field, weighted, summed
into one pseudo-frequency, then saturated once (k1) and multiplied by the term's IDF.
Terms are our tokenizer's tokens, stemmed by the Snowball English stemmer (PyStemmer).
"""

from __future__ import annotations

import functools
import math
import re
import struct
import threading
from array import array
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from itertools import chain, islice

import numpy as np

from ..store.lexical import Postings
from ..store.meta import ChangeJournal, IndexMeta
from ..text import COMPOUND_RE, expand, tokenize

FIELDS = ("name", "description", "tags", "headings", "body")
NF = len(FIELDS)
K1 = 1.2
B = 0.75
COMPACT_AT = 200_000  # delta rows that trigger a compaction (bounded merge cost, see BENCHMARKS.md)
MAX_TF = 65535


@functools.lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


# Bounded caches: the words that recur stay; a corpus' long tail of rare compounds (paths,
# identifiers, hashes: ~220k distinct ones in 5.3k skills) would otherwise hold ~180 MB.
@functools.lru_cache(maxsize=1 << 16)
def stem(token: str) -> str:
    return _stemmer().stemWord(token) if token.isascii() else token


@functools.lru_cache(maxsize=1 << 16)
def _compound_terms(compound: str) -> tuple[str, ...]:
    return tuple(stem(t) for t, stop in expand(compound) if not stop)


def terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Stemmed tokens of ``text`` (cached per compound word: vocabularies repeat)."""
    if keep_stopwords:
        return [stem(t) for t in tokenize(text, keep_stopwords=True)]
    return list(chain.from_iterable(map(_compound_terms, COMPOUND_RE.findall(text or ""))))


_PACK = struct.Struct("<5H")
_FIELD_BITS = np.array([1 << f for f in range(NF)], dtype=np.uint8)

# Scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, kana, CJK): a
# run of them is one term to the tokenizer, so whether a skill "holds the word" says nothing.
UNSPACED_RE = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
                         "\u4e00-\u9fff\uf900-\ufaff]")


def _field_counts(text: str) -> Counter:
    """Term frequencies of one field: each distinct compound word is expanded once and
    counted as often as it occurs (the same counts as ``Counter(terms(text))``)."""
    counts: Counter = Counter()
    for compound, c in Counter(COMPOUND_RE.findall(text or "")).items():
        for t in _compound_terms(compound):
            counts[t] += c
    return counts


def doc_postings(fields: tuple[str, ...]) -> tuple[dict[str, bytes], np.ndarray]:
    """Per-term frequencies (5 × uint16, packed) and the field lengths of one document."""
    per: dict[str, list[int]] = {}
    lens = np.zeros(NF, dtype=np.float32)
    for f, text in enumerate(fields):
        counts = _field_counts(text)
        lens[f] = sum(counts.values())
        for t, c in counts.items():
            v = per.get(t)
            if v is None:
                v = per[t] = [0, 0, 0, 0, 0]
            v[f] = min(MAX_TF, c)
    pack = _PACK.pack
    return {t: pack(*v) for t, v in per.items()}, lens


class Writer:
    """Indexes skills inside one sync transaction. Small batches go to the delta table;
    large ones (a first sync, a new root) are merged straight into the main postings."""

    BULK = 200              # documents: at or above, merge into main instead of the delta table
    FLUSH_AT = 4_000_000    # postings held in memory before a merge (~14 bytes each: bounds RSS)

    def __init__(self, tx) -> None:
        self.db = tx           # the sync's transaction (what ``store.tx()`` yields)
        # term -> (docids, packed frequencies): compact arrays, not a tuple per posting
        self.pending: dict[str, tuple[array, bytearray]] = {}
        self.docs = 0
        self.postings = 0
        self._last: tuple[int, list[str]] | None = None   # the last document added: docid, terms

    def add(self, skill_rowid: int, fields: tuple[str, ...]) -> int:
        """Index a skill's fields under a new docid (its earlier one no longer counts)."""
        remove(self.db, skill_rowid)
        per, lens = doc_postings(fields)
        docid = Postings.add_doc(self.db, skill_rowid, lens.tobytes())
        self._last = (docid, list(per))
        self.docs += 1
        self.postings += len(per)
        pending = self.pending
        for t, packed in per.items():
            entry = pending.get(t)
            if entry is None:
                entry = pending[t] = (array("i"), bytearray())
            entry[0].append(docid)
            entry[1].extend(packed)
        return docid

    @property
    def full(self) -> bool:
        """Enough postings held to merge now (``flush``, between two documents' writes)."""
        return self.postings >= self.FLUSH_AT

    def keep(self) -> None:
        """The documents added so far stay: a ``discard_last`` after this drops only a
        document added after it."""
        self._last = None

    def discard_last(self) -> None:
        """Drop the postings of the document added since ``keep``, when its writes were undone
        (the sync rolled its file back): its docid would be given again to the next document."""
        if self._last is None:
            return
        docid, terms = self._last
        self._last = None
        size = _PACK.size
        for t in terms:   # (all of them, or the first few when the add itself was cut short)
            entry = self.pending.get(t)
            if entry is not None and len(entry[0]) and entry[0][-1] == docid:
                entry[0].pop()
                del entry[1][-size:]
                if not len(entry[0]):
                    del self.pending[t]
        self.docs -= 1
        self.postings -= len(terms)

    def flush(self) -> None:
        if self.docs >= self.BULK:
            _merge(self.db, self.pending)
        else:
            size = _PACK.size
            Postings.add_delta(self.db, [(t, d, bytes(tfs[i * size:(i + 1) * size]))
                                         for t, (ids, tfs) in self.pending.items() for i, d in enumerate(ids)])
        self.pending = {}
        self.docs = self.postings = 0
        self._last = None
        dead, alive = Postings.doc_counts(self.db)
        if delta_size(self.db) > COMPACT_AT or dead > 0.2 * alive + 100:
            compact(self.db)


def remove(tx, skill_rowid: int) -> None:
    """The skill's postings no longer count (inside the caller's transaction)."""
    Postings.retire(tx, skill_rowid)


MERGE_BYTES = 16 << 20   # row bytes written at a time by a merge


def _merge(tx, pending: dict[str, tuple[array, bytearray]], step: int = 20_000) -> None:
    """Append new postings to the main rows of their terms (dead docs are dropped at compaction).
    ``pending`` is emptied as it goes, at most ``step`` terms or ``MERGE_BYTES`` of rows at a
    time, so the postings are never held twice (as arrays and as row bytes) in full. (A common
    term's main row holds a posting for most documents: late in a first index of 100k skills,
    20,000 terms' rows were ~hundreds of MB at once.)"""
    store = Postings()
    known = Postings.main_terms(tx) if pending else set()
    while pending:
        rows = []
        size = 0
        for term in list(islice(pending, step)):
            ids, tfs = pending.pop(term)
            new_ids = np.asarray(ids, dtype="<i4").tobytes()
            old = store.main_row(term, tx) if term in known else None
            if old:
                rows.append((term, old[0] + new_ids, old[1] + bytes(tfs)))
            else:
                rows.append((term, new_ids, bytes(tfs)))
            size += len(rows[-1][1]) + len(rows[-1][2])
            if size >= MERGE_BYTES:
                break
        Postings.put_main(tx, rows)


def delta_size(tx) -> int:
    return Postings().delta_size(tx)


def compact(tx) -> int:
    """Fold delta postings into main and drop dead docs (the caller's transaction)."""
    store = Postings()
    alive = set(Postings.live_docids(tx))
    add_ids: dict[str, list[int]] = defaultdict(list)
    add_tfs: dict[str, list[bytes]] = defaultdict(list)
    for term, docid, doc_tfs in Postings.delta_postings(tx):
        if docid in alive:
            add_ids[term].append(docid)
            add_tfs[term].append(doc_tfs)
    dead = Postings.doc_counts(tx)[0]
    touched = set(add_ids)
    if dead:
        touched |= Postings.main_terms(tx)
    alive_arr = np.array(sorted(alive), dtype=np.int64)
    rows = []
    for term in touched:
        old = store.main_row(term, tx)
        ids = [np.frombuffer(old[0], dtype=np.int32)] if old else []
        tfs = [np.frombuffer(old[1], dtype=np.uint16).reshape(-1, NF)] if old else []
        if term in add_ids:
            ids.append(np.array(add_ids[term], dtype=np.int32))
            tfs.append(np.frombuffer(b"".join(add_tfs[term]), dtype=np.uint16).reshape(-1, NF))
        all_ids = np.concatenate(ids)
        all_tfs = np.vstack(tfs)
        keep = np.isin(all_ids, alive_arr, assume_unique=False)
        if keep.all() and term not in add_ids:
            continue
        all_ids, all_tfs = all_ids[keep], all_tfs[keep]
        if len(all_ids):
            rows.append((term, all_ids.astype(np.int32).tobytes(), np.ascontiguousarray(all_tfs).tobytes()))
        else:
            Postings.delete_main(tx, term)
    Postings.put_main(tx, rows)
    Postings.clear_delta(tx)
    Postings.drop_dead_docs(tx)
    return len(rows)


@dataclass
class Matches:
    """Which fields of some skills hold a request's terms (``LexicalIndex.field_matches``)."""

    held: np.ndarray     # uint8 [skills, terms]: bit f set when field f (FIELDS) holds the term
    idf: np.ndarray      # float [terms]: each term's weight
    lens: np.ndarray     # float32 [skills, fields]: each skill's field lengths in terms
    checkable: bool = True   # False: the request cannot be checked word by word (no terms)

    def share(self, bits: int = (1 << NF) - 1) -> np.ndarray:
        """Per skill, the share of the request's term weight held in the fields ``bits``
        names (default: any field)."""
        total = float(self.idf.sum())
        if not total:
            return np.zeros(len(self.held))
        return ((self.held & bits) > 0) @ self.idf / total

    def count(self, bits: int) -> np.ndarray:
        """Per skill, how many of the request's terms the fields ``bits`` names hold."""
        return ((self.held & bits) > 0).sum(axis=1)


@dataclass
class _State:
    gen: str
    to_skill: np.ndarray      # docid -> skill rowid (-1 when dead)
    lens: np.ndarray          # docid -> field lengths, float32 [n, 5]
    avg: np.ndarray           # mean field length over live docs
    n: int
    wnorm: np.ndarray         # field weight / (1 - b + b * len / avg), per field and doc [5, n]
    dead: np.ndarray          # docids whose postings no longer count
    by_rowid: tuple | None = None   # (skill rowids sorted, their docids): rowid -> docid, made on first use
    # this generation's weighed postings (LexicalIndex._contribution): kept with the state they
    # were weighed against, so a search that holds an older state never mixes the two
    contrib: OrderedDict = field(default_factory=OrderedDict)
    cached: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    seq: int = 0              # the change-journal entry this state is current to
    db: str = ""              # the index id of the database it was read from


class LexicalIndex:
    """Query side: loads the small per-doc arrays once per index generation."""

    def __init__(self, store, weights: tuple[float, ...]):
        self.store = store
        self._store_postings = Postings(store)
        self._meta = IndexMeta(store)
        self._journal = ChangeJournal(store)
        self.weights = np.asarray(weights, dtype=np.float32)
        self._state: _State | None = None
        # how often searches asked for each term (halved every AGE_EVERY look-ups): what the
        # cache of weighed postings keeps; kept across generations
        self._asked: dict[str, int] = {}
        self._lookups = 0

    def _ensure(self, gen: str | None = None) -> _State:
        """The state of the index generation ``gen`` (default: read the current one): a
        caller that holds a snapshot of a generation passes it, saving a read."""
        if gen is not None and self._state is not None and self._state.gen == gen:
            return self._state
        gen = self._meta.generation()
        if self._state is not None and self._state.gen == gen:
            return self._state
        old = self._state
        patched = self._patched(old) if old is not None else None
        if old is not None and patched is not None:
            seq, to_skill, lens = patched
            db = old.db
        else:
            seq = self._journal.head()     # before the rows: a change after it is read again later
            db = self._meta.index_id()
            rows = self._store_postings.live_docs()
            docids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            top = int(docids.max(initial=0)) + 1
            to_skill = np.full(top, -1, dtype=np.int64)
            lens = np.zeros((top, NF), dtype=np.float32)
            to_skill[docids] = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
            blobs = b"".join(r[2] for r in rows)
            if len(blobs) == len(rows) * NF * 4:   # every row's lengths at once (a loop: ~0.1 s at 100k)
                lens[docids] = np.frombuffer(blobs, dtype=np.float32).reshape(len(rows), NF)
            else:
                for docid, _, blob in rows:
                    lens[docid] = np.frombuffer(blob, dtype=np.float32)
        live = to_skill >= 0
        avg = lens[live].mean(axis=0) if live.any() else np.ones(NF, dtype=np.float32)
        avg[avg == 0] = 1.0
        # field-major: weighing a term gathers one contiguous row per field (np.take), ~2x
        # faster than a fancy-indexed [postings, 5] gather
        wnorm = np.ascontiguousarray((self.weights / ((1 - B) + B * (lens / avg))).T, dtype=np.float32)
        self._state = _State(gen, to_skill, lens, avg.astype(np.float32), int(live.sum()), wnorm,
                             np.flatnonzero(~live), seq=seq, db=db)
        return self._state

    PATCH_MAX = 2000   # changed documents a state is patched with; more are read in full

    def _patched(self, old: _State) -> tuple[int, np.ndarray, np.ndarray] | None:
        """(journal entry, docid -> skill, field lengths) of ``old`` with the documents changed
        since it was built read again (an edit retires one docid and adds one), or None when
        the journal no longer reaches back to it or names more than ``PATCH_MAX``. The averages
        and weights are computed again from these (every document's, as a full load does)."""
        got = self._journal.since(old.seq, "d", index_id=old.db, most=self.PATCH_MAX)
        if got is None:
            return None
        ids, head = got
        top = max(len(old.to_skill), (ids[-1] + 1) if ids else 0)
        to_skill = np.full(top, -1, dtype=np.int64)
        to_skill[:len(old.to_skill)] = old.to_skill
        lens = np.zeros((top, NF), dtype=np.float32)
        lens[:len(old.lens)] = old.lens
        to_skill[ids] = -1            # a document dropped meanwhile is absent below: dead
        lens[ids] = 0.0               # (as a full load leaves a dead document's)
        for docid, rowid, alive, blob in self._store_postings.docs_of(ids):
            if alive:
                to_skill[docid] = rowid
                lens[docid] = np.frombuffer(blob, dtype=np.float32)
        # as long as a full load's (up to the last live document): a posting of a dead document past
        # it is out of range, and not counted in a term's document frequency
        end = int(np.flatnonzero(to_skill >= 0).max(initial=0)) + 1
        return head, to_skill[:end].copy(), lens[:end].copy()

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        return self._arrays(*self._store_postings.postings_of(term))

    @staticmethod
    def _arrays(row: tuple[bytes, bytes] | None, delta: list[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
        """(docids, [postings, 5] frequencies) of a term's main row and delta postings."""
        ids: list[np.ndarray] = []
        tfs: list[np.ndarray] = []
        if row:
            ids.append(np.frombuffer(row[0], dtype=np.int32))
            tfs.append(np.frombuffer(row[1], dtype=np.uint16).reshape(-1, NF))
        if delta:
            ids.append(np.array([d[0] for d in delta], dtype=np.int32))
            tfs.append(np.frombuffer(b"".join(d[1] for d in delta), dtype=np.uint16).reshape(-1, NF))
        if ids:
            return np.concatenate(ids), np.vstack(tfs)
        return np.zeros(0, dtype=np.int32), np.zeros((0, NF), dtype=np.uint16)

    # postings kept as ready contributions (9 bytes each: ~72 MB when full), per generation.
    # At 100k skills one request's terms hold ~300k postings, the 131 requests of the
    # benchmark ~12M distinct ones; 8M keeps ~85 % of the postings weighed (BENCHMARKS.md).
    CACHE_ENTRIES = 8_000_000
    AGE_EVERY = 20_000         # term look-ups between two halvings of the counts

    def _contribution(self, st: _State, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``_contributions`` of one term."""
        return self._contributions(st, [term])[0]

    def _contributions(self, st: _State, terms: list[str], *,
                       asked: bool = False) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per term: (live docids, idf × saturated BM25F frequency, the fields holding it as
        bits: 1 name, 2 description, 4 tags, 8 headings, 16 body). Cached per generation,
        since agents' requests share most of their words; the terms not cached are read from
        the store together. ``asked``: a search asked for these terms (counted).

        When the cache is full the terms searches asked for least often go first (the least
        recently used among equals), down to nine tenths of the bound. A cache that drops the
        least recent term first keeps little when the requests' words come round in a cycle
        longer than it holds (16 % of look-ups hit at 100k skills); by how often a term is
        asked, the words agents keep using stay whatever the order (BENCHMARKS.md)."""
        got: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        missing: list[str] = []
        with st.lock:   # searches run in several threads (the MCP server's tool calls)
            if asked:
                self._count(terms)
            for t in dict.fromkeys(terms):
                hit = st.contrib.get(t)
                if hit is not None:
                    st.contrib.move_to_end(t)
                    got[t] = hit
                else:
                    missing.append(t)
        if missing:
            read = self._store_postings.postings_of_many(missing)
            weighed = {t: self._weigh(st, *self._arrays(*read[t])) for t in missing}
            with st.lock:
                for t, out in weighed.items():
                    if t not in st.contrib:
                        st.cached += len(out[0])
                        st.contrib[t] = out
                if st.cached > self.CACHE_ENTRIES:
                    self._evict(st)
            got.update(weighed)
        return [got[t] for t in terms]

    def _count(self, terms: list[str]) -> None:
        """One more ask for each of ``terms`` (under the state's lock); every ``AGE_EVERY``
        look-ups the counts are halved, so words no longer asked for lose their place."""
        asked = self._asked
        for t in dict.fromkeys(terms):
            asked[t] = asked.get(t, 0) + 1
        self._lookups += len(terms)
        if self._lookups >= self.AGE_EVERY:
            self._lookups = 0
            self._asked = {t: n // 2 for t, n in asked.items() if n > 1}

    def _evict(self, st: _State) -> None:
        """Drop the least asked-for terms (least recent first among equals) until the cache
        holds at most nine tenths of ``CACHE_ENTRIES`` postings (under the state's lock)."""
        asked = self._asked
        order = sorted(enumerate(st.contrib), key=lambda it: (asked.get(it[1], 0), it[0]))
        low = self.CACHE_ENTRIES * 9 // 10
        for _, t in order:
            if st.cached <= low:
                break
            st.cached -= len(st.contrib.pop(t)[0])

    @staticmethod
    def _weigh(st: _State, ids: np.ndarray, tfs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A term's postings weighed against ``st`` (see ``_contributions``)."""
        # Dead docids (replaced or removed versions, until the next compaction) are left
        # in: filtering every posting list costs more than dropping them from the top-k.
        if len(ids) and int(ids.max()) >= len(st.to_skill):   # written after our snapshot
            keep = ids < len(st.to_skill)
            ids, tfs = ids[keep], tfs[keep]
        if len(ids) > 1 and not bool((ids[1:] >= ids[:-1]).all()):
            # kept in docid order (the scores do not care; coverage() looks docs up by bisection)
            order = np.argsort(ids, kind="stable")
            ids, tfs = ids[order], tfs[order]
        df = len(ids)
        if df:
            idf = math.log(1 + (max(st.n, df) - df + 0.5) / (df + 0.5))
            pseudo = np.zeros(df, dtype=np.float32)
            for f in range(NF):
                pseudo += tfs[:, f] * st.wnorm[f].take(ids)
            contrib = (idf * (K1 + 1)) * pseudo / (pseudo + K1)
        else:
            contrib = np.zeros(0, dtype=np.float32)
        fields = ((tfs > 0) @ _FIELD_BITS).astype(np.uint8)
        return ids, contrib.astype(np.float32, copy=False), fields

    def field_matches(self, query_terms: list[str], rowids, gen: str | None = None) -> Matches:
        """Which fields of each skill in ``rowids`` hold each of the request's terms, with
        the terms' weights (idf: a word no skill holds weighs most) and the skills' field
        lengths. Costs a bisection per term and skill (the postings are cached and in docid
        order), not a pass over the library. Not ``checkable`` (no terms looked for) when the
        request holds words of a script written without spaces: the tokenizer keeps a whole
        run of them as one term, which no skill holds, so the request cannot be checked word
        by word. ``gen``: as ``_ensure``."""
        st = self._ensure(gen)
        terms = list(dict.fromkeys(query_terms))
        checkable = bool(terms) and not any(UNSPACED_RE.search(t) for t in terms)
        if not checkable:
            terms = []
        n = len(rowids)
        held = np.zeros((n, len(terms)), dtype=np.uint8)
        lens = np.zeros((n, NF), dtype=np.float32)
        idf = np.zeros(len(terms))
        if st.n == 0 or not n:
            return Matches(held, idf, lens, checkable)
        if st.by_rowid is None:
            order = np.argsort(st.to_skill, kind="stable")
            st.by_rowid = (st.to_skill[order], order)
        srt, docid_of = st.by_rowid
        want = np.asarray(rowids, dtype=np.int64)
        at = np.maximum(np.searchsorted(srt, want, "right") - 1, 0)
        # the live docid of each skill (its latest version), or -1 for a skill not indexed
        found = srt[at] == want
        docs = np.where(found, docid_of[at], -1)
        lens[found] = st.lens[docs[found]]
        top = math.log(1 + (st.n + 0.5) / 0.5)
        cols = []
        for j, (ids, _, fields) in enumerate(self._contributions(st, terms)):
            df = len(ids)
            idf[j] = math.log(1 + (max(st.n, df) - df + 0.5) / (df + 0.5)) if df else top
            if df:
                k = np.searchsorted(ids, docs)
                k[k == df] = df - 1
                cols.append(np.where(ids[k] == docs, fields[k], 0))   # (no docid is -1)
            else:
                cols.append(np.zeros(n, dtype=np.uint8))
        held = np.ascontiguousarray(np.stack(cols, axis=1).astype(np.uint8, copy=False)) if cols else held
        return Matches(held, idf, lens, checkable)

    def coverage(self, query_terms: list[str], rowids: list[int]) -> list[float | None]:
        """Per skill in ``rowids``: the share of the request's term weight (idf) that skill
        holds in any field. Low for every hit when the request's rare words (the tool, the
        format, the platform it names) are in none of them: the mark of a request the library
        does not serve, however close the cosine. None per skill when the request cannot be
        checked word by word (``field_matches``)."""
        m = self.field_matches(query_terms, rowids)
        if not m.checkable:
            return [None] * len(rowids)
        return m.share().tolist()

    def search(self, query_terms: list[str], limit: int, gen: str | None = None) -> list[tuple[int, float]]:
        """(skill rowid, score) best first; ``gen``: as ``_ensure``."""
        st = self._ensure(gen)
        if st.n == 0 or not query_terms:
            return []
        parts = [p for p in self._contributions(st, list(dict.fromkeys(query_terms)), asked=True) if len(p[0])]
        if not parts:
            return []
        # One counting pass over every term's postings (np.bincount: a tight C loop) instead
        # of a scattered add per term: 7 ms -> 1 ms per query at 100k skills (BENCHMARKS.md).
        # The postings are gathered straight into the types bincount counts in (one copy, not
        # a gather then a cast: ~30 % of this step at 100k skills).
        total = sum(len(p[0]) for p in parts)
        ids = np.concatenate([p[0] for p in parts], out=np.empty(total, dtype=np.intp), casting="safe")
        weights = np.concatenate([p[1] for p in parts], out=np.empty(total, dtype=np.float64), casting="safe")
        scores = np.bincount(ids, weights=weights, minlength=len(st.to_skill))
        scores[st.dead] = 0.0
        k = min(limit, int(np.count_nonzero(scores)))
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(int(st.to_skill[d]), float(scores[d])) for d in top]
