"""Audits of skills kept by content, and the owner's trust in a skill's content.

Per skill and file: its hash, size, time and findings (``FILE_FIELDS``); per skill: the key
over its files' hashes, the rules version, its risk, all its findings and when it was audited
(``AUDIT_FIELDS``); per skill the owner trusts: the content key and risk they allowed
(``TRUST_FIELDS``). Plain values in and out: findings are lists of dicts, times ISO strings.
A write the disk or a lock refuses raises ``StoreError``. Each write also advances
``audit_generation`` in ``meta``, so a reader that keeps a derived set (the skills hidden from
agents) knows when to read again."""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import contextmanager
from typing import Any

from .sqlite import Store
from .writes import refused_as_store_error

FILE_FIELDS = ("file", "sha256", "size", "mtime_ns", "findings")
AUDIT_FIELDS = ("skill_id", "content_key", "rules_version", "risk", "findings", "audited_at")
TRUST_FIELDS = ("skill_id", "content_key", "risk", "note", "trusted_at")
IN_CHUNK = 500


def _bump(tx) -> None:
    tx.execute("INSERT INTO meta VALUES ('audit_generation', '1') ON CONFLICT(key) DO UPDATE"
               " SET value = CAST(value AS INTEGER) + 1")


def _audit(row) -> dict[str, Any]:
    d = dict(zip(AUDIT_FIELDS, row))
    d["findings"] = json.loads(d["findings"] or "[]")
    return d


