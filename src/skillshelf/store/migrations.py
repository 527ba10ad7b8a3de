"""The schema as ordered, named migrations. Each runs once, in order, recorded in
``schema_migrations``. Never edit a released migration: add a new one."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _script(db: sqlite3.Connection, sql: str) -> None:
    """Run several statements inside the caller's transaction (``executescript`` would
    commit it first)."""
    buf = ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                db.execute(buf)
            buf = ""
    if buf.strip():
        db.execute(buf)


def m001_skills(db: sqlite3.Connection) -> None:
    _script(db, """
    CREATE TABLE skills (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,          -- '<root label>:<folder relative to root>'
        root TEXT NOT NULL,               -- root label
        kind TEXT NOT NULL,               -- workspace | project | user | plugin | other
        rel TEXT NOT NULL,
        path TEXT NOT NULL,               -- absolute path of SKILL.md
        name TEXT NOT NULL,
        name_key TEXT NOT NULL,           -- lower-cased letters and digits: copies share it
        description TEXT NOT NULL,
        body TEXT NOT NULL,
        skill_type TEXT,
        tags TEXT NOT NULL DEFAULT '',
        repo TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        display_name TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        findings TEXT NOT NULL DEFAULT '[]',
        worst TEXT,
        active INTEGER NOT NULL DEFAULT 1,
        expires_on TEXT,
        content_hash TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        indexed_at TEXT NOT NULL
    );
    CREATE INDEX skills_name ON skills(name);
    CREATE INDEX skills_name_key ON skills(name_key);
    CREATE INDEX skills_body_hash ON skills(body_hash);
    CREATE TABLE invalid_files (
        path TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        rel TEXT NOT NULL,
        rule TEXT NOT NULL,
        message TEXT NOT NULL,
        line INTEGER,
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL
    );
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """)


def m002_lexical(db: sqlite3.Connection) -> None:
    # Pre-tokenized text (our tokenizer splits camelCase, dots, underscores); FTS5's
    # porter stemmer runs on top. rowid = skills.rowid.
    _script(db, """
    CREATE VIRTUAL TABLE skills_fts USING fts5(
        name, description, tags, headings, body,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    """)


def m003_embeddings(db: sqlite3.Connection) -> None:
    _script(db, """
    CREATE TABLE embeddings (
        text_hash TEXT NOT NULL,          -- sha256 of the embedded text
        model_id TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL,             -- float32, little-endian, L2-normalised
        PRIMARY KEY (text_hash, model_id)
    ) WITHOUT ROWID;
    CREATE TABLE skill_vectors (
        skill_rowid INTEGER NOT NULL,
        part INTEGER NOT NULL,            -- 0 = name + description, 1.. = body chunks
        text_hash TEXT NOT NULL,
        PRIMARY KEY (skill_rowid, part)
    ) WITHOUT ROWID;
    """)


def m004_usage(db: sqlite3.Connection) -> None:
    _script(db, """
    CREATE TABLE queries (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        text TEXT,                        -- NULL when hash_queries is on
        text_hash TEXT NOT NULL,
        mode TEXT NOT NULL,
        filters TEXT NOT NULL DEFAULT '{}',
        client TEXT,
        confident INTEGER NOT NULL,
        degraded INTEGER NOT NULL DEFAULT 0,
        n_hits INTEGER NOT NULL,
        latency_ms REAL NOT NULL
    );
    CREATE TABLE recommendations (
        id INTEGER PRIMARY KEY,
        query_id INTEGER NOT NULL REFERENCES queries(id),
        at TEXT NOT NULL,
        skill_id TEXT NOT NULL,
        name TEXT NOT NULL,
        rank INTEGER NOT NULL,
        score REAL NOT NULL
    );
    CREATE INDEX rec_skill ON recommendations(skill_id);
    CREATE INDEX rec_name ON recommendations(name);
    CREATE TABLE outcomes (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        skill_id TEXT,
        name TEXT NOT NULL,
        worked INTEGER NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        query_id INTEGER,
        client TEXT
    );
    CREATE INDEX out_name ON outcomes(name);
    """)
    for table in ("queries", "recommendations", "outcomes"):
        _script(db, f"""
        CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
        BEGIN SELECT RAISE(ABORT, 'usage logs are append-only'); END;
        CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
        WHEN (SELECT value FROM meta WHERE key = 'retention_unlocked') IS NULL
        BEGIN SELECT RAISE(ABORT, 'usage logs are append-only; use `skillshelf usage prune`'); END;
        """)


def m005_lexical_postings(db: sqlite3.Connection) -> None:
    # BM25F postings scored with numpy replace FTS5's bm25() (see lexical.py for why).
    _script(db, """
    CREATE TABLE lex_docs (
        docid INTEGER PRIMARY KEY AUTOINCREMENT,
        skill_rowid INTEGER NOT NULL,
        alive INTEGER NOT NULL DEFAULT 1,
        lens BLOB NOT NULL                 -- float32[5]: token counts per field
    );
    CREATE INDEX lex_docs_skill ON lex_docs(skill_rowid) WHERE alive = 1;
    CREATE TABLE lex_main (
        term TEXT PRIMARY KEY,
        docids BLOB NOT NULL,              -- int32[n]
        tfs BLOB NOT NULL                  -- uint16[n, 5]
    ) WITHOUT ROWID;
    CREATE TABLE lex_delta (
        term TEXT NOT NULL,
        docid INTEGER NOT NULL,
        tfs BLOB NOT NULL
    );
    CREATE INDEX lex_delta_term ON lex_delta(term);
    DROP TABLE skills_fts;
    UPDATE skills SET mtime_ns = 0, content_hash = '';
    """)


def m006_outcome_skill_index(db: sqlite3.Connection) -> None:
    # the recency exemption reads the latest outcome of recently shown skills on every query
    db.execute("CREATE INDEX out_skill ON outcomes(skill_id, id)")


def m007_index_id(db: sqlite3.Connection) -> None:
    # a random id per database: files derived from it (the vector cache) name the database
    # they came from, so a rebuilt database never reads another one's files
    import secrets

    db.execute("INSERT OR IGNORE INTO meta VALUES ('index_id', ?)", (secrets.token_hex(8),))


def m008_overlay(db: sqlite3.Connection) -> None:
    # the owner's decisions about skills in read-only roots (a collection someone else
    # maintains): deprecated with a reason, an expiry date. Kept here, keyed by skill id,
    # never written into the other collection's files. ``content_hash`` is the file's hash
    # when the decision was taken, so a changed file can be shown for review again.
    _script(db, """
    CREATE TABLE overlay (
        skill_id TEXT PRIMARY KEY,
        status TEXT,
        reason TEXT,
        expires_on TEXT,
        content_hash TEXT,
        updated_at TEXT NOT NULL
    );
    """)


def m009_judge_log(db: sqlite3.Connection) -> None:
    # One row per judged search (judge.py): which model judged, how long it took, what it
    # said of each candidate (JSON), and whether it answered (status: ok | timeout | error: ...).
    # Append-only like the usage logs; ``query_id`` is the logged search it judged, if any.
    _script(db, """
    CREATE TABLE judge_log (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        query_id INTEGER,
        mode TEXT NOT NULL,               -- rerank | filter | both
        backend TEXT NOT NULL,
        model TEXT NOT NULL,
        status TEXT NOT NULL,
        latency_ms REAL NOT NULL,
        candidates INTEGER NOT NULL,
        invented INTEGER NOT NULL DEFAULT 0,
        pick TEXT,
        verdicts TEXT NOT NULL DEFAULT '[]'
    );
    CREATE INDEX judge_log_at ON judge_log(at);
    CREATE TRIGGER judge_log_no_update BEFORE UPDATE ON judge_log
    BEGIN SELECT RAISE(ABORT, 'the judge log is append-only'); END;
    CREATE TRIGGER judge_log_no_delete BEFORE DELETE ON judge_log
    WHEN (SELECT value FROM meta WHERE key = 'retention_unlocked') IS NULL
    BEGIN SELECT RAISE(ABORT, 'the judge log is append-only'); END;
    """)


def m010_learning(db: sqlite3.Connection) -> None:
    # What ranking learns from outcomes (learning.py): one row per outcome reported against
    # a logged request, with that request's vector (so a later request that means the same
    # thing finds it) and its text (to explain a promotion). Derived from the append-only
    # logs and deletable (`skillshelf usage forget`): forgetting never touches the logs.
    _script(db, """
    CREATE TABLE learned (
        id INTEGER PRIMARY KEY,
        outcome_id INTEGER NOT NULL,
        at TEXT NOT NULL,
        skill_id TEXT NOT NULL,
        name_key TEXT NOT NULL,
        worked INTEGER NOT NULL,
        client TEXT,
        query_id INTEGER,
        request TEXT,                     -- NULL when hash_queries is on
        model_id TEXT NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE INDEX learned_key ON learned(name_key);
    """)


def m011_narrow_reads(db: sqlite3.Connection) -> None:
    # An unchanged sync reads every row's file state, a search state every row's copy group,
    # active flag and expiry, and the vector check which texts have a vector for the model.
    # In their tables those columns sit behind a body (skills) or a vector (embeddings), on
    # overflow pages: each such read walked ~40 MB at 5.3k skills. Covering indexes answer
    # them from a few hundred KB. (skills_name_key is the prefix of skills_search_state.)
    _script(db, """
    CREATE INDEX skills_file_state ON skills(id, mtime_ns, size);
    CREATE INDEX skills_search_state ON skills(name_key, active, expires_on);
    DROP INDEX skills_name_key;
    CREATE INDEX embeddings_model ON embeddings(model_id, text_hash);
    """)


def m012_audit_pins(db: sqlite3.Connection) -> None:
    # What each skill asks an agent to do that is risky (audit.py), kept by content: each file's
    # hash, size and time with its findings (an unchanged file is not read again, an unchanged
    # skill not re-audited), and per skill the key over its files' hashes, the rules version,
    # its risk and all its findings. ``audit_trust``: the owner allowed a skill after review,
    # for one content key (a changed file needs trust again), like an overlay.
    # Pins (pins.py): a root whose skills are held back from agents when their files change;
    # per skill the content key, the SKILL.md text and the findings when pinned, per file its
    # hash; ``pin_held`` the pinned skills whose files differ now (or that are new in the root).
    _script(db, """
    CREATE TABLE audit_files (
        skill_id TEXT NOT NULL,
        file TEXT NOT NULL,               -- relative to the skill folder
        sha256 TEXT,                      -- NULL: not hashed (over the cap, a link outside)
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        findings TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (skill_id, file)
    ) WITHOUT ROWID;
    CREATE TABLE audits (
        skill_id TEXT PRIMARY KEY,
        content_key TEXT NOT NULL,
        rules_version TEXT NOT NULL,
        risk TEXT NOT NULL,               -- none | low | medium | high
        findings TEXT NOT NULL DEFAULT '[]',
        audited_at TEXT NOT NULL
    );
    CREATE INDEX audits_risk ON audits(risk, skill_id);
    CREATE TABLE audit_trust (
        skill_id TEXT PRIMARY KEY,
        content_key TEXT NOT NULL,
        risk TEXT NOT NULL,               -- the risk the owner accepted
        note TEXT NOT NULL DEFAULT '',
        trusted_at TEXT NOT NULL
    );
    CREATE TABLE pinned_roots (
        root TEXT PRIMARY KEY,            -- the root's label
        path TEXT NOT NULL,
        pinned_at TEXT NOT NULL
    );
    CREATE TABLE pinned_skills (
        skill_id TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        content_key TEXT NOT NULL,
        skill_md TEXT NOT NULL,
        findings TEXT NOT NULL DEFAULT '[]',
        pinned_at TEXT NOT NULL
    );
    CREATE INDEX pinned_skills_root ON pinned_skills(root);
    CREATE TABLE pinned_files (
        skill_id TEXT NOT NULL,
        file TEXT NOT NULL,
        sha256 TEXT,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        PRIMARY KEY (skill_id, file)
    ) WITHOUT ROWID;
    CREATE TABLE pin_held (
        skill_id TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        reason TEXT NOT NULL,             -- changed | added
        since TEXT NOT NULL
    );
    """)


def m013_outcome_version(db: sqlite3.Connection) -> None:
    """The skill's version each outcome was reported for (NULL for outcomes reported before):
    outcomes per version, and a version that does worse than the one before it."""
    _script(db, """
    ALTER TABLE outcomes ADD COLUMN version INTEGER;
    CREATE INDEX out_skill_version ON outcomes(skill_id, version);
    """)


def m014_skills_path(db: sqlite3.Connection) -> None:
    # A lookup by name or id also tries the name as a SKILL.md path (``catalog.records.get``):
    # without an index that is a scan of every row, ~160 ms at 100k skills on every get_skill
    # and report_outcome (BENCHMARKS.md, load at scale).
    _script(db, "CREATE INDEX skills_path ON skills(path);")


def m015_change_journal(db: sqlite3.Connection) -> None:
    # Which rows a write touched, in order: a long-running server's search state reads the
    # rows that changed since it was built instead of all of them (100k rows: ~0.3 s of CPU
    # per edit; ``search.state``, ``search.lexical``). Kept by triggers, so no write path can
    # forget it; pruned to the last JOURNAL_KEEP entries (a state older than that reads all).
    _script(db, """
    CREATE TABLE change_journal (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,               -- 's': a skills row (rowid), 'd': a lex_docs row (docid)
        id INTEGER NOT NULL
    );
    CREATE TRIGGER journal_skill_insert AFTER INSERT ON skills
        BEGIN INSERT INTO change_journal (kind, id) VALUES ('s', NEW.rowid); END;
    CREATE TRIGGER journal_skill_update AFTER UPDATE OF name_key, active, expires_on ON skills
        BEGIN INSERT INTO change_journal (kind, id) VALUES ('s', NEW.rowid); END;
    CREATE TRIGGER journal_skill_delete AFTER DELETE ON skills
        BEGIN INSERT INTO change_journal (kind, id) VALUES ('s', OLD.rowid); END;
    CREATE TRIGGER journal_doc_insert AFTER INSERT ON lex_docs
        BEGIN INSERT INTO change_journal (kind, id) VALUES ('d', NEW.docid); END;
    CREATE TRIGGER journal_doc_update AFTER UPDATE OF alive ON lex_docs
        BEGIN INSERT INTO change_journal (kind, id) VALUES ('d', NEW.docid); END;
    CREATE TRIGGER journal_doc_delete AFTER DELETE ON lex_docs
        BEGIN INSERT INTO change_journal (kind, id) VALUES ('d', OLD.docid); END;
    """)


def m016_file_state_path(db: sqlite3.Connection) -> None:
    # An unchanged sync's first look compares each file's path too (a moved or copied home finds
    # the same skills, with the same times and sizes, at other paths): the covering index holds it.
    _script(db, """
    DROP INDEX skills_file_state;
    CREATE INDEX skills_file_state ON skills(id, mtime_ns, size, path);
    """)


def m017_held_origin(db: sqlite3.Connection) -> None:
    # A skill held because an archive marked it held keeps what it was imported as: the key of
    # its files' content and its name. A copy of that content, or the same name in its root
    # after its folder was renamed, is held too (supply.pins).
    _script(db, """
    ALTER TABLE pin_held ADD COLUMN content_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE pin_held ADD COLUMN name TEXT NOT NULL DEFAULT '';
    """)


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("001_skills", m001_skills),
    ("002_lexical", m002_lexical),
    ("003_embeddings", m003_embeddings),
    ("004_usage", m004_usage),
    ("005_lexical_postings", m005_lexical_postings),
    ("006_outcome_skill_index", m006_outcome_skill_index),
    ("007_index_id", m007_index_id),
    ("008_overlay", m008_overlay),
    ("009_judge_log", m009_judge_log),
    ("010_learning", m010_learning),
    ("011_narrow_reads", m011_narrow_reads),
    ("012_audit_pins", m012_audit_pins),
    ("013_outcome_version", m013_outcome_version),
    ("014_skills_path", m014_skills_path),
    ("015_change_journal", m015_change_journal),
    ("016_file_state_path", m016_file_state_path),
    ("017_held_origin", m017_held_origin),
]
