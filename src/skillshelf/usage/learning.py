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
squashed: shift = weight × tanh(total / 2). The weight says how much the clients agree: it is
``learning_weight`` while one client stands behind the total's direction and rises to
``learning_weight_agreed`` as a second one joins (each client counted up to one fresh report
on a request like this one): one client's reports are a hint, several clients' a verdict.
One client alone moves a hit by at most 0.2 × tanh(0.75) ≈ 0.13 with the defaults, which
lifts it past neighbours of similar retrieval strength but not past a match found by both
retrievers when it was found by one; three clients that agree move it by up to
0.5 × tanh(1.5) ≈ 0.45 (when two agree and one disagrees: 0.5 × tanh(0.5) ≈ 0.23). Without
agreement a single client's "failed" on the right skill would push it below a lesser one,
and the agents after it would then report the lesser one (measured: bench/learning.py).
The shift is added to the hit's relative fused score (the top candidate's is 1.0) before
diversification, so outcomes reorder what retrieval found and never add a candidate; search
bounds a promotion to ``learning_max_lift`` places per client that reported it working
(``Evidence.promoters``; ``demoters`` counts the clients that reported it failing).

Requests unlike every reported one get no vote at all (the kernel is 0), so their ranking
is exactly the plain pipeline's. Every shift is explained (``Hit.why``: "worked for 3
similar requests"), listed in the usage report with the requests behind it, and undone by
``skillshelf usage forget`` (which deletes rows of ``learned``; the usage logs stay).
"""

from __future__ import annotations

import datetime as _dt
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import NotFoundError, ValidationError
from ..store import Store, now
from ..store.learning import LearningMemory
from ..store.protocols import LearningStore
from ..store.skill_refs import SkillRefs
from ..text import name_key

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
    demoters: int = 0                    # clients whose reports, summed, say it failed
    moved: int = 0                       # places it moved in this search (up +, down -), set by search
    room: int = 0                        # places it could have moved that way (0: first or last)

    def why(self) -> str | None:
        """What the outcomes say and what they did to this hit's place ("worked for 3 similar
        requests (up 3 places)"); a move of no places says why there was none."""
        parts = []
        if self.worked:
            parts.append(f"worked for {self.worked} similar request{'s' * (self.worked != 1)}")
        if self.failed:
            parts.append(f"failed for {self.failed} similar request{'s' * (self.failed != 1)}")
        if not parts:
            return None
        if self.moved:
            n = abs(self.moved)
            did = f"{'up' if self.moved > 0 else 'down'} {n} place{'s' * (n != 1)}"
        elif self.shift:
            did = "kept its place: " + (("already first" if self.shift > 0 else "already last") if not self.room
                                        else "too little evidence to pass a hit")
        else:
            did = "the reports cancel out"
        return f"{', '.join(parts)} ({did})"


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
    """The outcome memory, cached between searches (reloaded when a report is learned or
    forgotten, or the skill rows change). ``memory``: the reports (``LearningMemory``);
    ``rows``: name keys -> the row number of a skill with that name (one copy standing for
    all); ``generation``: the skill index's generation (row numbers change with it). Given a
    store only, all three come from it."""

    def __init__(self, store: Store | None = None, *, memory: LearningStore | None = None,
                 rows: Callable[[list[str]], dict[str, int]] | None = None,
                 generation: Callable[[], str] | None = None):
        self.memory: LearningStore
        if store is None:   # without a store, all three are given
            assert memory is not None and rows is not None and generation is not None
            self.memory, self._rows, self._generation = memory, rows, generation
        else:
            refs = SkillRefs(store)
            self.memory = memory or LearningMemory(store)
            self._rows = rows or refs.first_rows
            self._generation = generation or refs.generation
        self._mem: _Memory | None = None
        self._lock = threading.Lock()

    def _load(self, model_id: str) -> _Memory | None:
        gen, epoch = self.memory.state()
        # a forget or a change of skills (rowids) re-reads everything; a new report is appended
        base = (epoch, self._generation(), model_id)
        key = (gen, *base)
        with self._lock:
            mem = self._mem
            if mem is not None and mem.key == key:
                return mem
            if mem is None or mem.key[1:] != base:
                mem = _Memory(key, np.zeros((0, 0), np.float32), np.zeros(0, np.int64), np.zeros(0), np.zeros(0),
                              [], [])
            rows = self.memory.reports_after(model_id, mem.last_id)
            if rows:
                vecs = np.vstack([np.frombuffer(r["vector"], dtype="<f4") for r in rows]).astype(np.float32)
                if len(mem.rowid) and vecs.shape[1] != mem.vectors.shape[1]:
                    # another dimension under the same model id: not comparable
                    mem.last_id = rows[-1]["id"]
                else:
                    at_row = self._rows([r["name_key"] for r in rows])
                    mem = _Memory(key, vecs if not len(mem.rowid) else np.vstack([mem.vectors, vecs]),
                                  np.concatenate([mem.rowid, np.asarray([at_row.get(r["name_key"], 0) for r in rows],
                                                                        dtype=np.int64)]),
                                  np.concatenate([mem.sign, [1.0 if r["worked"] else -1.0 for r in rows]]),
                                  np.concatenate([mem.days, [_day(r["at"]) for r in rows]]),
                                  mem.client + [r["client"] for r in rows], mem.request + [r["request"] for r in rows],
                                  rows[-1]["id"])
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
            req = mem.request[i]
            if req and req not in ev.requests and len(ev.requests) < 5:
                ev.requests.append(req)
        totals: dict[int, float] = {}
        capped: dict[int, list[float]] = {}
        for (rid, _), v in per_client.items():
            v = max(-cap, min(cap, v))
            totals[rid] = totals.get(rid, 0.0) + v
            capped.setdefault(rid, []).append(v)
            if v > 0:
                out[rid].promoters += 1
            elif v < 0:
                out[rid].demoters += 1
        one = float(settings.learning_weight)
        agreed = max(one, float(settings.learning_weight_agreed))
        for rid, ev in out.items():
            net = totals[rid]
            # how many clients stand behind the net direction, each counted up to one fresh
            # report on a request like this one: the weight rises from one client's to the
            # agreed weight as a second client joins
            behind = sum(min(1.0, abs(v)) for v in capped[rid] if v * net > 0)
            weight = one + (agreed - one) * min(1.0, max(0.0, behind - 1.0))
            ev.shift = weight * math.tanh(net / 2.0)
        return out


