"""Learning from outcomes: reports on earlier requests reorder the hits of later requests
that mean the same thing.

The model is a memory of reported requests, not a trained weight per skill. Each outcome
reported against a logged request is kept with that request's vector (``learned``
table). A new request looks up the earlier requests near it (cosine of the two request
vectors); each near one's report votes for (worked) or against (failed) its skill:

    vote = similarity kernel × time decay × (+1 worked, −1 failed)
    kernel = 0 below ``learning_similarity``, rising linearly to 1 at 0.80
    decay  = 0.5 ** (age in days / ``learning_half_life_days``)

A client's votes for one skill are summed and clipped to ± ``learning_client_cap`` (so
twenty reports from one client count like 1.5 fresh ones); the clients' sums are added and
squashed: shift = ``learning_weight`` × tanh(total / 2). The shift is added to the hit's
relative fused score (the top candidate's is 1.0) before diversification, so outcomes
reorder what retrieval found and never add a candidate; with the defaults one client moves
a hit by at most 0.2 × tanh(0.75) ≈ 0.13, which lifts it past neighbours of similar
retrieval strength but not past a match found by both retrievers when it was found by one.

Requests unlike every reported one get no vote at all (the kernel is 0), so their ranking
is exactly the plain pipeline's. Every shift is explained (``Hit.why``: "worked for 3
similar requests"), listed in the usage report with the requests behind it, and undone by
``skillshelf usage forget`` (which deletes rows of ``learned``; the usage logs stay).
"""

from __future__ import annotations

import datetime as _dt
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ValidationError
from .store import Store, now
from .text import name_key

# the similarity at which an earlier request counts fully (the kernel's upper end)
FULL_SIMILARITY = 0.80
# how many request vectors of recent searches the library keeps in memory, so a report does
# not embed its request again (and works with hash_queries, where the text is not logged)
RECENT_VECTORS = 2048


@dataclass
class Evidence:
    """What the outcomes of similar requests say about one copy group."""

    shift: float = 0.0                   # added to the relative fused score
    worked: int = 0                      # similar requests it was reported working for
    failed: int = 0
    clients: set = field(default_factory=set)
    requests: list[str] = field(default_factory=list)
    promoters: int = 0                   # clients whose reports, summed, say it worked

    def why(self) -> str | None:
        parts = []
        if self.worked:
            parts.append(f"worked for {self.worked} similar request{'s' * (self.worked != 1)}")
        if self.failed:
            parts.append(f"failed for {self.failed} similar request{'s' * (self.failed != 1)}")
        if not parts:
            return None
        verb = "promoted" if self.shift > 0 else "demoted" if self.shift < 0 else "unchanged"
        return f"{', '.join(parts)} ({verb})"


@dataclass
class _Memory:
    key: tuple
    vectors: np.ndarray          # (n, d) float32, unit rows
    rowid: np.ndarray            # int64 skill rowid of a copy of the reported skill (0: gone)
    sign: np.ndarray             # +1 worked, -1 failed
    days: np.ndarray             # float64 day number of the report
    client: list[str]
    request: list[str | None]
    last_id: int = 0             # the newest learned row read


def _day(at: str) -> float:
    try:
        t = _dt.datetime.fromisoformat(at)
    except ValueError:
        return 0.0
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.timestamp() / 86400.0


