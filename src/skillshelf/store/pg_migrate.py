"""Copying a local library into a team store (``skillshelf migrate-store``): the reads of the
local SQLite store it needs (:class:`LocalRows`: every row of a log, in id order, a page at a
time) and the writes into PostgreSQL that never copy a row twice (:class:`TeamCopy`).

What was copied is known from the team store itself, so a second run copies nothing twice,
and a run cut short goes on where it stopped:

- queries and outcomes carry ``origin = 'local:<library>:<id>'`` (``<library>`` is the local
  database's random ``index_id``, so two people's libraries copied into one store never take
  each other's rows for their own); a query's recommendations are copied with it, in its
  transaction; an outcome's, a learned report's and a judged search's ``query_id`` become the
  team store's id of that query (none when it is not there);
- learned reports and the judge log have no origin column: the highest local id copied is
  kept in the team store's ``meta`` (``migrated:<library>:learned``), moved in the
  transaction that copies the rows;
- a skill, a draft or an overlay is copied only when the team store has none of that name
  or id; one it has already is counted as there (the same) or left out (different).

Timestamps, texts and scores are copied as they are; ids are the team store's own."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .audit import TRUST_FIELDS
from .pg_pins import PgPinnedContent, PgTrusts
from .pg_sources import PgSourceLocks
from .pg_writes import call, clean, write
from .pins import PinnedContent
from .postgres import PgStore
from .sqlite import Store

QUERY_COLS = ("id", "at", "text", "text_hash", "mode", "filters", "client", "confident", "degraded", "n_hits",
              "latency_ms")
REC_COLS = ("query_id", "at", "skill_id", "name", "rank", "score")
OUTCOME_COLS = ("id", "at", "skill_id", "name", "worked", "note", "query_id", "client")
LEARNED_COLS = ("id", "outcome_id", "at", "skill_id", "name_key", "worked", "client", "query_id", "request",
                "model_id", "vector")
JUDGE_COLS = ("id", "at", "query_id", "mode", "backend", "model", "status", "latency_ms", "candidates", "invented",
              "pick", "verdicts")
OVERLAY_COLS = ("skill_id", "status", "reason", "expires_on", "content_hash", "updated_at")

_BUMP = ("INSERT INTO meta (key, value) VALUES (%s, '1') ON CONFLICT (key) DO UPDATE"
         " SET value = (meta.value::bigint + 1)::text")
# the tables of what copies hold: the local name -> the team store's
_COUNTED = {"queries": "queries", "recommendations": "recommendations", "outcomes": "outcomes",
            "learned": "learned", "judge_log": "judge_log", "overlay": "overlay"}


class LocalRows:
    """The rows of a local library's SQLite store that a team store shares, read in id order
    as tuples in the column order of ``*_COLS``."""

    PAGE = 2000

    def __init__(self, store: Store):
        self.store = store

    def library_id(self) -> str:
        """The local database's random id (its ``index_id``): names where copied rows came from."""
        return self.store.get_meta("index_id", "") or "unnamed"

    def count(self, table: str, after: int = 0) -> int:
        """Rows of ``table`` (one of ``_COUNTED``), with an id above ``after`` where it has ids."""
        if table not in _COUNTED:
            raise ValueError(f"not a copied table: {table}")
        if table == "overlay":
            return int(self.store.db.execute("SELECT COUNT(*) FROM overlay").fetchone()[0])
        return int(self.store.db.execute(f"SELECT COUNT(*) FROM {table} WHERE id > ?", (int(after),)).fetchone()[0])

    def _pages(self, sql: str, after: int) -> Iterator[list[tuple]]:
        while True:
            rows = self.store.db.execute(sql, (int(after), self.PAGE)).fetchall()
            if not rows:
                return
            yield rows
            after = rows[-1][0]

    def queries(self, after: int = 0) -> Iterator[list[tuple]]:
        """Pages of queries with an id above ``after``."""
        return self._pages(f"SELECT {', '.join(QUERY_COLS)} FROM queries WHERE id > ? ORDER BY id LIMIT ?", after)

    def recommendations(self) -> Iterator[tuple]:
        """Every recommendation, by its query's id then its own (one ordered read: the local
        store has no index on ``query_id``)."""
        cur = self.store.db.execute(f"SELECT {', '.join(REC_COLS)} FROM recommendations ORDER BY query_id, id")
        while True:
            rows = cur.fetchmany(self.PAGE)
            if not rows:
                return
            yield from rows

    def outcomes(self, after: int = 0) -> Iterator[list[tuple]]:
        return self._pages(f"SELECT {', '.join(OUTCOME_COLS)} FROM outcomes WHERE id > ? ORDER BY id LIMIT ?", after)

    def learned(self, after: int = 0) -> Iterator[list[tuple]]:
        return self._pages(f"SELECT {', '.join(LEARNED_COLS)} FROM learned WHERE id > ? ORDER BY id LIMIT ?", after)

    def judge_log(self, after: int = 0) -> Iterator[list[tuple]]:
        return self._pages(f"SELECT {', '.join(JUDGE_COLS)} FROM judge_log WHERE id > ? ORDER BY id LIMIT ?", after)

    def overlays(self) -> list[dict[str, Any]]:
        return [dict(zip(OVERLAY_COLS, r)) for r in
                self.store.db.execute(f"SELECT {', '.join(OVERLAY_COLS)} FROM overlay ORDER BY skill_id")]

    def pinned_roots(self) -> list[dict[str, Any]]:
        """Every pinned root (``root``, ``path``, ``pinned_at``) with its pinned ``skills`` (as
        ``PinnedContent.skill`` gives each, ``files`` a list) and ``held`` (skill id -> ``reason``,
        ``since``)."""
        pins = PinnedContent(self.store)
        held = pins.held()
        out = []
        for r in pins.roots():
            skills = []
            for sid in sorted(pins.skill_ids(r["root"])):
                s = pins.skill(sid)
                if s is not None:
                    skills.append({**s, "files": list(s["files"].values())})
            out.append({"root": r["root"], "path": r["path"], "pinned_at": r["pinned_at"], "skills": skills,
                        "held": {sid: h for sid, h in held.items() if h["root"] == r["root"]}})
        return out

    def trusts(self) -> list[dict[str, Any]]:
        """The owner's trusts (``TRUST_FIELDS``), by skill id."""
        return [dict(zip(TRUST_FIELDS, r)) for r in
                self.store.db.execute(f"SELECT {', '.join(TRUST_FIELDS)} FROM audit_trust ORDER BY skill_id")]