def changes_of(memory: LearningStore, names: Callable[[list[str]], dict[str, str]], *, since: str | None = None,
               top: int = 10) -> list[dict[str, Any]]:
    """Skills outcomes promote or demote, for the usage report: each with its worked /
    failed reports, net direction (worked − failed, per client capped as in ranking), and
    the requests behind it. ``names``: skill ids -> their names (ids no longer indexed are
    shown by name key)."""
    groups: dict[str, dict[str, Any]] = {}
    for r in memory.since(since or "0000"):
        g = groups.setdefault(r["name_key"], {"skill_id": r["skill_id"], "worked": 0, "failed": 0, "clients": {},
                                              "requests": []})
        g["worked" if r["worked"] else "failed"] += 1
        g["clients"][r["client"]] = g["clients"].get(r["client"], 0) + (1 if r["worked"] else -1)
        if r["request"] and r["request"] not in g["requests"]:
            g["requests"].append(r["request"])
    known = names([g["skill_id"] for g in groups.values()]) if groups else {}
    out = []
    for key, g in groups.items():
        net = sum(max(-2, min(2, v)) for v in g["clients"].values())
        out.append({"name": known.get(g["skill_id"], key), "id": g["skill_id"], "worked": g["worked"],
                    "failed": g["failed"], "clients": len(g["clients"]), "net": net,
                    "direction": "promoted" if net > 0 else "demoted" if net < 0 else "mixed",
                    "requests": g["requests"][-3:]})
    out.sort(key=lambda d: (-abs(d["net"]), -(d["worked"] + d["failed"]), d["name"]))
    return out[:top]


