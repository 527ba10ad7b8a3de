"""Pins, held skills and the owner's trust in the team store: the PostgreSQL twins of
``pins.PinnedContent`` and the trust part of ``audit.Audits``.

What a person reviewed is the team's decision: every server of a team store compares its own
files with the same pins, holds what the team holds, and is released by one ``trust``. Each
write advances a generation in the team store's ``meta`` table (``pin_generation``,
``trust_generation``); a server's cached set of hidden skills is keyed on it, so a trust on one
server is seen by the others at their next read.

File times are each server's own (a checkout on another machine has other ``mtime``\\ s), so
the pinned size and time are the pinner's: a server whose times differ hashes the file, which
is what a moved time means anyway, and ``touch_files`` records nothing (one server's times
would make every other server hash again).

A write that moves what a root's pins say was reviewed (a pin, an unpin, a trust, a copy)
records a change of kind ``pin`` keyed by the root's label: every server's export of the team's
``skillshelf.lock`` follows it (``supply.lock_pins``). A hold alone records none."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .pg_writes import call, clean, meta_values, write
from .pins import FILE_FIELDS, SKILL_FIELDS

TRUST_FIELDS = ("skill_id", "content_key", "risk", "note", "trusted_at")


def _bump(conn: Any, key: str) -> None:
    conn.execute("INSERT INTO meta VALUES (%s, '1') ON CONFLICT (key) DO UPDATE"
                 " SET value = (CAST(meta.value AS BIGINT) + 1)::TEXT", (key,))


def _reviewed_moved(pg: Any, conn: Any, root: str) -> None:
    """What the pins of ``root`` say was reviewed changed: every server is told (kind ``pin``)."""
    pg.record_change(conn, "pin", clean(root))


def _generation(pg: Any, key: str) -> str:
    return meta_values(pg, (key,))[0] or "0"


def _insert_skill(conn: Any, root: str, skill: dict[str, Any], at: str) -> None:
    sid = clean(skill["skill_id"])
    conn.execute("DELETE FROM pinned_files WHERE skill_id = %s", (sid,))
    conn.execute("INSERT INTO pinned_skills VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (skill_id) DO UPDATE"
                 " SET root = excluded.root, content_key = excluded.content_key, skill_md = excluded.skill_md,"
                 " findings = excluded.findings, pinned_at = excluded.pinned_at",
                 (sid, clean(root), skill["content_key"], clean(skill["skill_md"]),
                  clean(json.dumps(skill.get("findings") or [], ensure_ascii=False)), clean(at)))
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO pinned_files VALUES (%s, %s, %s, %s, %s)",
                        [(sid, clean(f["file"]), f.get("sha256"), int(f["size"]), int(f["mtime_ns"]))
                         for f in skill["files"]])
    conn.execute("DELETE FROM pin_held WHERE skill_id = %s", (sid,))


def _drop_root(conn: Any, root: str) -> int:
    n = conn.execute("DELETE FROM pinned_roots WHERE root = %s", (root,)).rowcount
    conn.execute("DELETE FROM pinned_files WHERE skill_id IN (SELECT skill_id FROM pinned_skills WHERE root = %s)",
                 (root,))
    conn.execute("DELETE FROM pinned_skills WHERE root = %s", (root,))
    conn.execute("DELETE FROM pin_held WHERE root = %s", (root,))
    return n


class PgPinnedContent:
    """The team's pins, in the team store ``pg`` (``store.postgres.PgStore``). Refusals and lost
    connections raise ``StoreError``."""

    def __init__(self, pg: Any):
        self.pg = pg

    # --- roots ---------------------------------------------------------------------------
    def pin_root(self, root: str, path: str, skills: list[dict[str, Any]], *, at: str) -> None:
        with write(self.pg) as conn:
            _drop_root(conn, clean(root))
            conn.execute("INSERT INTO pinned_roots VALUES (%s, %s, %s)", (clean(root), clean(path), clean(at)))
            for skill in skills:
                _insert_skill(conn, root, skill, at)
            _bump(conn, "pin_generation")
            _reviewed_moved(self.pg, conn, root)

    def copy_root(self, root: str, path: str, *, at: str, skills: list[dict[str, Any]],
                  held: dict[str, dict[str, str]]) -> bool:
        """Pin ``root`` as another library pinned it (``migrate-store``): each skill with its own
        ``pinned_at`` (else ``at``), and the skills of ``held`` (id -> ``reason``, ``since``) held,
        in one transaction. Nothing when the team store pins ``root`` already: False."""
        with write(self.pg) as conn:
            if not conn.execute("INSERT INTO pinned_roots VALUES (%s, %s, %s) ON CONFLICT (root) DO NOTHING",
                                (clean(root), clean(path), clean(at))).rowcount:
                return False
            for skill in skills:
                _insert_skill(conn, root, skill, skill.get("pinned_at") or at)
            for sid, h in held.items():
                conn.execute("INSERT INTO pin_held VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (skill_id) DO NOTHING",
                             (clean(sid), clean(root), clean(h["reason"]), clean(h["since"]),
                              clean(h.get("content_key") or ""), clean(h.get("name") or "")))
            _bump(conn, "pin_generation")
            _reviewed_moved(self.pg, conn, root)
        return True

    def copy_held(self, held: dict[str, dict[str, str]]) -> list[str]:
        """Hold skills as another library holds them (``migrate-store``): each of ``held`` (id ->
        ``root``, ``reason``, ``since``, ``content_key``, ``name``: an import's origin kept) the
        team store does not hold yet, in one transaction. Returns the ids held now."""
        out = []
        with write(self.pg) as conn:
            for sid, h in sorted(held.items()):
                if conn.execute("INSERT INTO pin_held VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (skill_id)"
                                " DO NOTHING", (clean(sid), clean(h["root"]), clean(h["reason"]), clean(h["since"]),
                                                clean(h.get("content_key") or ""),
                                                clean(h.get("name") or ""))).rowcount:
                    out.append(sid)
            if out:
                _bump(conn, "pin_generation")
        return out

    def unpin_root(self, root: str) -> bool:
        with write(self.pg) as conn:
            n = _drop_root(conn, clean(root))
            _bump(conn, "pin_generation")
            if n:
                _reviewed_moved(self.pg, conn, root)
        return bool(n)

    def roots(self) -> list[dict[str, Any]]:
        with call(self.pg) as conn:
            rows = conn.execute(
                "SELECT r.root, r.path, r.pinned_at, (SELECT COUNT(*) FROM pinned_skills s WHERE s.root = r.root)"
                " FROM pinned_roots r ORDER BY r.root").fetchall()
        return [{"root": r, "path": p, "pinned_at": at, "skills": int(n)} for r, p, at, n in rows]

    def root_labels(self) -> set[str]:
        with call(self.pg) as conn:
            return {r[0] for r in conn.execute("SELECT root FROM pinned_roots").fetchall()}

    # --- skills --------------------------------------------------------------------------
    def pin_skill(self, root: str, skill: dict[str, Any], *, at: str) -> None:
        with write(self.pg) as conn:
            _insert_skill(conn, root, skill, at)
            _bump(conn, "pin_generation")
            _reviewed_moved(self.pg, conn, root)

    def drop_skill(self, skill_id: str) -> None:
        sid = clean(skill_id)
        with write(self.pg) as conn:
            for table in ("pinned_files", "pinned_skills", "pin_held"):
                conn.execute(f"DELETE FROM {table} WHERE skill_id = %s", (sid,))
            _reviewed_moved(self.pg, conn, sid.partition(":")[0])
            _bump(conn, "pin_generation")

    def skill(self, skill_id: str) -> dict[str, Any] | None:
        with call(self.pg) as conn:
            row = conn.execute(f"SELECT {', '.join(SKILL_FIELDS)} FROM pinned_skills WHERE skill_id = %s",
                               (clean(skill_id),)).fetchone()
            if row is None:
                return None
            files = conn.execute(f"SELECT {', '.join(FILE_FIELDS)} FROM pinned_files WHERE skill_id = %s",
                                 (clean(skill_id),)).fetchall()
        d = dict(zip(SKILL_FIELDS, row))
        d["findings"] = json.loads(d["findings"] or "[]")
        d["files"] = {r[0]: dict(zip(FILE_FIELDS, r)) for r in files}
        return d

    def files(self, skill_id: str) -> dict[str, dict[str, Any]]:
        with call(self.pg) as conn:
            rows = conn.execute(f"SELECT {', '.join(FILE_FIELDS)} FROM pinned_files WHERE skill_id = %s",
                                (clean(skill_id),)).fetchall()
        return {r[0]: dict(zip(FILE_FIELDS, r)) for r in rows}

    def root_files(self, root: str) -> dict[str, dict[str, dict[str, Any]]]:
        with call(self.pg) as conn:
            rows = conn.execute(f"SELECT f.skill_id, {', '.join('f.' + c for c in FILE_FIELDS)} FROM pinned_files f"
                                " JOIN pinned_skills s ON s.skill_id = f.skill_id WHERE s.root = %s",
                                (clean(root),)).fetchall()
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for sid, *row in rows:
            out.setdefault(sid, {})[row[0]] = dict(zip(FILE_FIELDS, row))
        return out

    def skill_ids(self, root: str | None = None) -> dict[str, str]:
        with call(self.pg) as conn:
            if root is None:
                rows = conn.execute("SELECT skill_id, root FROM pinned_skills").fetchall()
            else:
                rows = conn.execute("SELECT skill_id, root FROM pinned_skills WHERE root = %s",
                                    (clean(root),)).fetchall()
        return dict(rows)

    def touch_files(self, skill_id: str, states: Iterable[tuple[str, int, int]]) -> None:
        """Nothing: file times are each server's own (see the module's note)."""
        return None

    # --- held ----------------------------------------------------------------------------
    def set_held(self, held: Mapping[str, tuple[str, ...]], released: Iterable[str], *, at: str) -> None:
        with write(self.pg) as conn:
            for sid in released:
                conn.execute("DELETE FROM pin_held WHERE skill_id = %s", (clean(sid),))
            for sid, (root, reason, *origin) in held.items():
                key, name = (origin + ["", ""])[:2]
                conn.execute("INSERT INTO pin_held (skill_id, root, reason, since, content_key, name)"
                             " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (skill_id) DO UPDATE"
                             " SET reason = excluded.reason, root = excluded.root,"
                             " content_key = CASE excluded.content_key WHEN '' THEN pin_held.content_key"
                             " ELSE excluded.content_key END,"
                             " name = CASE excluded.name WHEN '' THEN pin_held.name ELSE excluded.name END",
                             (clean(sid), clean(root), reason, clean(at), clean(key), clean(name)))
            _bump(conn, "pin_generation")

    def held(self) -> dict[str, dict[str, str]]:
        with call(self.pg) as conn:
            rows = conn.execute("SELECT skill_id, root, reason, since, content_key, name FROM pin_held"
                                " ORDER BY skill_id").fetchall()
        return {sid: {"root": r, "reason": why, "since": since, "content_key": key, "name": name}
                for sid, r, why, since, key, name in rows}

    def generation(self) -> str:
        """Changes whenever a pin, a hold or a trust of the team does: what is held from agents
        depends on all three, and a search asks before each answer (one statement, not two)."""
        pins, trusts = meta_values(self.pg, ("pin_generation", "trust_generation"))
        return f"{pins or '0'}.{trusts or '0'}"


class PgTrusts:
    """The owner's trust in a skill's content (by content key), kept for the whole team."""

    def __init__(self, pg: Any):
        self.pg = pg

    def trust(self, skill_id: str, *, content_key: str, risk: str, note: str, at: str) -> dict[str, Any]:
        data = dict(zip(TRUST_FIELDS, (skill_id, content_key, risk, note, at)))
        with write(self.pg) as conn:
            conn.execute("INSERT INTO audit_trust VALUES (%s, %s, %s, %s, %s) ON CONFLICT (skill_id) DO UPDATE"
                         " SET content_key = excluded.content_key, risk = excluded.risk, note = excluded.note,"
                         " trusted_at = excluded.trusted_at", tuple(clean(data[k]) for k in TRUST_FIELDS))
            _bump(conn, "trust_generation")
        return data

    def copy(self, data: dict[str, Any]) -> bool:
        """Keep a trust another library recorded (``migrate-store``: ``TRUST_FIELDS``) unless the
        team has one for that skill: False."""
        with write(self.pg) as conn:
            made = conn.execute("INSERT INTO audit_trust VALUES (%s, %s, %s, %s, %s) ON CONFLICT (skill_id) DO NOTHING",
                                tuple(clean(data[k]) for k in TRUST_FIELDS)).rowcount
            if made:
                _bump(conn, "trust_generation")
        return bool(made)

    def untrust(self, skill_id: str) -> bool:
        with write(self.pg) as conn:
            n = conn.execute("DELETE FROM audit_trust WHERE skill_id = %s", (clean(skill_id),)).rowcount
            _bump(conn, "trust_generation")
        return bool(n)

    def trusted(self, skill_id: str) -> dict[str, Any] | None:
        with call(self.pg) as conn:
            row = conn.execute(f"SELECT {', '.join(TRUST_FIELDS)} FROM audit_trust WHERE skill_id = %s",
                               (clean(skill_id),)).fetchone()
        return dict(zip(TRUST_FIELDS, row)) if row else None

    def trusts(self) -> dict[str, str]:
        with call(self.pg) as conn:
            return dict(conn.execute("SELECT skill_id, content_key FROM audit_trust").fetchall())

    def generation(self) -> str:
        return _generation(self.pg, "trust_generation")
