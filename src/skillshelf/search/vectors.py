"""The dense index: one skill vector per row, aligned with the search state's positions.

Two implementations behind one small interface (``top``, ``dot``, ``vectors``, ``has``):

- ``ExactIndex``: a float32 matrix in memory, brute-force products with numpy. Exact;
  the default for libraries up to ``search.sq8_above`` skills.
- ``SQ8Index``: faiss' scalar quantizer, 8 bits per dimension (a quarter of the memory:
  38 MB instead of 154 MB per 100k × 384 vectors) with SIMD inner products. Used above
  that size when the optional ``faiss-cpu`` package is installed (``skillshelf[scale]``);
  imported only then. Each dimension is scaled to the signed 8-bit range by its largest
  value in the first block (``QT_8bit_direct_signed``) and the query is scaled the other
  way and rounded to 8 bits too, so faiss scores with integer SIMD: ~1.6 ms per 100k
  vectors here, against ~4.2 ms for its trained float decoder (``QT_8bit``), with the same
  top 200 to within 1 %. Scores are approximate, so the few vectors the pipeline reads
  back (feedback, confidence, MMR, the final max-sim) are decoded.

Both are loaded from SQLite in chunks in position order, so a large library never holds
a float32 copy of all its vectors at once while the SQ8 index is built.

Above ``CACHE_ABOVE`` skills the vectors, once read in position order, are also written to
a derived file beside the database (``vector-cache/``, one ``.npy`` per part), named by a
hash of everything they depend on: the database's id, the model, the part, the index and
vector generations, and the positions' rowids. Reading SQLite's vectors costs one B-tree
look-up per skill (~3-5 s at 100k); the file is read sequentially, in the same chunks.
Deleting the folder loses nothing; a file that does not match is ignored and rewritten.

After a change (a long-running server's watcher), ``load`` is given the ``previous`` load
of the same part: skills whose text hash is unchanged take their vector from the previous
cache file, and only the others are read from SQLite. The chunks are the same as a full
load's, so the result is too; above a quarter of changed skills it loads in full. (Below
``CACHE_ABOVE`` a full load is quick, and there is no file to reuse.)
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import numpy as np

from ..store import Store
from ..store.meta import IndexMeta
from ..store.vectors import IN_CHUNK, VectorStore

CHUNK = 8192            # rows read from SQLite per step while loading (and the SQ8 training sample)
# skills: below this, SQLite reads the vectors in a few hundredths of a second. At 5.3k skills its
# B-tree look-ups took ~0.15-0.2 s of a server's first search, the file ~0.05 s (16 MB on disk)
CACHE_ABOVE = 2_000


class ExactIndex:
    kind = "exact"
    provenance: "Previous | None" = None   # set by load(): what a later load may reuse

    def __init__(self, mat: np.ndarray, has: np.ndarray):
        self.mat, self.has = mat, has

    _sel: tuple | None = None   # the last selection: (allowed, ok, its count, what the search needs of it)

    def _selection(self, allowed: np.ndarray | None) -> tuple[np.ndarray, int, Any]:
        """(rows to search, how many, ``_prepare``'s value) for ``allowed``. The searches of
        one filter pass the same read-only mask (``SearchState.allowed``), so the last
        filtered selection is kept and used again (``has`` does not change once loaded): ~2 ms
        a search at 100k skills. Without a filter there is nothing to keep."""
        sel = self._sel
        if sel is not None and sel[0] is allowed:
            return sel[1], sel[2], sel[3]
        ok = self.has if allowed is None else (self.has & allowed)
        out = (allowed, ok, int(ok.sum()), self._prepare(ok))
        if allowed is not None and not allowed.flags.writeable:   # a mask that may change is not kept
            self._sel = out
        return out[1], out[2], out[3]

    def _prepare(self, ok: np.ndarray) -> Any:
        return None if ok.all() else ~ok

    def vectors(self, positions) -> np.ndarray:
        return self.mat[np.asarray(positions, dtype=np.int64)]

    def dot(self, positions, q: np.ndarray) -> np.ndarray:
        """Scores of ``q`` against the vectors at ``positions``."""
        return self.vectors(positions) @ q

    def scores(self, q: np.ndarray) -> np.ndarray:
        return self.mat @ q

    def top(self, q: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(positions, scores) of the ``k`` best rows that have a vector (and are allowed)."""
        full = self.scores(q)
        _, count, off = self._selection(allowed)
        if off is not None:
            full[off] = -np.inf
        k = min(k, count)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        top = np.argpartition(-full, k - 1)[:k]
        top = top[np.argsort(-full[top])]
        return top, full[top]

    @property
    def nbytes(self) -> int:
        return int(self.mat.nbytes)


class SQ8Index(ExactIndex):
    kind = "faiss-sq8"

    def __init__(self, index, has: np.ndarray, scale: np.ndarray):
        self.index, self.has, self.scale = index, has, scale

    @staticmethod
    def encode(block: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """Rows as the index stores them: each dimension times its scale, rounded, clipped to
        the signed 8-bit range (a value beyond the first block's largest is clipped)."""
        return np.clip(np.rint(block * scale), -127, 127).astype(np.float32)

    def vectors(self, positions) -> np.ndarray:
        pos = np.asarray(positions, dtype=np.int64)
        if not len(pos):
            return np.zeros((0, self.index.d), dtype=np.float32)
        return (self.index.reconstruct_batch(pos) / self.scale).astype(np.float32)

    def top(self, q: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        _, count, prepared = self._selection(allowed)
        k = min(k, count)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        params = prepared[2] if prepared is not None else None
        # x . q = sum (x_d s_d)(q_d / s_d): the query scaled the other way, stretched to the
        # 8-bit range and rounded (faiss scores these codes as integers; rounding here makes
        # the result the same whether or not it rounds the query itself)
        z = q.astype(np.float64) / self.scale
        peak = float(np.abs(z).max())
        if not np.isfinite(peak) or peak == 0.0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        stretch = 127.0 / peak
        d, i = self.index.search(np.rint(z * stretch).astype(np.float32)[None, :], k, params=params)
        keep = i[0] >= 0
        return i[0][keep].astype(np.int64), (d[0][keep] / stretch).astype(np.float32)

    def _prepare(self, ok: np.ndarray) -> Any:
        """(the bitmap, its selector, the search parameters holding it), or None when every row
        is searched. All three are kept together: the selector points into the bitmap."""
        if ok.all():
            return None
        import faiss

        # faiss tests bit i of byte i >> 3, least significant bit first
        bits = np.packbits(ok.astype(np.uint8), bitorder="little")
        sel = faiss.IDSelectorBitmap(len(ok), faiss.swig_ptr(bits))
        # faiss wraps SearchParameters.__init__ to take its fields as keywords (its SWIG signature does not show them)
        return bits, sel, faiss.SearchParameters(sel=sel)  # type: ignore[call-arg]

    @property
    def nbytes(self) -> int:
        return int(self.index.sa_code_size() * self.index.ntotal)


def _chunks(store: Store, model_id: str, rowids: np.ndarray, part: int, dim: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(float32 block, has block) in position order, CHUNK rows at a time; rows without a
    vector are zero."""
    n = len(rowids)
    vs = VectorStore(store)
    for start in range(0, n, CHUNK):
        ids = rowids[start:start + CHUNK]
        block = np.zeros((len(ids), dim), dtype=np.float32)
        has = np.zeros(len(ids), dtype=bool)
        rows = vs.vectors_between(model_id, part, int(ids[0]), int(ids[-1]))
        if rows:
            rid = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim)
            p = np.minimum(np.searchsorted(ids, rid), len(ids) - 1)
            ok = ids[p] == rid
            block[p[ok]] = vecs[ok]
            has[p[ok]] = True
        yield block, has


@dataclass
class Previous:
    """What a later ``load`` of the same part can reuse: the positions' rowids and text
    hashes, which had a vector, and the cache file holding the vectors."""

    model_id: str
    dim: int
    rowids: np.ndarray
    hashes: np.ndarray          # int64 per position: hash of its text hash, this process only (0 = none)
    has: np.ndarray
    path: Path


def previous(index: ExactIndex | None) -> Previous | None:
    """The reusable part of a loaded index (it holds no reference to the index itself)."""
    return getattr(index, "provenance", None)


def _position_hashes(store: Store, rowids: np.ndarray, part: int) -> np.ndarray:
    rows = VectorStore(store).text_hashes(part)
    out = np.zeros(len(rowids), dtype=np.int64)
    if rows and len(rowids):
        rid = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        # Python's string hash: compared only within this process; | 1: never 0 ("no vector row")
        h = np.fromiter((hash(r[1]) | 1 for r in rows), dtype=np.int64, count=len(rows))
        p = np.minimum(np.searchsorted(rowids, rid), len(rowids) - 1)
        ok = rowids[p] == rid
        out[p[ok]] = h[ok]
    return out


def _fetch(store: Store, model_id: str, rowids: np.ndarray, part: int, positions: np.ndarray,
           dim: int) -> dict[int, np.ndarray]:
    """Vectors of the skills at ``positions``, by position (those without one are absent)."""
    out: dict[int, np.ndarray] = {}
    vs = VectorStore(store)
    for i in range(0, len(positions), IN_CHUNK):
        by_rowid = {int(rowids[p]): int(p) for p in positions[i:i + IN_CHUNK]}
        for rid, blob in vs.vectors_of(model_id, part, list(by_rowid)):
            out[by_rowid[rid]] = np.frombuffer(blob, dtype="<f4", count=dim)
    return out


def _remapped_chunks(prev: Previous | None, store: Store, model_id: str, rowids: np.ndarray, part: int,
                     dim: int, hashes: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]] | None:
    """The chunks of a full load, built from ``prev`` for the skills whose text is unchanged
    and from SQLite for the rest; None when there is nothing to reuse, or too little."""
    if prev is None or prev.model_id != model_id or prev.dim != dim or not len(prev.rowids):
        return None
    n = len(rowids)
    oldpos = np.minimum(np.searchsorted(prev.rowids, rowids), len(prev.rowids) - 1)
    reuse = (prev.rowids[oldpos] == rowids) & (hashes != 0) & (prev.hashes[oldpos] == hashes) & prev.has[oldpos]
    need = np.flatnonzero((hashes != 0) & ~reuse)
    if len(need) > n // 4:
        return None
    f = _cached_chunks(prev.path, len(prev.rowids), dim, opened_only=True)
    if f is None:
        return None
    data_offset = f.tell()
    fetched = _fetch(store, model_id, rowids, part, need, dim)

    def old_rows(idx: np.ndarray) -> np.ndarray:
        """Rows ``idx`` (ascending) of the previous file."""
        lo, hi = int(idx[0]), int(idx[-1]) + 1
        f.seek(data_offset + lo * dim * 4)
        span = np.fromfile(f, dtype="<f4", count=(hi - lo) * dim).reshape(hi - lo, dim)
        return span[idx - lo]

    def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        try:
            for start in range(0, n, CHUNK):
                end = min(n, start + CHUNK)
                block = np.zeros((end - start, dim), dtype=np.float32)
                has = np.zeros(end - start, dtype=bool)
                r = np.flatnonzero(reuse[start:end])
                if len(r):
                    block[r] = old_rows(oldpos[start:end][r])
                    has[r] = True
                for p in need[(need >= start) & (need < end)]:
                    v = fetched.get(int(p))
                    if v is not None:
                        block[p - start] = v
                        has[p - start] = True
                yield block, has
        finally:
            f.close()

    return gen()


def cache_path(store: Store, model_id: str, rowids: np.ndarray, part: int, dim: int) -> Path:
    meta = IndexMeta(store)
    key = hashlib.sha256("\0".join([
        meta.index_id(), model_id, str(part), str(dim), meta.generation(), meta.vectors_generation(),
    ]).encode() + np.ascontiguousarray(rowids, dtype="<i8").tobytes()).hexdigest()[:24]
    return store.path.parent / "vector-cache" / f"part{part}-{key}.npy"


def _cached_chunks(path: Path, n: int, dim: int, *, opened_only: bool = False):
    """The chunks of a cache file, or None when it is missing or does not hold an (n, dim)
    float32 matrix in full. ``opened_only``: the open file instead, positioned at its data,
    for reading rows at random."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    try:
        if np.lib.format.read_magic(f) != (1, 0):
            raise ValueError("format version")
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        if shape != (n, dim) or fortran or dtype != np.dtype("<f4"):
            raise ValueError("shape")
        if os.fstat(f.fileno()).st_size != f.tell() + n * dim * 4:
            raise ValueError("size")
    except (ValueError, OSError):
        f.close()
        return None
    if opened_only:
        return f

    def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        with f:
            for start in range(0, n, CHUNK):
                rows = min(CHUNK, n - start)
                block = np.fromfile(f, dtype="<f4", count=rows * dim).reshape(rows, dim)
                yield block, cast(np.ndarray, block.any(axis=1))   # a stored vector is never all zeros

    return gen()


def _caching(chunks: Iterator[tuple[np.ndarray, np.ndarray]], path: Path, part: int, n: int,
             dim: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pass ``chunks`` through while writing them to ``path`` (atomically, when all were
    seen; other cache files of the same part are then removed). A file that cannot be
    written is skipped: the vectors are served from SQLite all the same."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    f = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(tmp, "wb")
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (n, dim)})
    except OSError:
        f = None
    done = False
    try:
        for block, has in chunks:
            if f is not None:
                try:
                    f.write(np.ascontiguousarray(block, dtype="<f4").tobytes())
                except OSError:
                    f.close()
                    f = None
            yield block, has
        done = True
    finally:
        written = False
        if f is not None:
            try:
                f.close()
                written = done
            except OSError:
                pass
        try:
            if written:
                os.replace(tmp, path)
                for old in path.parent.glob(f"part{part}-*.npy"):
                    if old != path:
                        old.unlink(missing_ok=True)
            tmp.unlink(missing_ok=True)   # still there only after a failed or unfinished write
        except OSError:
            pass


def load(store: Store, model_id: str, rowids: np.ndarray, part: int, *, sq8_above: int = 0,
         previous: Previous | None = None) -> ExactIndex | None:
    """The index of ``part`` vectors for ``model_id`` aligned with ``rowids`` (ascending),
    or None when no skill has such a vector. ``sq8_above``: use the faiss SQ8 index when
    the library has more skills than this and faiss is installed (0 = never). ``previous``:
    an earlier load of this part (``vectors.previous(index)``; above ``CACHE_ABOVE``), whose
    file's vectors are reused for the skills that did not change."""
    dim = VectorStore(store).dimensions(model_id, part)
    if dim is None or not len(rowids):
        return None
    n = len(rowids)
    chunks = path = hashes = None
    if n > CACHE_ABOVE:
        path = cache_path(store, model_id, rowids, part, dim)
        hashes = _position_hashes(store, rowids, part)
        chunks = _cached_chunks(path, n, dim)
        if chunks is None:   # not cached yet: build it (from the previous file where it can) and write it
            built = (_remapped_chunks(previous, store, model_id, rowids, part, dim, hashes)
                     or _chunks(store, model_id, rowids, part, dim))
            chunks = _caching(built, path, part, n, dim)
    if chunks is None:
        chunks = _chunks(store, model_id, rowids, part, dim)

    index = _build(chunks, n, dim, sq8_above)
    if index is not None and path is not None:
        assert hashes is not None   # read with the path
        index.provenance = Previous(model_id, dim, rowids, hashes, index.has, path)
    return index


def _build(chunks: Iterator[tuple[np.ndarray, np.ndarray]], n: int, dim: int, sq8_above: int) -> ExactIndex | None:
    """The index of ``n`` rows from ``chunks`` (None when no row has a vector)."""
    has = np.zeros(n, dtype=bool)
    if sq8_above and n > sq8_above:
        faiss: ModuleType | None
        try:
            import faiss
        except ImportError:
            faiss = None
        if faiss is not None:
            index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit_direct_signed,
                                               faiss.METRIC_INNER_PRODUCT)
            scale = None
            start = 0
            for block, h in chunks:
                has[start:start + len(h)] = h
                start += len(h)
                if scale is None:
                    # each dimension's largest magnitude in the first block's vectors maps to 127
                    # (a value beyond it is clipped: a small error on a few skills)
                    peak = np.abs(block[h] if h.any() else block).max(axis=0).astype(np.float64)
                    scale = 127.0 / np.where(peak > 0, peak, 1.0)
                index.add(SQ8Index.encode(block, scale))
            return SQ8Index(index, has, scale) if has.any() and scale is not None else None
    mat = np.zeros((n, dim), dtype=np.float32)
    start = 0
    for block, h in chunks:
        mat[start:start + len(h)] = block
        has[start:start + len(h)] = h
        start += len(h)
    return ExactIndex(mat, has) if has.any() else None