class Learning:
    """The learning service: keeps reported outcomes with their requests' vectors (so ranking
    can learn from them), says what was learned, and forgets on request.

    ``memory``: the reports (``store.learning.LearningMemory``); ``query``: a logged query id
    -> ``{"text": ...}`` or None (``usage.Usage.query``); ``embedder``: () -> (embedder or
    None, reason); ``resolve``: a skill name or id -> its record (``.name``), raising
    ``NotFoundError``; ``names``: skill ids -> names (the report's learning section)."""

    def __init__(self, memory: LearningStore, *, query: Callable[[int], dict[str, Any] | None],
                 embedder: Callable[[], tuple[Any, str | None]], resolve: Callable[[str], Any],
                 names: Callable[[list[str]], dict[str, str]]):
        self.memory = memory
        self._query = query
        self._embedder = embedder
        self._resolve = resolve
        self._names = names
        # the request vectors of recent searches, by query id: a report on one is learned
        # without embedding the request again (and works with hash_queries)
        self.request_vectors: dict[int, Any] = {}
        self._vectors_lock = threading.Lock()

    def remember_vector(self, query_id: int | None, vec) -> None:
        """Keep a logged search's request vector for a report on it (the last ``RECENT_VECTORS``)."""
        if query_id is None or vec is None:
            return
        with self._vectors_lock:
            cache = self.request_vectors
            cache[int(query_id)] = vec
            if len(cache) > RECENT_VECTORS:
                for k in list(cache)[: len(cache) - RECENT_VECTORS]:
                    cache.pop(k, None)

    def learn_outcome(self, outcome_id: int, skill_id: str, name: str, worked: bool, query_id: int | None,
                      client: str | None) -> bool:
        """Keep an outcome reported against a logged request for ranking (False when it
        cannot be: no request, or no embedder to place it)."""
        if query_id is None:
            return False
        q = self._query(query_id)
        if q is None:
            return False
        embedder, _ = self._embedder()
        if embedder is None:
            return False
        vec = self.request_vectors.get(int(query_id))
        if vec is None:
            if not q["text"]:
                return False        # hash_queries: the text is gone and the vector was not kept
            vec = embedder.embed(q["text"])
        learn_into(self.memory, outcome_id=outcome_id, skill_id=skill_id, name=name, worked=worked, client=client,
                   query_id=query_id, request=q["text"], model_id=embedder.model_id, vector=vec)
        return True

    def learned(self, name_or_id: str) -> dict[str, Any]:
        """What ranking learned about a skill (all its copies) from outcomes: reports kept,
        worked / failed, clients, the latest requests (``skillshelf show``)."""
        return summary_of(self.memory, self._resolve(name_or_id).name)

    def forget(self, *, skill: str | None = None, client: str | None = None, before: str | None = None,
               everything: bool = False) -> int:
        """Undo learning: delete what was learned for a skill (all its copies), from a client,
        before a day, or everything (``skillshelf usage forget``). The usage logs are
        untouched. Returns the rows deleted."""
        name = self._resolve(skill).name if skill else None
        return forget_in(self.memory, skill=name, client=client, before=before, everything=everything)

    def changes(self, since: str | None = None, top: int = 10) -> list[dict[str, Any]]:
        """What learning changed, for the usage report (``changes_of``)."""
        return changes_of(self.memory, self._names, since=since, top=top)


def learn_into(memory: LearningStore, *, outcome_id: int, skill_id: str, name: str, worked: bool,
               client: str | None, query_id: int, request: str | None, model_id: str, vector: np.ndarray,
               at: str | None = None) -> int:
    """Keep one outcome with its request's vector (normalised)."""
    vec = np.asarray(vector, dtype=np.float32)
    vec = vec / (float(np.linalg.norm(vec)) or 1.0)
    return memory.add(outcome_id=outcome_id, at=at or now(), skill_id=skill_id, name_key=name_key(name),
                      worked=worked, client=client, query_id=query_id, request=request, model_id=model_id,
                      vector=vec.astype("<f4").tobytes())


def forget_in(memory: LearningStore, *, skill: str | None = None, client: str | None = None,
              before: str | None = None, everything: bool = False) -> int:
    """Delete what was learned: for one skill name (all its copies), from one client, before
    a day, or everything."""
    if before:
        try:
            _dt.date.fromisoformat(before[:10])
        except ValueError:
            raise ValidationError(f"{before!r} is not a date", fix="use YYYY-MM-DD") from None
    if not skill and client is None and not before and not everything:
        raise ValidationError("say what to forget", fix="pass a skill, --client, --before, or --all")
    if client:
        # a client that taught nothing is a mistyped name more often than a forget that found nothing
        known = sorted({r["client"] for r in memory.since("") if r["client"]})
        if client not in known:
            raise NotFoundError(f"no client {client!r} has reported outcomes learned from",
                                fix=("clients that have: " + ", ".join(known)) if known
                                else "nothing has been learned from any client yet")
    return memory.forget(name_key=name_key(skill) if skill else None, client=client, before=before or None)


def summary_of(memory: LearningStore, skill_name: str) -> dict[str, Any]:
    """What was learned about one skill name (all its copies)."""
    rows = memory.for_skill(name_key(skill_name))
    return {"reports": len(rows), "worked": sum(1 for r in rows if r["worked"]),
            "failed": sum(1 for r in rows if not r["worked"]), "clients": len({r["client"] for r in rows}),
            "requests": [r["request"] for r in rows if r["request"]][-3:], "last": rows[-1]["at"] if rows else None}