class Audits:
    """The audit rows of a store. Methods that write take the caller's transaction ``tx``
    (from ``Store.tx()``) or open their own."""

    def __init__(self, store: Store, *, trusts: Any = None):
        self.store = store
        # the owner's trust of a team lives in the team store (``pg_pins.PgTrusts``); audits
        # stay with each server's index, which audits its own files
        self._trusts = trusts

    @contextmanager
    def _tx(self, tx=None):
        if tx is not None:
            yield tx
            return
        with refused_as_store_error(self.store), self.store.tx() as own:
            yield own

    # --- files ---------------------------------------------------------------------------
    def file_states(self, skill_id: str, tx=None) -> dict[str, dict[str, Any]]:
        """The skill's files as last audited: relative path -> ``FILE_FIELDS`` (findings as dicts)."""
        db = tx if tx is not None else self.store.db
        out = {}
        for row in db.execute(f"SELECT {', '.join(FILE_FIELDS)} FROM audit_files WHERE skill_id = ?", (skill_id,)):
            d = dict(zip(FILE_FIELDS, row))
            d["findings"] = json.loads(d["findings"] or "[]")
            out[d["file"]] = d
        return out

    def all_file_stats(self) -> tuple[dict[str, str], dict[str, dict[str, tuple[int, int]]]]:
        """(skill id -> the rules version it was audited with, skill id -> {file: (size,
        mtime_ns)}) of every audited skill, in two reads: what a refresh of many skills compares
        the disk with."""
        db = self.store.db
        versions = dict(db.execute("SELECT skill_id, rules_version FROM audits"))
        stats: dict[str, dict[str, tuple[int, int]]] = {}
        for sid, f, size, mt in db.execute("SELECT skill_id, file, size, mtime_ns FROM audit_files"):
            stats.setdefault(sid, {})[f] = (size, mt)
        return versions, stats

    # --- skills --------------------------------------------------------------------------
    def save(self, skill_id: str, *, content_key: str, rules_version: str, risk: str, findings: list[dict],
             files: list[dict[str, Any]], at: str, tx=None) -> None:
        """Replace the skill's audit: its files (dicts of ``FILE_FIELDS``) and its summary."""
        with self._tx(tx) as t:
            t.execute("DELETE FROM audit_files WHERE skill_id = ?", (skill_id,))
            t.executemany("INSERT INTO audit_files VALUES (?, ?, ?, ?, ?, ?)",
                          [(skill_id, f["file"], f.get("sha256"), int(f["size"]), int(f["mtime_ns"]),
                            json.dumps(f.get("findings") or [], ensure_ascii=False)) for f in files])
            t.execute("INSERT OR REPLACE INTO audits VALUES (?, ?, ?, ?, ?, ?)",
                      (skill_id, content_key, rules_version, risk, json.dumps(findings, ensure_ascii=False), at))
            _bump(t)

    def touch_files(self, skill_id: str, states: Iterable[tuple[str, int, int]], tx=None) -> None:
        """Record new (file, size, mtime_ns) for files whose content hashed the same."""
        with self._tx(tx) as t:
            t.executemany("UPDATE audit_files SET size = ?, mtime_ns = ? WHERE skill_id = ? AND file = ?",
                          [(size, mtime, skill_id, f) for f, size, mtime in states])

    def get(self, skill_id: str) -> dict[str, Any] | None:
        row = self.store.db.execute(f"SELECT {', '.join(AUDIT_FIELDS)} FROM audits WHERE skill_id = ?",
                                    (skill_id,)).fetchone()
        return _audit(row) if row else None

    def risks(self, skill_ids: Iterable[str] | None = None) -> dict[str, str]:
        """Skill id -> risk, for these skills (every audited skill when None)."""
        db = self.store.db
        if skill_ids is None:
            return {sid: r for sid, r in db.execute("SELECT skill_id, risk FROM audits")}
        ids = list(dict.fromkeys(skill_ids))
        out: dict[str, str] = {}
        for i in range(0, len(ids), IN_CHUNK):
            part = ids[i:i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            out.update(db.execute(f"SELECT skill_id, risk FROM audits WHERE skill_id IN ({marks})", part).fetchall())
        return out

    def at_risk(self, risks: Iterable[str]) -> dict[str, str]:
        """Skill id -> content key of the skills whose risk is one of ``risks``."""
        rs = list(risks)
        if not rs:
            return {}
        marks = ",".join("?" * len(rs))
        return dict(self.store.db.execute(f"SELECT skill_id, content_key FROM audits WHERE risk IN ({marks})",
                                          rs).fetchall())

    def all_findings(self) -> list[tuple[str, str, list[dict]]]:
        """(skill id, risk, findings) of every audited skill with findings."""
        return [(sid, r, json.loads(f)) for sid, r, f in self.store.db.execute(
            "SELECT skill_id, risk, findings FROM audits WHERE risk != 'none' ORDER BY skill_id")]

    def audited_ids(self) -> set[str]:
        return {r[0] for r in self.store.db.execute("SELECT skill_id FROM audits")}

    def counts(self) -> dict[str, int]:
        """How many audited skills have each risk."""
        return {r: n for r, n in self.store.db.execute("SELECT risk, COUNT(*) FROM audits GROUP BY risk")}

    def forget(self, skill_id: str, tx=None) -> None:
        """Drop the skill's audit (its files are gone); the owner's trust is kept."""
        with self._tx(tx) as t:
            t.execute("DELETE FROM audit_files WHERE skill_id = ?", (skill_id,))
            t.execute("DELETE FROM audits WHERE skill_id = ?", (skill_id,))
            _bump(t)

    def generation(self) -> str:
        """Changes whenever an audit or a trust does."""
        mine = self.local_generation()
        return mine if self._trusts is None else f"{mine}.{self._trusts.generation()}"

    def local_generation(self) -> str:
        """Changes whenever an audit does, and a trust kept here (not a team's: that one is in
        the team store's pins generation too, ``pg_pins.PgPinnedContent.generation``)."""
        return self.store.get_meta("audit_generation", "0") or "0"

    # --- trust ---------------------------------------------------------------------------
    def trust(self, skill_id: str, *, content_key: str, risk: str, note: str, at: str, tx=None) -> dict[str, Any]:
        """The owner allows this content of the skill (replacing an earlier trust)."""
        if self._trusts is not None:
            return self._trusts.trust(skill_id, content_key=content_key, risk=risk, note=note, at=at)
        data = dict(zip(TRUST_FIELDS, (skill_id, content_key, risk, note, at)))
        with self._tx(tx) as t:
            t.execute("INSERT OR REPLACE INTO audit_trust VALUES (?, ?, ?, ?, ?)",
                      tuple(data[k] for k in TRUST_FIELDS))
            _bump(t)
        return data

    def untrust(self, skill_id: str, tx=None) -> bool:
        if self._trusts is not None:
            return self._trusts.untrust(skill_id)
        with self._tx(tx) as t:
            n = t.execute("DELETE FROM audit_trust WHERE skill_id = ?", (skill_id,)).rowcount
            _bump(t)
        return bool(n)

    def trusted(self, skill_id: str) -> dict[str, Any] | None:
        if self._trusts is not None:
            return self._trusts.trusted(skill_id)
        row = self.store.db.execute(f"SELECT {', '.join(TRUST_FIELDS)} FROM audit_trust WHERE skill_id = ?",
                                    (skill_id,)).fetchone()
        return dict(zip(TRUST_FIELDS, row)) if row else None

    def trusts(self) -> dict[str, str]:
        """Skill id -> the content key the owner allowed."""
        if self._trusts is not None:
            return self._trusts.trusts()
        return dict(self.store.db.execute("SELECT skill_id, content_key FROM audit_trust").fetchall())