class Learner:
    """The outcome memory of one store, cached between searches (reloaded when a report is
    learned or forgotten)."""

    def __init__(self, store: Store):
        self.store = store
        self._mem: _Memory | None = None
        self._lock = threading.Lock()

    def _load(self, model_id: str) -> _Memory | None:
        gen = self.store.get_meta("learned_generation", "0")
        # a forget or a change of skills (rowids) re-reads everything; a new report is appended
        base = (self.store.get_meta("learned_epoch", "0"), self.store.get_meta("generation", "0"), model_id)
        key = (gen, *base)
        with self._lock:
            mem = self._mem
            if mem is not None and mem.key == key:
                return mem
            if mem is None or mem.key[1:] != base:
                mem = _Memory(key, np.zeros((0, 0), np.float32), np.zeros(0, np.int64), np.zeros(0), np.zeros(0),
                              [], [])
            rows = self.store.db.execute(
                "SELECT l.vector, l.worked, l.at, COALESCE(l.client, ''), l.request,"
                " (SELECT MIN(s.rowid) FROM skills s WHERE s.name_key = l.name_key), l.id"
                " FROM learned l WHERE l.model_id = ? AND l.id > ? ORDER BY l.id", (model_id, mem.last_id)).fetchall()
            if rows:
                vecs = np.vstack([np.frombuffer(r[0], dtype="<f4") for r in rows]).astype(np.float32)
                if len(mem.rowid) and vecs.shape[1] != mem.vectors.shape[1]:
                    vecs = None     # another dimension under the same model id: not comparable
                if vecs is None:
                    mem.last_id = int(rows[-1][6])
                else:
                    mem = _Memory(key, vecs if not len(mem.rowid) else np.vstack([mem.vectors, vecs]),
                                  np.concatenate([mem.rowid, np.asarray([r[5] or 0 for r in rows], dtype=np.int64)]),
                                  np.concatenate([mem.sign, [1.0 if r[1] else -1.0 for r in rows]]),
                                  np.concatenate([mem.days, [_day(r[2]) for r in rows]]),
                                  mem.client + [r[3] for r in rows], mem.request + [r[4] for r in rows],
                                  int(rows[-1][6]))
            mem.key = key
            self._mem = mem
            return mem

    def evidence(self, qvec: np.ndarray, model_id: str, settings, *, at: str | None = None) -> dict[int, Evidence]:
        """Skill rowid (a copy of each reported skill; the caller maps it to its copy
        group) -> the evidence of the reports on requests similar to ``qvec``."""
        mem = self._load(model_id)
        if mem is None or not len(mem.rowid) or mem.vectors.shape[1] != qvec.shape[0]:
            return {}
        sims = mem.vectors @ qvec.astype(np.float32)
        lo = float(settings.learning_similarity)
        hi = max(FULL_SIMILARITY, lo + 1e-6)
        kern = np.clip((sims - lo) / (hi - lo), 0.0, 1.0)
        near = np.flatnonzero((kern > 0) & (mem.rowid > 0))
        if not len(near):
            return {}
        today = _day(at or now())
        half = float(settings.learning_half_life_days)
        age = np.clip(today - mem.days[near], 0.0, None)
        decay = np.power(0.5, age / half) if half > 0 else np.ones(len(near))
        votes = kern[near] * decay * mem.sign[near]
        cap = float(settings.learning_client_cap)
        per_client: dict[tuple[int, str], float] = {}
        out: dict[int, Evidence] = {}
        for i, v in zip(near, votes):
            rid = int(mem.rowid[i])
            k = (rid, mem.client[i])
            per_client[k] = per_client.get(k, 0.0) + float(v)
            ev = out.setdefault(rid, Evidence())
            if mem.sign[i] > 0:
                ev.worked += 1
            else:
                ev.failed += 1
            ev.clients.add(mem.client[i])
            if mem.request[i] and mem.request[i] not in ev.requests and len(ev.requests) < 5:
                ev.requests.append(mem.request[i])
        totals: dict[int, float] = {}
        for (rid, _), v in per_client.items():
            totals[rid] = totals.get(rid, 0.0) + max(-cap, min(cap, v))
            if v > 0:
                out[rid].promoters += 1
        for rid, ev in out.items():
            ev.shift = float(settings.learning_weight) * math.tanh(totals[rid] / 2.0)
        return out


def learn(store: Store, *, outcome_id: int, skill_id: str, name: str, worked: bool, client: str | None,
          query_id: int, request: str | None, model_id: str, vector: np.ndarray, at: str | None = None) -> int:
    """Keep one outcome with its request's vector."""
    vec = np.asarray(vector, dtype=np.float32)
    vec = vec / (float(np.linalg.norm(vec)) or 1.0)
    with store.tx() as tx:
        cur = tx.execute("INSERT INTO learned (outcome_id, at, skill_id, name_key, worked, client, query_id, request,"
                         " model_id, vector) VALUES (?,?,?,?,?,?,?,?,?,?)",
                         (outcome_id, at or now(), skill_id, name_key(name), int(bool(worked)), client, query_id,
                          request, model_id, vec.astype("<f4").tobytes()))
        _bump(tx)
    return int(cur.lastrowid)


def _bump(tx) -> None:
    tx.execute("INSERT INTO meta VALUES ('learned_generation', '1') ON CONFLICT(key) DO UPDATE"
               " SET value = CAST(value AS INTEGER) + 1")


def forget(store: Store, *, skill: str | None = None, client: str | None = None, before: str | None = None,
           everything: bool = False) -> int:
    """Delete what was learned: for one skill (all its copies), from one client, before a
    day, or everything. The usage logs (queries, outcomes) are untouched."""
    where, args = [], []
    if skill:
        where.append("name_key = ?")
        args.append(name_key(skill))
    if client is not None:
        where.append("COALESCE(client, '') = ?")
        args.append(client)
    if before:
        try:
            _dt.date.fromisoformat(before[:10])
        except ValueError:
            raise ValidationError(f"{before!r} is not a date", fix="use YYYY-MM-DD") from None
        where.append("at < ?")
        args.append(before)
    if not where and not everything:
        raise ValidationError("say what to forget", fix="pass a skill, --client, --before, or --all")
    with store.tx() as tx:
        n = tx.execute("DELETE FROM learned" + (" WHERE " + " AND ".join(where) if where else ""), args).rowcount
        if n:
            _bump(tx)
            tx.execute("INSERT INTO meta VALUES ('learned_epoch', '1') ON CONFLICT(key) DO UPDATE"
                       " SET value = CAST(value AS INTEGER) + 1")
    return int(n)