def _texts(rows: Iterable[tuple], i: int) -> list[Any]:
    return [clean(r[i]) for r in rows]


def _ints(rows: Iterable[tuple], i: int) -> list[int | None]:
    return [None if r[i] is None else int(r[i]) for r in rows]


def _floats(rows: Iterable[tuple], i: int) -> list[float]:
    return [float(r[i]) for r in rows]


class TeamCopy:
    """Writes (and, for a dry run, counts) copies of one local library's rows in the team
    store ``pg``. ``empty``: the store has no schema yet (a dry run against a new database):
    nothing is there, nothing is read."""

    def __init__(self, pg: PgStore | None, library_id: str, *, empty: bool = False):
        self.pg = pg
        self.library = library_id
        self.prefix = f"local:{library_id}:"
        self.empty = empty

    def _key(self, kind: str) -> str:
        return f"migrated:{self.library}:{kind}"

    # --- usage logs: queries with their recommendations, outcomes -------------------------------
    def new_ids(self, table: str, ids: list[int]) -> list[int]:
        """Those of the local ids ``ids`` whose row is not in ``table`` (queries | outcomes) yet."""
        if table not in ("queries", "outcomes"):
            raise ValueError(f"not a table with origins: {table}")
        if self.empty or not ids:
            return list(ids)
        with call(self.pg) as conn:
            rows = conn.execute(f"SELECT u.id FROM unnest(%s::bigint[]) AS u(id) WHERE NOT EXISTS"
                                f" (SELECT 1 FROM {table} t WHERE t.origin = %s::text || u.id) ORDER BY u.id",
                                ([int(i) for i in ids], self.prefix)).fetchall()
        return [int(r[0]) for r in rows]

    def copy_queries(self, queries: list[tuple], recs: list[tuple]) -> tuple[int, int]:
        """Copy the queries (``QUERY_COLS``) the team store lacks, with their recommendations
        (``REC_COLS``; those of queries it has already are left): one transaction. Returns
        (queries copied, recommendations copied)."""
        if not queries:
            return 0, 0
        q = queries
        with write(self.pg) as conn:
            got = conn.execute("""
                INSERT INTO queries (at, text, text_hash, mode, filters, client, confident, degraded, n_hits,
                                     latency_ms, origin)
                SELECT u.at, u.text, u.text_hash, u.mode, u.filters, u.client, u.confident, u.degraded, u.n_hits,
                       u.latency_ms, %s::text || u.lid
                FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
                            %s::int[], %s::int[], %s::int[], %s::float8[]) WITH ORDINALITY
                     AS u(lid, at, text, text_hash, mode, filters, client, confident, degraded, n_hits, latency_ms, o)
                ORDER BY u.o
                ON CONFLICT (origin) DO NOTHING
                RETURNING id, origin""",
                (self.prefix, _ints(q, 0), _texts(q, 1), _texts(q, 2), _texts(q, 3), _texts(q, 4),
                 [clean(r[5] or "{}") for r in q], _texts(q, 6), _ints(q, 7), _ints(q, 8), _ints(q, 9),
                 _floats(q, 10))).fetchall()
            new = {int(origin[len(self.prefix):]): int(qid) for qid, origin in got}
            mine = [r for r in recs if r[0] in new]
            if mine:
                # COPY: three times faster than an INSERT of arrays, and these rows cannot conflict
                with conn.cursor().copy("COPY recommendations (query_id, at, skill_id, name, rank, score)"
                                        " FROM STDIN") as copy:
                    for r in mine:
                        copy.write_row((new[r[0]], clean(r[1]), clean(r[2]), clean(r[3]), int(r[4]), float(r[5])))
        return len(new), len(mine)

    def copy_outcomes(self, rows: list[tuple]) -> int:
        """Copy the outcomes (``OUTCOME_COLS``) the team store lacks; each one's query is the
        copy of its local query (none when that is not in the team store). Returns how many."""
        if not rows:
            return 0
        with write(self.pg) as conn:
            return conn.execute("""
                INSERT INTO outcomes (at, skill_id, name, worked, note, query_id, client, origin)
                SELECT u.at, u.skill_id, u.name, u.worked, u.note, q.id, u.client, %s::text || u.lid
                FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::int[], %s::text[], %s::bigint[],
                            %s::text[]) WITH ORDINALITY AS u(lid, at, skill_id, name, worked, note, lqid, client, o)
                LEFT JOIN queries q ON q.origin = %s::text || u.lqid
                ORDER BY u.o
                ON CONFLICT (origin) DO NOTHING""",
                (self.prefix, _ints(rows, 0), _texts(rows, 1), _texts(rows, 2), _texts(rows, 3), _ints(rows, 4),
                 [clean(r[5] or "") for r in rows], _ints(rows, 6), _texts(rows, 7), self.prefix)).rowcount

    # --- learned reports and the judge log: copied above a mark ---------------------------------
    def mark(self, kind: str) -> int:
        """The highest local id of ``kind`` (learned | judge_log) copied so far (0: none)."""
        if self.empty:
            return 0
        with call(self.pg) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = %s", (self._key(kind),)).fetchone()
        return int(row[0]) if row else 0

    def _take_mark(self, conn: Any, kind: str) -> int:
        key = self._key(kind)
        conn.execute("INSERT INTO meta (key, value) VALUES (%s, '0') ON CONFLICT (key) DO NOTHING", (key,))
        return int(conn.execute("SELECT value FROM meta WHERE key = %s FOR UPDATE", (key,)).fetchone()[0])

    def copy_learned(self, rows: list[tuple]) -> int:
        """Copy learned reports (``LEARNED_COLS``, in id order) above the mark, and move the
        mark: one transaction. The learning counter's row lock is taken before the rows get
        their ids (as ``PgLearningMemory.add`` does), so a server's cache that appends by id
        never skips one. Returns how many were copied."""
        if not rows:
            return 0
        with write(self.pg) as conn:
            mark = self._take_mark(conn, "learned")
            todo = [r for r in rows if int(r[0]) > mark]
            if todo:
                conn.execute(_BUMP, ("learned_generation",))      # the lock orders the ids
                conn.execute("""
                    INSERT INTO learned (outcome_id, at, skill_id, name_key, worked, client, query_id, request,
                                         model_id, vector)
                    SELECT COALESCE(o.id, 0), u.at, u.skill_id, u.name_key, u.worked, u.client, q.id, u.request,
                           u.model_id, u.vector
                    FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::int[], %s::text[], %s::bigint[],
                                %s::text[], %s::text[], %s::bytea[]) WITH ORDINALITY
                         AS u(loid, at, skill_id, name_key, worked, client, lqid, request, model_id, vector, o)
                    LEFT JOIN outcomes o ON o.origin = %s::text || u.loid
                    LEFT JOIN queries q ON q.origin = %s::text || u.lqid
                    ORDER BY u.o""",
                    (_ints(todo, 1), _texts(todo, 2), _texts(todo, 3), _texts(todo, 4), _ints(todo, 5),
                     _texts(todo, 6), _ints(todo, 7), _texts(todo, 8), _texts(todo, 9),
                     [bytes(r[10]) for r in todo], self.prefix, self.prefix))
                for key in sorted({clean(r[4]) for r in todo}):
                    PgStore.record_change(conn, "learning", key)
            conn.execute("UPDATE meta SET value = %s WHERE key = %s",
                         (str(max(mark, int(rows[-1][0]))), self._key("learned")))
        return len(todo)

    def copy_judged(self, rows: list[tuple]) -> int:
        """Copy judged searches (``JUDGE_COLS``, in id order) above the mark, and move the
        mark: one transaction. Returns how many were copied."""
        if not rows:
            return 0
        with write(self.pg) as conn:
            mark = self._take_mark(conn, "judge_log")
            todo = [r for r in rows if int(r[0]) > mark]
            if todo:
                conn.execute("""
                    INSERT INTO judge_log (at, query_id, mode, backend, model, status, latency_ms, candidates,
                                           invented, pick, verdicts)
                    SELECT u.at, q.id, u.mode, u.backend, u.model, u.status, u.latency_ms, u.candidates, u.invented,
                           u.pick, u.verdicts
                    FROM unnest(%s::text[], %s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[],
                                %s::float8[], %s::int[], %s::int[], %s::text[], %s::text[]) WITH ORDINALITY
                         AS u(at, lqid, mode, backend, model, status, latency_ms, candidates, invented, pick,
                              verdicts, o)
                    LEFT JOIN queries q ON q.origin = %s::text || u.lqid
                    ORDER BY u.o""",
                    (_texts(todo, 1), _ints(todo, 2), _texts(todo, 3), _texts(todo, 4), _texts(todo, 5),
                     _texts(todo, 6), _floats(todo, 7), _ints(todo, 8), _ints(todo, 9), _texts(todo, 10),
                     [clean(r[11] or "[]") for r in todo], self.prefix))
            conn.execute("UPDATE meta SET value = %s WHERE key = %s",
                         (str(max(mark, int(rows[-1][0]))), self._key("judge_log")))
        return len(todo)

    # --- skills, drafts, overlays: copied where the team store has none -------------------------
    def skill_states(self, names: list[str]) -> dict[str, tuple[str, bool]]:
        """name -> (sha256 of its SKILL.md, deleted) for those of ``names`` the store has had."""
        if self.empty or not names:
            return {}
        with call(self.pg) as conn:
            return {n: (s, bool(d)) for n, s, d in conn.execute(
                "SELECT name, sha256, deleted FROM skills WHERE name = ANY(%s)", (list(names),)).fetchall()}

    def copy_skill(self, name: str, text: bytes, sha256: str, version: int, *, files: dict[str, tuple[bytes, str]],
                   versions: list[tuple[int, bytes]], changelog: list[str], author: str) -> str | None:
        """Copy a workspace skill with its other files (path -> (bytes, sha256)), its versions and
        its changelog (JSON lines), and record the change: one transaction, only when the team
        store has never had a skill of this name. Returns None when copied, else what it has:
        the sha256 of its SKILL.md, or "deleted"."""
        with write(self.pg) as conn:
            made = conn.execute("INSERT INTO skills (name, text, version, sha256, updated_by) VALUES (%s, %s, %s, %s, %s)"
                                " ON CONFLICT (name) DO NOTHING", (name, text, int(version), sha256, author)).rowcount
            if not made:
                row = conn.execute("SELECT sha256, deleted FROM skills WHERE name = %s", (name,)).fetchone()
                return "deleted" if row[1] else row[0]
            for path, (content, digest) in sorted(files.items()):
                conn.execute("INSERT INTO skill_files (name, path, content, sha256) VALUES (%s, %s, %s, %s)",
                             (name, path, content, digest))
            for v, t in versions:
                conn.execute("INSERT INTO history (name, version, text) VALUES (%s, %s, %s)"
                             " ON CONFLICT (name, version) DO NOTHING", (name, int(v), t))
            for entry in changelog:
                conn.execute("INSERT INTO changelog (name, entry) VALUES (%s, %s)", (name, clean(entry)))
            PgStore.record_change(conn, "skill", name)
        return None

    def draft_states(self) -> dict[str, tuple[bytes, str]]:
        if self.empty:
            return {}
        with call(self.pg) as conn:
            return {n: (bytes(c), r) for n, c, r in conn.execute("SELECT name, content, record FROM drafts")}

    def copy_draft(self, name: str, content: bytes, record: str) -> bool:
        """Copy a draft unless the store has one of this name; True when copied."""
        with write(self.pg) as conn:
            made = conn.execute("INSERT INTO drafts (name, content, record) VALUES (%s, %s, %s)"
                                " ON CONFLICT (name) DO NOTHING", (name, content, clean(record))).rowcount
            if made:
                PgStore.record_change(conn, "draft", name)
        return bool(made)

    def new_rejections(self, entries: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Those (name, JSON entry) of the rejected drafts' log the store does not hold."""
        if self.empty or not entries:
            return list(entries)
        with call(self.pg) as conn:
            have = {(n, e) for n, e in conn.execute("SELECT name, entry FROM draft_rejections")}
        return [(n, e) for n, e in entries if (clean(n), clean(e)) not in have]

    def copy_rejections(self, entries: list[tuple[str, str]]) -> int:
        if not entries:
            return 0
        with write(self.pg) as conn:
            n = 0
            for name, entry in entries:
                n += conn.execute("INSERT INTO draft_rejections (name, entry) SELECT %s, %s WHERE NOT EXISTS"
                                  " (SELECT 1 FROM draft_rejections WHERE name = %s AND entry = %s)",
                                  (clean(name), clean(entry), clean(name), clean(entry))).rowcount
        return n

    def overlay_states(self) -> dict[str, dict[str, Any]]:
        if self.empty:
            return {}
        with call(self.pg) as conn:
            return {r[0]: dict(zip(OVERLAY_COLS, r)) for r in
                    conn.execute(f"SELECT {', '.join(OVERLAY_COLS)} FROM overlay").fetchall()}

    def copy_overlay(self, data: dict[str, Any]) -> bool:
        """Copy one overlay unless the store has one for the skill; True when copied (and a
        change is recorded, so every server applies it to its index)."""
        with write(self.pg) as conn:
            made = conn.execute(f"INSERT INTO overlay ({', '.join(OVERLAY_COLS)}) VALUES (%s, %s, %s, %s, %s, %s)"
                                " ON CONFLICT (skill_id) DO NOTHING",
                                tuple(clean(data[c]) if c != "updated_at" else clean(data[c] or "")
                                      for c in OVERLAY_COLS)).rowcount
            if made:
                PgStore.record_change(conn, "overlay", clean(data["skill_id"]))
        return bool(made)


    # --- what a person decided about the supply: pins, trusts, the sources' lock -------------
    def pin_states(self) -> dict[str, dict[str, str]]:
        """Each root the team store pins -> its pinned skills' content keys, by skill id."""
        if self.empty:
            return {}
        with call(self.pg) as conn:
            roots: dict[str, dict[str, str]] = {r[0]: {} for r in conn.execute("SELECT root FROM pinned_roots")}
            for sid, root, key in conn.execute("SELECT skill_id, root, content_key FROM pinned_skills"):
                roots.setdefault(root, {})[sid] = key
        return roots

    def copy_pinned_root(self, pinned: dict[str, Any]) -> bool:
        """Pin a root as the local library pinned it (``LocalRows.pinned_roots``), unless the team
        store pins it already; True when copied."""
        return PgPinnedContent(self.pg).copy_root(pinned["root"], pinned["path"], at=pinned["pinned_at"],
                                                  skills=pinned["skills"], held=pinned["held"])

    def trust_states(self) -> dict[str, str]:
        return {} if self.empty else PgTrusts(self.pg).trusts()

    def copy_trust(self, data: dict[str, Any]) -> bool:
        return PgTrusts(self.pg).copy(data)

    def source_documents(self) -> dict[str, str]:
        """The team's lock: each source's document, by label."""
        return {} if self.empty else PgSourceLocks(self.pg).documents()

    def copy_sources(self, documents: dict[str, str], *, expect: dict[str, str]) -> None:
        """Add the sources of ``documents`` to the team's lock read as ``expect`` (``ConflictError``
        when another server changed one of them meanwhile)."""
        PgSourceLocks(self.pg).replace({**expect, **documents}, expect=expect, by="migrate-store")


# --- opening the team store ----------------------------------------------------------------------

class _Opened(PgStore):
    """A ``PgStore`` that says which migrations it applied when it opened."""

    applied_now: list[str] = []

    def migrate(self) -> list[str]:
        self.applied_now = super().migrate()
        return self.applied_now


class _Unchecked(PgStore):
    """A ``PgStore`` opened without migrating or checking its schema (a dry run reads it as
    it is)."""

    def check_schema(self) -> None:
        return None


def open_target(url: str, *, write: bool) -> tuple[PgStore, list[str], list[str]]:
    """Open the team store at ``url``: (the store, the migrations applied now, the migrations
    it still lacks). ``write``: apply the pending migrations (creating the schema of a new
    database); else change nothing and report them as lacking."""
    if write:
        pg = _Opened(url, create=True)
        return pg, list(pg.applied_now), []
    from .pg_migrations import MIGRATIONS

    unchecked = _Unchecked(url, migrate=False)
    try:
        have = set(unchecked.applied_migrations())
        if have - {name for name, _ in MIGRATIONS}:
            unchecked._refuse_newer(have)
    except BaseException:
        unchecked.close()
        raise
    return unchecked, [], [name for name, _ in MIGRATIONS if name not in have]