def summary(store: Store, skill_name: str) -> dict[str, Any]:
    """What was learned about one skill (all its copies): reports kept, worked / failed,
    clients, the latest requests."""
    rows = store.db.execute("SELECT worked, COALESCE(client, ''), request, at FROM learned WHERE name_key = ?"
                            " ORDER BY id", (name_key(skill_name),)).fetchall()
    return {"reports": len(rows), "worked": sum(1 for r in rows if r[0]),
            "failed": sum(1 for r in rows if not r[0]), "clients": len({r[1] for r in rows}),
            "requests": [r[2] for r in rows if r[2]][-3:], "last": rows[-1][3] if rows else None}


def changes(store: Store, *, since: str | None = None, top: int = 10) -> list[dict[str, Any]]:
    """Skills outcomes promote or demote, for the usage report: each with its worked /
    failed reports, net direction (worked − failed, per client capped as in ranking), and
    the requests behind it."""
    rows = store.db.execute("SELECT name_key, skill_id, worked, COALESCE(client, ''), request FROM learned"
                            " WHERE at >= ? ORDER BY id", (since or "0000",)).fetchall()
    groups: dict[str, dict[str, Any]] = {}
    for key, sid, worked, client, request in rows:
        g = groups.setdefault(key, {"skill_id": sid, "worked": 0, "failed": 0, "clients": {}, "requests": []})
        g["worked" if worked else "failed"] += 1
        g["clients"][client] = g["clients"].get(client, 0) + (1 if worked else -1)
        if request and request not in g["requests"]:
            g["requests"].append(request)
    names = dict(store.db.execute("SELECT id, name FROM skills WHERE id IN (%s)" % ",".join(
        "?" * len({g["skill_id"] for g in groups.values()})), [g["skill_id"] for g in groups.values()]).fetchall()) \
        if groups else {}
    out = []
    for key, g in groups.items():
        net = sum(max(-2, min(2, v)) for v in g["clients"].values())
        out.append({"name": names.get(g["skill_id"], key), "id": g["skill_id"], "worked": g["worked"],
                    "failed": g["failed"], "clients": len(g["clients"]), "net": net,
                    "direction": "promoted" if net > 0 else "demoted" if net < 0 else "mixed",
                    "requests": g["requests"][-3:]})
    out.sort(key=lambda d: (-abs(d["net"]), -(d["worked"] + d["failed"]), d["name"]))
    return out[:top]


class LearningMixin:
    """Library methods about learning from outcomes (the Library inherits them)."""

    def _remember_vector(self, query_id: int | None, vec) -> None:
        if query_id is None or vec is None:
            return
        cache = self.__dict__.setdefault("_request_vectors", {})
        cache[int(query_id)] = vec
        if len(cache) > RECENT_VECTORS:
            for k in list(cache)[: len(cache) - RECENT_VECTORS]:
                cache.pop(k, None)

    def _learn_outcome(self, outcome_id: int, skill_id: str, name: str, worked: bool, query_id: int | None,
                       client: str | None) -> bool:
        """Keep an outcome reported against a logged request for ranking (False when it
        cannot be: no request, or no embedder to place it)."""
        if query_id is None:
            return False
        row = self.store.db.execute("SELECT text FROM queries WHERE id = ?", (query_id,)).fetchone()
        if row is None:
            return False
        embedder, _ = self._embedder_state()
        if embedder is None:
            return False
        vec = self.__dict__.get("_request_vectors", {}).get(int(query_id))
        if vec is None:
            if not row[0]:
                return False        # hash_queries: the text is gone and the vector was not kept
            vec = embedder.embed(row[0])
        learn(self.store, outcome_id=outcome_id, skill_id=skill_id, name=name, worked=worked, client=client,
              query_id=query_id, request=row[0], model_id=embedder.model_id, vector=vec)
        return True

    def learned(self, name_or_id: str) -> dict[str, Any]:
        """What ranking learned about a skill from outcomes (``skillshelf show``)."""
        rec = self.get(name_or_id)
        return summary(self.store, rec.name)

    def forget_learning(self, *, skill: str | None = None, client: str | None = None, before: str | None = None,
                        everything: bool = False) -> int:
        """Undo learning: delete what was learned for a skill, from a client, before a day,
        or everything (``skillshelf usage forget``). Returns the rows deleted."""
        name = self.get(skill).name if skill else None
        return forget(self.store, skill=name, client=client, before=before, everything=everything)
